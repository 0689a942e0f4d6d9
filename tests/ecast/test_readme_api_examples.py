"""The README's API examples, run against demo-like data: each GET example URL answers 200 with current rows (a
paraphrase list returned only superseded rows when some of a turn's paraphrases had been edited)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ecast import services
from ecast.models import Paraphrase
from tests import factories

pytestmark = pytest.mark.django_db

README = Path(__file__).resolve().parents[2] / "README.md"
CURL_GET = re.compile(r'curl [^\n]*?"http://127\.0\.0\.1:8000(/api/[^"]+)"')


def _example_urls() -> list[str]:
    urls = [u for u in CURL_GET.findall(README.read_text(encoding="utf-8")) if not u.startswith("/api/token/")]
    assert urls, "the README has no API example"
    return urls


@pytest.fixture
def demo_like(admin_user):
    """Topic 81 as in the demo: 81_2 with candidate manual/raw pairs, two of whose rows were edited and approved
    (their superseded rows keep the status candidate)."""
    coll = factories.collection(name="CAsT 2020 demo", year=2020, threshold=2)
    conv = factories.conversation(coll, "81")
    factories.turn(conv, 1, "How do you know when your garage door opener is going bad?")
    turn = factories.turn(conv, 2, "Now it stopped working. Why?", "Now my garage door opener stopped working. Why?")
    rows = []
    for text in ("Why did my garage door opener stop working?", "What made my garage door opener stop working?"):
        manual = factories.paraphrase(turn, text, kind="manual")
        raw = factories.paraphrase(turn, text.replace("my garage door opener", "it"), kind="raw")
        manual.pair, raw.pair = raw, manual
        manual.save(), raw.save()
        rows += [manual, raw]
    for row in rows[:2]:
        services.paraphrase_edit(paraphrase=row, text=row.text + " Please.", user=admin_user, status="approved")
    return turn


@pytest.mark.parametrize("url", _example_urls())
def test_each_readme_api_example_returns_current_rows(admin_api, demo_like, url):
    response = admin_api.get(url)
    assert response.status_code == 200, response.content
    rows = response.json()["results"]
    assert rows and all(r["is_current"] for r in rows), rows


def test_the_paraphrase_list_gives_current_rows_by_default_and_the_history_on_request(admin_api, demo_like):
    def ids(**params) -> set[int]:
        response = admin_api.get("/api/paraphrases/", {"turn_id": "81_2", **params})
        assert response.status_code == 200, response.content
        return {r["id"] for r in response.json()["results"]}

    rows = Paraphrase.objects.filter(turn=demo_like)
    current = set(rows.filter(is_current=True).values_list("id", flat=True))
    superseded = set(rows.filter(is_current=False).values_list("id", flat=True))
    assert len(current) == 4 and len(superseded) == 2
    assert ids() == current and ids(history=1) == ids(history="true") == current | superseded
    assert ids(is_current="false") == ids(is_current=0) == superseded and ids(is_current="true") == current
    assert ids(status="candidate") == set(rows.filter(is_current=True, status="candidate").values_list("id", flat=True))
    assert ids(status="candidate", history=1) == set(rows.filter(status="candidate").values_list("id", flat=True))
