"""In headless Chromium an assessor judges an MM-NS pool: the passages come in the bandit's order and the admin's
pool page shows relevant found against judgments growing."""

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec

from judging.relevance import pools
from tests import factories
from tests.conftest import ARTIFACTS, browser_login, page_wait
from tests.judging.relevance import helpers


def _pool_figures(browser, live_server, pool_pk: int) -> tuple[str, str]:
    browser.delete_all_cookies()
    browser_login(browser, live_server, "admin1", "pass-admin1")
    browser.get(f"{live_server.url}/judging/relevance/admin/pools/{pool_pk}/")
    return browser.find_element(By.ID, "found-now").text, browser.find_element(By.ID, "judgments-now").text


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_an_assessor_judges_an_mm_ns_pool_and_the_pool_curve_grows(browser, live_server, assessor, admin_user):
    coll = factories.collection_with_turns(
        name="Bandit", year=2020, conversations={"81": ["How do garage door openers work?"]}
    )
    helpers.passages({f"p{i}": f"Passage number {i} about garage door openers." for i in range(1, 6)})
    original = helpers.qrels(coll, {"81_1": {"p0": 2}})
    run_a = helpers.run(coll, "A", {"81_1": ["p1", "p2", "p3"]})
    run_b = helpers.run(coll, "B", {"81_1": ["p4", "p5", "p1"]})
    pool = pools.pool_create(
        collection=coll, qrels_version=original, runs=[run_a, run_b], name="Bandit pool", strategy="mm_ns"
    )

    browser_login(browser, live_server, "admin1", "pass-admin1")
    browser.get(f"{live_server.url}/judging/relevance/admin/pools/{pool.pk}/")
    assert "No judgments yet" in browser.find_element(By.ID, "found-curve").text

    browser.delete_all_cookies()
    browser_login(browser, live_server, "assessor1", "pass-assessor1")
    browser.get(live_server.url + "/judging/relevance/")
    browser.find_element(By.XPATH, "//button[normalize-space()='Take a topic']").click()
    wait = page_wait(browser)
    # MM-NS, γ = 0.9: A and B tie at 1/2 → A (by name): p1.
    wait.until(ec.text_to_be_present_in_element((By.ID, "pair-id"), "p1"))
    judge_url = browser.current_url  # read once the click's navigation has landed on the judging page
    body = browser.find_element(By.TAG_NAME, "body")
    body.send_keys("3")  # p1 relevant: A and B (both ranked p1) go to 2/3; tie → A: p2
    wait.until(ec.text_to_be_present_in_element((By.ID, "pair-id"), "p2"))
    body.send_keys("0")  # p2 not: A (1 + 0.9) / (2 + 0.9 + 1) = 0.487 < B 2/3 → B's top unjudged: p4
    wait.until(ec.text_to_be_present_in_element((By.ID, "pair-id"), "p4"))
    wait.until(ec.text_to_be_present_in_element((By.ID, "save-state"), "all saved"))
    browser.save_screenshot(str(ARTIFACTS / "assessor-mm-ns.png"))

    assert _pool_figures(browser, live_server, pool.pk) == ("1", "2")

    browser.delete_all_cookies()
    browser_login(browser, live_server, "assessor1", "pass-assessor1")
    browser.get(judge_url)
    wait.until(ec.text_to_be_present_in_element((By.ID, "pair-id"), "p4"))
    browser.find_element(By.TAG_NAME, "body").send_keys("2")  # p4 relevant: B (1 + 1.9) / 3.9 = 0.744 → B: p5
    wait.until(ec.text_to_be_present_in_element((By.ID, "pair-id"), "p5"))
    wait.until(ec.text_to_be_present_in_element((By.ID, "save-state"), "all saved"))

    assert _pool_figures(browser, live_server, pool.pk) == ("2", "3")
    rows = browser.find_elements(By.CSS_SELECTOR, "#found-curve tbody tr")
    assert [r.text for r in rows] == ["0 0", "1 1", "2 1", "3 2"]
    browser.save_screenshot(str(ARTIFACTS / "pool-found-curve.png"))
