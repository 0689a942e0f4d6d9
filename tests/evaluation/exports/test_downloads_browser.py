"""In headless Chromium every leaderboard row offers its run's downloads, also after the table updated itself live."""

from __future__ import annotations

import pytest
from django.db import transaction
from selenium.webdriver.common.by import By

from evaluation import events, services
from evaluation.models import Qrel
from tests.conftest import ARTIFACTS, browser_login, page_wait
from tests.evaluation.helpers import build


def _row(browser, run_id: int):
    return browser.find_element(By.CSS_SELECTOR, f"#lb-table tr[data-run='{run_id}']")


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_leaderboard_rows_keep_their_download_links_when_the_table_updates_live(browser, live_server, admin_user):
    coll, version, runs = build()
    services.scores_compute_for_version(version=version)
    browser_login(browser, live_server, "admin1", "pass-admin1")
    browser.get(f"{live_server.url}/evaluation/?version={version.pk}")
    weak = runs["weak"].pk
    assert _row(browser, weak).find_elements(By.TAG_NAME, "td")[-1].text == "TREC · CSV · ranx JSON"
    before = _row(browser, weak).find_elements(By.TAG_NAME, "td")[4].text
    page_wait(browser).until(lambda d: "as soon as they are computed" in d.find_element(By.ID, "lb-live").text)

    turn = coll.turns.get(turn_id="1_1")
    with transaction.atomic():
        Qrel.objects.create(version=version, turn=turn, passage_id="x1", grade=4, source="assessed")
        events.qrels_changed(version_id=version.pk, turn_ids=[turn.pk])
    page_wait(browser).until(lambda d: _row(d, weak).find_elements(By.TAG_NAME, "td")[4].text != before)

    cell = _row(browser, weak).find_elements(By.TAG_NAME, "td")[-1]
    assert cell.text == "TREC · CSV · ranx JSON"
    ranx = cell.find_element(By.LINK_TEXT, "ranx JSON").get_attribute("href")
    data = browser.execute_async_script(
        "const done = arguments[1]; fetch(arguments[0]).then(r => r.json()).then(done);", ranx
    )
    assert data == {
        "1_1": {"x1": 3.0, "d2": 2.0, "d1": 1.0},
        "1_2": {"x2": 3.0, "d5": 2.0, "d4": 1.0},
        "2_2": {"d8": 1.0},
    }
    assert "Per-query scores" in browser.find_element(By.ID, "lb-downloads").text
    browser.execute_script("document.getElementById('lb-table').scrollIntoView();")
    browser.save_screenshot(str(ARTIFACTS / "evaluation-leaderboard-downloads.png"))
