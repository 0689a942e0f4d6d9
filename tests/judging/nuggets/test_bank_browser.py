"""In headless Chromium an assessor writes a turn's nuggets while reading its relevant passages: a selected span
becomes a nugget, and the keyboard sets importance, edits, and merges a duplicate."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as ec

from evaluation.models import Nugget
from judging.nuggets import banks
from tests.conftest import ARTIFACTS, browser_login, page_wait
from tests.judging.nuggets import helpers

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SELECT = """
const body = document.querySelector('[data-passage="p1"] .passage-body').firstChild;
const range = document.createRange();
range.setStart(body, arguments[0]); range.setEnd(body, arguments[1]);
const sel = window.getSelection(); sel.removeAllRanges(); sel.addRange(range);
"""


def _nuggets(browser) -> list[str]:
    return [li.text.split("\n")[1] for li in browser.find_elements(By.CSS_SELECTOR, "#nuggets > li")]


def test_an_assessor_adds_a_span_as_a_nugget_grades_edits_and_merges_by_keyboard(browser, live_server, assessor):
    s = helpers.scene()
    bank = banks.bank_create(collection=s.collection, name="post-edited", copy_of=s.bank, user=assessor)
    browser.set_window_size(1366, 900)
    browser_login(browser, live_server, "assessor1", "pass-assessor1")
    browser.get(live_server.url + "/judging/relevance/")
    browser.find_element(By.LINK_TEXT, "Nugget banks").click()
    browser.find_element(By.LINK_TEXT, "post-edited").click()
    assert "3" in browser.find_element(By.ID, "turns").text  # turn 1_1 has 3 nuggets
    browser.find_element(By.LINK_TEXT, "1_1").click()
    wait = page_wait(browser, 20)
    wait.until(ec.text_to_be_present_in_element((By.ID, "nugget-count"), "3 nuggets (2 vital)"))
    passages = browser.find_elements(By.CSS_SELECTOR, "[data-passage]")
    # Relevant = graded at or above the collection's threshold (1): p3 (grade 0) is not shown.
    assert [p.get_attribute("data-passage") for p in passages] == ["p1", "p2"]
    assert helpers.PASSAGES["p1"] in passages[0].text and "grade 3" in passages[0].text

    browser.execute_script(SELECT, 40, 56)  # "stands in Paris."
    wait.until(ec.element_to_be_clickable((By.ID, "add-selection")))
    assert "stands in Paris" in browser.find_element(By.ID, "selection-note").text
    body = browser.find_element(By.TAG_NAME, "body")
    body.send_keys("a")
    wait.until(ec.text_to_be_present_in_element((By.ID, "nugget-count"), "4 nuggets (2 vital)"))
    assert _nuggets(browser)[3] == "okay stands in Paris. added"
    browser.save_screenshot(str(ARTIFACTS / "nugget_bank_added.png"))
    # Focus is on the new nugget: make it vital, then merge it into "In Paris" (row 3), its duplicate.
    body.send_keys("v")
    wait.until(ec.text_to_be_present_in_element((By.ID, "nugget-count"), "4 nuggets (3 vital)"))
    body.send_keys("m", "k", "m")
    wait.until(ec.text_to_be_present_in_element((By.ID, "nugget-count"), "3 nuggets (2 vital)"))
    # Edit row 1's text.
    body.send_keys("k", "k", "e")
    area = wait.until(ec.presence_of_element_located((By.ID, "edit-text")))
    area.send_keys(Keys.CONTROL, "a")
    area.send_keys("Built for the Exposition Universelle of 1889", Keys.ENTER)
    wait.until(lambda d: "Exposition Universelle" in d.find_element(By.ID, "nuggets").text)
    wait.until(ec.text_to_be_present_in_element((By.ID, "save-state"), "all saved"))
    browser.save_screenshot(str(ARTIFACTS / "nugget_bank_edited.png"))

    rows = {n.text: n for n in Nugget.objects.filter(bank=bank, turn=s.turns["1_1"])}
    added, paris = rows["stands in Paris."], rows["In Paris"]
    assert (added.origin, added.source_passages, added.importance) == ("added", ["p1"], "vital")
    assert added.merged_into == paris
    edited = rows["Built for the Exposition Universelle of 1889"]
    assert edited.origin == "edited" and edited.history[0]["text"] == "Built for the 1889 World's Fair"
    # The bank it was copied from is unchanged.
    assert s.nuggets("1_1")[0].text == "Built for the 1889 World's Fair"
