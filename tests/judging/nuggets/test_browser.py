"""In headless Chromium an assessor judges answers by keyboard only: nugget assignment (blind) and citation support
(post-editing an LLM's labels), from their judging queue; the counts change and the labels are stored."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as ec

from evaluation.models import CitationLabel, NuggetAssignment
from tests.conftest import ARTIFACTS, browser_login, page_wait
from tests.judging.nuggets import helpers

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _text(browser, element_id: str) -> str:
    return browser.find_element(By.ID, element_id).text


def _rows(browser) -> list[str]:
    return [li.text.split("\n")[0] for li in browser.find_elements(By.CSS_SELECTOR, "#rows > li")]


def _on(browser) -> list[str]:
    """The label shown selected on each row ("" for none)."""
    out = []
    for li in browser.find_elements(By.CSS_SELECTOR, "#rows > li"):
        on = li.find_elements(By.CSS_SELECTOR, "button.on")
        out.append(on[0].get_attribute("data-value") if on else "")
    return out


def _open_task(browser, live_server, task_name: str):
    browser.set_window_size(1366, 900)
    browser_login(browser, live_server, "assessor1", "pass-assessor1")
    browser.get(live_server.url + "/judging/relevance/")
    section = browser.find_element(By.ID, "answer-tasks")
    assert task_name in section.text and "0 of 4" in section.text
    browser.save_screenshot(str(ARTIFACTS / f"judging_queue_{task_name.split(',')[0].lower()}.png"))
    section.find_element(By.LINK_TEXT, "Start").click()


def test_an_assessor_assigns_nuggets_to_two_answers_by_keyboard_and_goes_back_to_change_one(
    browser, live_server, assessor
):
    s = helpers.scene()
    task = helpers.nugget_task(s, name="Nuggets, blind")
    _open_task(browser, live_server, "Nuggets, blind")
    wait = page_wait(browser, 20)
    wait.until(ec.text_to_be_present_in_element((By.ID, "progress-text"), "0 of 4 answers judged"))
    assert _text(browser, "answer") == "The tower is 330 metres tall. It was built for the 1889 fair."
    assert _text(browser, "turn-id") == "1_1" and "How tall is the Eiffel Tower?" in _text(browser, "conversation")
    # Vital nuggets first, each with its importance.
    rows = browser.find_elements(By.CSS_SELECTOR, "#rows > li")
    assert [r.text.split("\n")[1] for r in rows] == [
        "vital 330 metres tall",
        "vital In Paris",
        "okay Built for the 1889 World's Fair",
    ]
    assert _text(browser, "item-state") == "3 to label"
    body = browser.find_element(By.TAG_NAME, "body")
    body.send_keys("s", "n", "s")  # each label moves the focus to the next row
    wait.until(lambda d: _on(d) == ["support", "not_support", "support"])
    wait.until(ec.text_to_be_present_in_element((By.ID, "save-state"), "all saved"))
    assert _text(browser, "item-state") == "ready to submit"
    browser.save_screenshot(str(ARTIFACTS / "nuggets_assign.png"))
    body.send_keys(Keys.ENTER)
    wait.until(ec.text_to_be_present_in_element((By.ID, "progress-text"), "1 of 4 answers judged (1 by you)"))
    assert _text(browser, "answer") == "The tower is in Paris."  # run B's, not named on the page

    body.send_keys(Keys.ENTER)  # nothing labelled yet: refused, with what is left
    wait.until(ec.text_to_be_present_in_element((By.ID, "message"), "Label every nugget first: 3 left."))
    body.send_keys("n", "s", Keys.ARROW_UP, "j", "p")  # ↑ to row 2 and j back to row 3: partial
    wait.until(lambda d: _on(d) == ["not_support", "support", "partial_support"])
    body.send_keys(Keys.ENTER)
    wait.until(ec.text_to_be_present_in_element((By.ID, "progress-text"), "2 of 4 answers judged (2 by you)"))
    assert _text(browser, "turn-id") == "2_1"

    body.send_keys(Keys.BACKSPACE)  # back to runB's answer, its labels shown
    wait.until(ec.text_to_be_present_in_element((By.ID, "answer"), "The tower is in Paris."))
    assert _text(browser, "item-state") == "judged — you are reviewing it"
    assert _on(browser) == ["not_support", "support", "partial_support"]
    body.send_keys("3", "s")  # row 3: support after all
    wait.until(lambda d: _on(d)[2] == "support")
    body.send_keys(Keys.ENTER)  # and on to the answer that was open
    wait.until(ec.text_to_be_present_in_element((By.ID, "turn-id"), "2_1"))
    wait.until(ec.text_to_be_present_in_element((By.ID, "save-state"), "all saved"))
    assert _text(browser, "progress-text") == "2 of 4 answers judged (2 by you)"
    browser.save_screenshot(str(ARTIFACTS / "nuggets_next_turn.png"))

    stored = {
        (a.response.run.name, a.nugget.text): (a.label, a.condition, a.assessor.username)
        for a in NuggetAssignment.objects.filter(label_set=task.label_set).select_related("response__run", "nugget")
    }
    assert stored == {
        ("runA", "330 metres tall"): ("support", "blind", "assessor1"),
        ("runA", "In Paris"): ("not_support", "blind", "assessor1"),
        ("runA", "Built for the 1889 World's Fair"): ("support", "blind", "assessor1"),
        ("runB", "330 metres tall"): ("not_support", "blind", "assessor1"),
        ("runB", "In Paris"): ("support", "blind", "assessor1"),
        ("runB", "Built for the 1889 World's Fair"): ("support", "blind", "assessor1"),
    }
    changed = NuggetAssignment.objects.get(label_set=task.label_set, response__run__name="runB", nugget__position=0)
    assert [h["label"] for h in changed.history] == ["partial_support"]


def test_an_assessor_post_edits_citation_support_by_keyboard(browser, live_server, assessor):
    s = helpers.scene()
    task = helpers.citation_task(s, post_edit=True, name="Citations, post-edit")
    _open_task(browser, live_server, "Citations, post-edit")
    wait = page_wait(browser, 20)
    wait.until(ec.text_to_be_present_in_element((By.ID, "progress-text"), "0 of 4 answers judged"))
    rows = browser.find_elements(By.CSS_SELECTOR, "#rows > li")
    assert "The tower is 330 metres tall." in rows[0].text and helpers.PASSAGES["p1"] in rows[0].text
    assert "Cites p2" in rows[1].text and "Also cites p1" in rows[1].text
    # The LLM's labels start selected (and marked); the assessor changes the second.
    assert _on(browser) == ["full", "full"]
    assert len(browser.find_elements(By.CSS_SELECTOR, "#rows button.llm")) == 2
    body = browser.find_element(By.TAG_NAME, "body")
    body.send_keys("j", "p")
    wait.until(lambda d: _on(d) == ["full", "partial"])
    browser.save_screenshot(str(ARTIFACTS / "citations_post_edit.png"))
    body.send_keys(Keys.ENTER)
    wait.until(ec.text_to_be_present_in_element((By.ID, "progress-text"), "1 of 4 answers judged"))
    assert "The tower is in Paris." in _text(browser, "rows") and _on(browser) == [""]  # no LLM label here
    body.send_keys("n", Keys.ENTER)
    wait.until(ec.text_to_be_present_in_element((By.ID, "progress-text"), "2 of 4 answers judged"))
    # runA's answer to 2_1: a sentence with a citation, and one without (nothing to judge there).
    assert _text(browser, "row-count") == "2 sentences, 1 with a citation"
    assert "No citation." in _text(browser, "rows")
    body.send_keys("x", Keys.ENTER)
    wait.until(ec.text_to_be_present_in_element((By.ID, "progress-text"), "3 of 4 answers judged"))
    # runB's cites a passage the corpus lacks: it says so and cannot be judged, only marked as needing none.
    assert "The corpus has no text for this passage" in _text(browser, "rows")
    body.send_keys("f")
    wait.until(ec.text_to_be_present_in_element((By.ID, "message"), "cannot be judged"))
    browser.save_screenshot(str(ARTIFACTS / "citations_missing_text.png"))
    body.send_keys(Keys.ENTER)
    wait.until(ec.visibility_of_element_located((By.ID, "empty")))
    assert _text(browser, "progress-text").startswith("4 of 4 answers judged")
    assert "Nothing left to judge" in _text(browser, "empty")
    browser.save_screenshot(str(ARTIFACTS / "citations_done.png"))

    stored = sorted(
        (c.sentence.text, c.passage_id, c.support, c.condition)
        for c in CitationLabel.objects.filter(label_set=task.label_set).select_related("sentence")
    )
    assert stored == [
        ("It was built for the 1889 fair.", "p2", "partial", "post_edit"),
        ("Paris is the capital.", "p3", "not_needed", "post_edit"),
        ("The tower is 330 metres tall.", "p1", "full", "post_edit"),
        ("The tower is in Paris.", "p1", "none", "post_edit"),
    ]
