"""In headless Chromium an admin sees a new pool's text coverage while choosing its runs, depth and turns."""

import os
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from judging.models import Pool
from tests import factories
from tests.conftest import ARTIFACTS, browser_login
from tests.judging.relevance import helpers

SHOTS = Path(os.environ.get("ECAST_SCREENSHOTS", ARTIFACTS))


def _shot(browser, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    browser.set_window_size(1280, browser.execute_script("return document.body.scrollHeight") + 120)
    browser.save_screenshot(str(SHOTS / name))


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_pool_form_shows_text_coverage_as_runs_and_depth_change(browser, live_server, admin_user):
    coll = factories.collection_with_turns(
        name="Coverage", year=2020, conversations={"1": ["What is throat cancer?", "Is it treatable?"], "2": ["Bees?"]}
    )
    helpers.qrels(coll, {"1_1": {"d1": 2}, "2_1": {"e1": 0}})
    run_a = helpers.run(
        coll, "A", {"1_1": ["d1", "d2", "d3", "d9"], "1_2": ["f1", "f2", "f3"], "2_1": ["e1", "e2", "e3"]}
    )
    run_b = helpers.run(coll, "B", {"1_1": ["d2", "d4", "d1"], "1_2": ["f1", "f5", "f6"], "2_1": ["e4", "e1", "e2"]})
    helpers.passages({pid: f"Text of passage {pid}." for pid in ("d2", "d9", "f1", "f5", "e1", "e3")})

    browser_login(browser, live_server, "admin1", "pass-admin1")
    browser.get(f"{live_server.url}/judging/relevance/admin/?collection={coll.pk}")
    wait = WebDriverWait(browser, 10)
    summary = (By.ID, "coverage-summary")
    assert "Choose runs" in browser.find_element(*summary).text
    text_only = browser.find_element(By.ID, "id_text_only")
    assert text_only.is_selected()  # some passage has text: on by default

    for run in (run_a, run_b):
        browser.find_element(By.CSS_SELECTOR, f"input[name=runs][value='{run.pk}']").click()
    wait.until(ec.text_to_be_present_in_element(summary, "4 of 11 passages have text"))
    assert "11 unjudged (turn, passage) pairs in 3 turns" in browser.find_element(*summary).text
    only = browser.find_element(By.ID, "coverage-text-only").text
    assert "5 pairs in 3 turns" in only and "reaches rank 4" in only
    assert (
        "original + Coverage depth-3 pool of 2 run(s)" in browser.find_element(By.ID, "id_feed_version_helptext").text
    )
    _shot(browser, "pool-form-coverage.png")

    depth = browser.find_element(By.ID, "id_depth")
    depth.clear()
    depth.send_keys("1")
    wait.until(ec.text_to_be_present_in_element(summary, "of 3 passages have text"))  # d2 f1 e4, after the debounce
    browser.find_element(By.ID, "id_turn_ids").send_keys("1_2")
    wait.until(ec.text_to_be_present_in_element(summary, "1 of 1 passage has text"))  # f1
    browser.find_element(By.ID, "id_name").send_keys("Readable pool")
    assert "original + Readable pool" in browser.find_element(By.ID, "id_feed_version_helptext").text
    _shot(browser, "pool-form-coverage-turn.png")

    browser.find_element(By.XPATH, "//button[normalize-space()='Create pool']").click()
    wait.until(ec.presence_of_element_located((By.ID, "texts")))
    pool = Pool.objects.get(name="Readable pool")
    assert pool.text_only and pool.target_version.name == "original + Readable pool"
    assert "1 of 1" in browser.find_element(By.ID, "texts").text
    _shot(browser, "pool-page-texts.png")


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_collection_without_qrels_is_pooled_from_the_form_into_a_judged_here_version(
    browser, live_server, admin_user
):
    coll = factories.collection_with_turns(name="Fresh 2022", year=2022, conversations={"1": ["Bees?", "Wasps?"]})
    run = helpers.run(coll, "A", {"1_1": ["d1", "d2", "d3", "d4"], "1_2": ["f1", "f2"]})

    browser_login(browser, live_server, "admin1", "pass-admin1")
    browser.get(f"{live_server.url}/judging/relevance/admin/?collection={coll.pk}")
    wait = WebDriverWait(browser, 10)
    assert "Fresh 2022 has no qrels version yet" in browser.find_element(By.ID, "empty-base").text
    summary = (By.ID, "coverage-summary")
    browser.find_element(By.CSS_SELECTOR, f"input[name=runs][value='{run.pk}']").click()
    wait.until(ec.text_to_be_present_in_element(summary, "5 unjudged (turn, passage) pairs in 2 turns"))
    assert "0 top-3 pairs already judged" in browser.find_element(*summary).text
    browser.find_element(By.ID, "id_name").send_keys("First look")
    assert "judged here + First look" in browser.find_element(By.ID, "id_feed_version_helptext").text
    _shot(browser, "pool-form-without-qrels.png")

    browser.find_element(By.XPATH, "//button[normalize-space()='Create pool']").click()
    wait.until(ec.text_to_be_present_in_element((By.TAG_NAME, "h1"), "First look"))
    pool = Pool.objects.get(name="First look")
    assert pool.qrels_version.name == "judged here" and pool.target_version.name == "judged here + First look"
    _shot(browser, "pool-page-without-qrels.png")
