"""In headless Chromium an assessor judges a topic with the keyboard only."""

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from ecast.imports.services import import_file
from judging.models import AssessorJudgment
from judging.relevance import pools
from tests import factories
from tests.conftest import ARTIFACTS, browser_login
from tests.judging.relevance import helpers


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_an_assessor_judges_a_topic_with_the_keyboard(browser, live_server, assessor):
    coll = factories.collection_with_turns(
        name="Browser", year=2020, conversations={"81": ["How do garage door openers work?", "Why did it stop?"]}
    )
    helpers.passages(
        {
            "p1": "A garage door opener is a motorized device that opens and closes a garage door.",
            "p2": "Bees are dying because of pesticides and habitat loss.",
            "p3": "If the opener stopped working, check the power supply and the safety sensors first.",
        }
    )
    original = helpers.qrels(coll, {"81_1": {"p0": 2}})
    run = helpers.run(coll, "A", {"81_1": ["p0", "p1", "p2"], "81_2": ["p3"]})
    pools.pool_create(collection=coll, qrels_version=original, runs=[run], name="Browser pool")

    browser_login(browser, live_server, "assessor1", "pass-assessor1")
    browser.get(live_server.url + "/judging/relevance/")
    browser.find_element(By.XPATH, "//button[normalize-space()='Take a topic']").click()
    wait = WebDriverWait(browser, 10)
    wait.until(ec.text_to_be_present_in_element((By.ID, "pair-pos"), "1 of 3"))
    body = browser.find_element(By.TAG_NAME, "body")
    assert "How do garage door openers work?" in browser.find_element(By.ID, "reference").text

    body.send_keys("3")  # p1 → 3, advance to p2
    wait.until(ec.text_to_be_present_in_element((By.ID, "pair-pos"), "2 of 3"))
    body.send_keys("1")  # p2 → 1, advance to p3
    wait.until(ec.text_to_be_present_in_element((By.ID, "pair-pos"), "3 of 3"))
    assert "Why did it stop?" in browser.find_element(By.ID, "conversation").text
    body.send_keys(Keys.BACKSPACE)  # back to p2 to fix its grade
    wait.until(ec.text_to_be_present_in_element((By.ID, "pair-pos"), "2 of 3"))
    body.send_keys("0")  # p2 → 0, advance to p3 (the only ungraded)
    wait.until(ec.text_to_be_present_in_element((By.ID, "pair-pos"), "3 of 3"))
    body.send_keys("?")
    assert browser.find_element(By.ID, "help").is_displayed()
    body.send_keys("?")
    assert not browser.find_element(By.ID, "help").is_displayed()
    browser.save_screenshot(str(ARTIFACTS / "assessor.png"))
    body.send_keys("4")
    wait.until(ec.text_to_be_present_in_element((By.ID, "progress-text"), "3 / 3"))
    wait.until(ec.text_to_be_present_in_element((By.ID, "save-state"), "all saved"))
    assert browser.find_element(By.ID, "done").is_displayed()
    # … and in view, not under the fold below the last item
    top, bottom, height = browser.execute_script(
        "const r = document.getElementById('done').getBoundingClientRect(); return [r.top, r.bottom, innerHeight];"
    )
    assert 0 <= top and bottom <= height + 1, (top, bottom, height)  # a subpixel past the edge is in view

    grades = dict(AssessorJudgment.objects.values_list("pair__passage_id", "grade"))
    assert grades == {"p1": 3, "p2": 0, "p3": 4}
    assert AssessorJudgment.objects.get(pair__passage_id="p2").history[0]["grade"] == 1


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_an_ikat_topic_shows_the_users_ptkb_with_what_the_current_turn_relied_on(
    browser, live_server, assessor, shared_data
):
    coll = import_file(kind="ikat_topics", path=shared_data / "ikat/2023/2023_train_topics.json").collection
    import_file(kind="passages_jsonl", path=shared_data / "ikat/2023/2023_train_topics_psg_text.jsonl")
    original = helpers.qrels(coll, {"1-1_1": {"clueweb22-en0041-44-05546:3": 1}})
    # 1-1_4's response used no statement; 1-1_5's used statement 2 ("I live in the Netherlands.").
    run = helpers.run(coll, "A", {"1-1_4": ["clueweb22-en0016-21-09213:0"], "1-1_5": ["clueweb22-en0041-44-05546:3"]})
    pools.pool_create(collection=coll, qrels_version=original, runs=[run], name="iKAT pool")

    browser.set_window_size(1366, 768)
    browser_login(browser, live_server, "assessor1", "pass-assessor1")
    browser.get(live_server.url + "/judging/relevance/")
    browser.find_element(By.XPATH, "//button[normalize-space()='Take a topic']").click()
    wait = WebDriverWait(browser, 10)
    wait.until(ec.text_to_be_present_in_element((By.ID, "pair-turn"), "1-1_4"))
    cited = lambda: [li.text for li in browser.find_elements(By.CSS_SELECTOR, "#ptkb-list li.ptkb-cited")]  # noqa: E731
    assert browser.find_element(By.ID, "ptkb").is_displayed() and cited() == []
    assert not browser.find_element(By.ID, "ptkb-current").is_displayed()
    assert len(browser.find_elements(By.CSS_SELECTOR, "#ptkb-list li")) == 11
    browser.find_element(By.TAG_NAME, "body").send_keys("2")
    wait.until(ec.text_to_be_present_in_element((By.ID, "pair-turn"), "1-1_5"))
    assert [text.split(" ←")[0] for text in cited()] == ["I live in the Netherlands."]
    current = browser.find_element(By.ID, "ptkb-current")
    assert current.is_displayed() and current.text.endswith("2. I live in the Netherlands.")
    browser.save_screenshot(str(ARTIFACTS / "assessor-ikat-ptkb.png"))
    browser.execute_script("document.getElementById('ptkb').scrollIntoView()")
    browser.save_screenshot(str(ARTIFACTS / "assessor-ikat-ptkb-list.png"))


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_grades_typed_while_the_network_is_down_reach_the_server_in_order_once_it_is_back(
    browser, live_server, assessor
):
    coll = factories.collection_with_turns(name="Offline", year=2020, conversations={"81": ["How do openers work?"]})
    helpers.passages({"p1": "An opener is a motorized device.", "p2": "Bees are dying.", "p3": "Check the sensors."})
    original = helpers.qrels(coll, {"81_1": {"p0": 2}})
    run = helpers.run(coll, "A", {"81_1": ["p1", "p2", "p3"]})
    pools.pool_create(collection=coll, qrels_version=original, runs=[run], name="Offline pool")
    browser_login(browser, live_server, "assessor1", "pass-assessor1")
    browser.get(live_server.url + "/judging/relevance/")
    browser.find_element(By.XPATH, "//button[normalize-space()='Take a topic']").click()
    wait = WebDriverWait(browser, 20)
    wait.until(ec.text_to_be_present_in_element((By.ID, "pair-pos"), "1 of 3"))
    # Every POST fails as a dropped connection would while window.offline is set.
    browser.execute_script(
        "window.offline = true; const real = window.fetch;"
        "window.fetch = (...a) => window.offline ? Promise.reject(new TypeError('offline')) : real(...a);"
    )
    body = browser.find_element(By.TAG_NAME, "body")
    body.send_keys("3")  # p1 → 3 (its send fails and is retried)
    wait.until(ec.text_to_be_present_in_element((By.ID, "pair-pos"), "2 of 3"))
    body.send_keys("1")  # p2 → 1, waiting behind p1 ...
    wait.until(ec.text_to_be_present_in_element((By.ID, "pair-pos"), "3 of 3"))
    body.send_keys(Keys.BACKSPACE)
    body.send_keys("0")  # ... and replaced by 0 before it was ever sent
    wait.until(ec.text_to_be_present_in_element((By.ID, "save-state"), "2 unsaved"))
    assert "retrying" in browser.find_element(By.ID, "message").text
    assert not AssessorJudgment.objects.exists()
    browser.execute_script("window.offline = false;")
    wait.until(ec.text_to_be_present_in_element((By.ID, "save-state"), "all saved"))
    grades = {p: (g, h) for p, g, h in AssessorJudgment.objects.values_list("pair__passage_id", "grade", "history")}
    assert grades == {"p1": (3, []), "p2": (0, [])}
