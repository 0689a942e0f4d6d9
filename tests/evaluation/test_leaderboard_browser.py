"""In headless Chromium the leaderboard picks up a new judgment's score without a page reload."""

from __future__ import annotations

import pytest
from django.db import transaction
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from evaluation import events, services
from evaluation.models import Qrel
from tests.conftest import ARTIFACTS, browser_login
from tests.evaluation.eval_helpers import build


def _cell(browser, run_id: int) -> str:
    row = browser.find_element(By.CSS_SELECTOR, f"#lb-table tr[data-run='{run_id}']")
    return row.find_elements(By.TAG_NAME, "td")[4].text  # first measure column = nDCG@3


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_leaderboard_updates_live_when_a_judgment_arrives(browser, live_server, admin_user):
    coll, version, runs = build()
    services.scores_compute_for_version(version=version)
    browser_login(browser, live_server, "admin1", "pass-admin1")
    browser.get(f"{live_server.url}/evaluation/?version={version.pk}")
    weak = runs["weak"].pk
    before = _cell(browser, weak)
    browser.execute_script("window.__noReload = 'still here';")

    # The weak run's rank-1 document for 1_1 ("x1") becomes highly relevant.
    turn = coll.turns.get(turn_id="1_1")
    with transaction.atomic():
        Qrel.objects.create(version=version, turn=turn, passage_id="x1", grade=4, source="assessed")
        events.qrels_changed(version_id=version.pk, turn_ids=[turn.pk])

    WebDriverWait(browser, 15).until(lambda d: _cell(d, weak) != before)
    assert browser.execute_script("return window.__noReload;") == "still here"
    assert float(_cell(browser, weak)) > float(before)
    assert "<svg" in browser.find_element(By.ID, "lb-plot").get_attribute("innerHTML")
    browser.save_screenshot(str(ARTIFACTS / "evaluation-leaderboard.png"))
