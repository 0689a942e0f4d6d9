"""In headless Chromium an admin starts an adjudication from the agreement report and settles it with the keys."""

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec

from judging.models import AdjudicationItem
from tests import factories
from tests.conftest import ARTIFACTS, browser_login, page_wait
from tests.judging.relevance.adjudication_helpers import two_assessments


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_an_adjudicator_sets_final_grades_with_the_keyboard_and_sees_the_progress(browser, live_server, admin_user):
    coll = factories.collection_with_turns(
        name="Mini",
        year=2020,
        conversations={"1": ["What is throat cancer?", "What causes it?"], "2": ["Tell me about bees.", "Why?"]},
    )
    a, b = two_assessments(coll)
    browser_login(browser, live_server, "admin1", "pass-admin1")
    browser.get(f"{live_server.url}/evaluation/agreement/?a={a.pk}&b={b.pk}")
    browser.save_screenshot(str(ARTIFACTS / "agreement-adjudicate-button.png"))
    browser.find_element(By.XPATH, "//button[normalize-space()='Adjudicate the 2 disagreements']").click()
    wait = page_wait(browser)
    wait.until(ec.text_to_be_present_in_element((By.ID, "progress-text"), "0 of 2 adjudicated"))
    body = browser.find_element(By.TAG_NAME, "body")
    assert "Throat cancer is treatable" in browser.find_element(By.ID, "passage").text
    assert browser.find_element(By.ID, "label-a").text.startswith("3")
    assert browser.find_element(By.ID, "label-b").text.startswith("1")
    assert "What is throat cancer?" in browser.find_element(By.ID, "reference").text
    browser.save_screenshot(str(ARTIFACTS / "adjudicate.png"))

    body.send_keys("b")  # d2 takes B's 1; on to f1
    wait.until(ec.text_to_be_present_in_element((By.ID, "progress-text"), "1 of 2 adjudicated"))
    assert "What causes it?" in browser.find_element(By.ID, "conversation").text
    body.send_keys("u")  # undo: back to d2, nothing decided
    wait.until(ec.text_to_be_present_in_element((By.ID, "progress-text"), "0 of 2 adjudicated"))
    assert "Throat cancer is treatable" in browser.find_element(By.ID, "passage").text
    body.send_keys("2")  # d2 → 2
    wait.until(ec.text_to_be_present_in_element((By.ID, "progress-text"), "1 of 2 adjudicated"))
    body.send_keys("a")  # f1 takes A's 0
    wait.until(ec.text_to_be_present_in_element((By.ID, "progress-text"), "2 of 2 adjudicated"))
    wait.until(ec.text_to_be_present_in_element((By.ID, "save-state"), "all saved"))
    assert "All 2 disagreements adjudicated" in browser.find_element(By.ID, "done").text
    links = [x.text for x in browser.find_elements(By.CSS_SELECTOR, "#all-done a")]
    assert links == ["agreement report", "its leaderboard"]
    browser.set_window_size(1280, 1400)
    browser.save_screenshot(str(ARTIFACTS / "adjudicate-done.png"))

    assert dict(AdjudicationItem.objects.values_list("passage_id", "grade")) == {"d2": 2, "f1": 0}
