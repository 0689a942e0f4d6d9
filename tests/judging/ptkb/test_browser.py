"""In headless Chromium an assessor marks which PTKB statements matter for each turn with the keyboard only."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from evaluation.models import Qrel
from judging.models import AssessorJudgment
from judging.ptkb import services
from tests.conftest import ARTIFACTS, browser_login
from tests.ecast.imports.conftest import ok
from tests.judging.ptkb.conftest import TURNS


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_an_assessor_marks_statements_by_keyboard_and_the_counts_change(
    browser, live_server, assessor, admin_user, shared_data
):
    coll = ok("ikat_topics", shared_data / "ikat/2023/2023_train_topics.json").collection
    task = services.ptkb_task_create(collection=coll, turn_ids=TURNS, name="PTKB of topic 1-1")

    browser.set_window_size(1366, 900)
    browser_login(browser, live_server, "assessor1", "pass-assessor1")
    browser.get(live_server.url + "/judging/relevance/")
    assert "PTKB statements" in browser.find_element(By.TAG_NAME, "body").text
    browser.find_element(By.XPATH, "//button[normalize-space()='Take a topic']").click()
    wait = WebDriverWait(browser, 10)
    wait.until(ec.text_to_be_present_in_element((By.ID, "turn-pos"), "1 of 3"))
    assert (
        browser.current_url.endswith("/judging/ptkb/assignments/1/")
        or "/judging/ptkb/assignments/" in browser.current_url
    )
    assert browser.find_element(By.ID, "turn-id").text == "1-1_1"
    assert browser.find_element(By.ID, "utterance").text.startswith("I want to start my master's degree")
    statements = browser.find_elements(By.CSS_SELECTOR, "#statements li")
    assert len(statements) == 11 and "I have a bachelor's degree in computer science." in statements[4].text
    count = browser.find_element(By.ID, "marked-count")
    assert count.text == "0" and browser.find_element(By.ID, "progress-text").text == "0 / 3"

    body = browser.find_element(By.TAG_NAME, "body")
    body.send_keys("5")  # no statement 50+: toggled at once
    wait.until(ec.text_to_be_present_in_element((By.ID, "marked-count"), "1"))
    body.send_keys("2")
    wait.until(ec.text_to_be_present_in_element((By.ID, "marked-count"), "2"))
    assert [li.get_attribute("data-number") for li in statements if "on" in li.get_attribute("class").split()] == [
        "2",
        "5",
    ]
    body.send_keys("2")  # toggled off again
    wait.until(ec.text_to_be_present_in_element((By.ID, "marked-count"), "1"))
    body.send_keys("2")
    wait.until(ec.text_to_be_present_in_element((By.ID, "marked-count"), "2"))
    browser.save_screenshot(str(ARTIFACTS / "ptkb_marks.png"))
    body.send_keys(Keys.ENTER)
    wait.until(ec.text_to_be_present_in_element((By.ID, "turn-pos"), "2 of 3"))
    wait.until(ec.text_to_be_present_in_element((By.ID, "progress-text"), "1 / 3"))
    assert browser.find_element(By.ID, "marked-count").text == "0"
    assert "I want to start my master's degree" in browser.find_element(By.ID, "conversation").text

    body.send_keys("1", "1")  # two digits in a row: statement 11
    wait.until(ec.text_to_be_present_in_element((By.ID, "marked-count"), "1"))
    assert "on" in statements[10].get_attribute("class").split()
    body.send_keys(Keys.ENTER)
    wait.until(ec.text_to_be_present_in_element((By.ID, "progress-text"), "2 / 3"))
    body.send_keys(Keys.BACKSPACE)  # undo: back to turn 2, its marks shown
    wait.until(ec.text_to_be_present_in_element((By.ID, "turn-pos"), "2 of 3"))
    assert browser.find_element(By.ID, "marked-count").text == "1"
    body.send_keys("1", "1", "3")  # statement 11 off, 3 on
    wait.until(lambda d: "on" in statements[2].get_attribute("class").split())
    body.send_keys(Keys.ENTER)
    wait.until(ec.text_to_be_present_in_element((By.ID, "turn-pos"), "3 of 3"))
    body.send_keys(Keys.ENTER)  # nothing matters for turn 3
    wait.until(ec.text_to_be_present_in_element((By.ID, "progress-text"), "3 / 3"))
    wait.until(ec.text_to_be_present_in_element((By.ID, "save-state"), "all saved"))
    assert browser.find_element(By.ID, "done").is_displayed()
    # … and in view, not under the fold below the last item
    top, bottom, height = browser.execute_script(
        "const r = document.getElementById('done').getBoundingClientRect(); return [r.top, r.bottom, innerHeight];"
    )
    assert 0 <= top and bottom <= height + 1, (top, bottom, height)  # a subpixel past the edge is in view
    browser.save_screenshot(str(ARTIFACTS / "ptkb_done.png"))

    relevant = sorted(AssessorJudgment.objects.filter(grade=1).values_list("pair__turn__turn_id", "pair__passage_id"))
    assert relevant == [("1-1_1", "2"), ("1-1_1", "5"), ("1-1_2", "3")]
    assert AssessorJudgment.objects.count() == 33
    assert Qrel.objects.filter(version=task.target_version, grade=1).count() == 3

    # The admin's task page shows the same progress.
    browser.delete_all_cookies()
    browser_login(browser, live_server, "admin1", "pass-admin1")
    browser.get(f"{live_server.url}/judging/ptkb/admin/tasks/{task.pk}/")
    assert browser.find_element(By.ID, "turns-done").text == "3 / 3"
    assert browser.find_element(By.ID, "relevant").text == "3 of 33 judgments"
    browser.save_screenshot(str(ARTIFACTS / "ptkb_task.png"))


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_turn_resubmitted_while_the_network_is_down_is_saved_once_with_its_last_marks(
    browser, live_server, assessor, shared_data
):
    coll = ok("ikat_topics", shared_data / "ikat/2023/2023_train_topics.json").collection
    services.ptkb_task_create(collection=coll, turn_ids=TURNS, name="PTKB offline")
    browser.set_window_size(1366, 900)
    browser_login(browser, live_server, "assessor1", "pass-assessor1")
    browser.get(live_server.url + "/judging/relevance/")
    browser.find_element(By.XPATH, "//button[normalize-space()='Take a topic']").click()
    wait = WebDriverWait(browser, 20)
    wait.until(ec.text_to_be_present_in_element((By.ID, "turn-pos"), "1 of 3"))
    browser.execute_script(
        "window.offline = true; const real = window.fetch;"
        "window.fetch = (...a) => window.offline ? Promise.reject(new TypeError('offline')) : real(...a);"
    )
    body = browser.find_element(By.TAG_NAME, "body")
    body.send_keys("5")
    wait.until(ec.text_to_be_present_in_element((By.ID, "marked-count"), "1"))
    body.send_keys(Keys.ENTER)  # turn 1 with statement 5: its send fails and waits for a retry
    wait.until(ec.text_to_be_present_in_element((By.ID, "turn-pos"), "2 of 3"))
    body.send_keys(Keys.BACKSPACE)
    wait.until(ec.text_to_be_present_in_element((By.ID, "turn-pos"), "1 of 3"))
    body.send_keys("2")
    wait.until(ec.text_to_be_present_in_element((By.ID, "marked-count"), "2"))
    body.send_keys(Keys.ENTER)  # turn 1 again, now 2 and 5: replaces the waiting submit
    wait.until(ec.text_to_be_present_in_element((By.ID, "save-state"), "1 unsaved"))
    assert "retrying" in browser.find_element(By.ID, "message").text
    assert not AssessorJudgment.objects.exists()
    browser.execute_script("window.offline = false;")
    wait.until(ec.text_to_be_present_in_element((By.ID, "save-state"), "all saved"))
    relevant = sorted(AssessorJudgment.objects.filter(grade=1).values_list("pair__turn__turn_id", "pair__passage_id"))
    assert relevant == [("1-1_1", "2"), ("1-1_1", "5")]
    assert AssessorJudgment.objects.count() == 11
    assert not AssessorJudgment.objects.exclude(history=[]).exists()  # saved once, with the last marks
