"""Browser: an admin starts a rule-baseline job from the form, sees it finish, and follows a result to its turn."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import Select, WebDriverWait

from tests.conftest import ARTIFACTS, browser_login


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_admin_starts_a_job_and_follows_a_result_to_the_turn_page(browser, live_server, admin_user, small_collection):
    browser_login(browser, live_server, "admin1", "pass-admin1")
    browser.get(live_server.url + "/generation/")
    Select(browser.find_element(By.ID, "id_collection")).select_by_visible_text("Mini")
    browser.find_element(By.ID, "id_conversations").send_keys("2")
    for field, value in (("id_cqr_backend", "rule"), ("id_paraphrase_backend", "rule"), ("id_cr_backend", "rule")):
        Select(browser.find_element(By.ID, field)).select_by_value(value)
    browser.find_element(By.ID, "id_num_return_sequences").clear()
    browser.find_element(By.ID, "id_num_return_sequences").send_keys("2")
    browser.find_element(By.ID, "id_min_similarity").clear()
    browser.find_element(By.CSS_SELECTOR, "#job-form button[type=submit]").click()
    WebDriverWait(browser, 30).until(ec.presence_of_element_located((By.ID, "progress-card")))
    WebDriverWait(browser, 30).until(ec.text_to_be_present_in_element((By.ID, "counts"), "3 / 3 turns done"))
    browser.save_screenshot(str(ARTIFACTS / "generation_job_detail.png"))
    assert "Succeeded" in browser.find_element(By.ID, "job-status").text
    pairs = browser.find_elements(By.CSS_SELECTOR, "#turns ul.gen-pairs li")
    assert len(pairs) == 6 and "What can you tell me about bees?" in pairs[0].text
    browser.find_element(By.LINK_TEXT, "2_2").click()
    WebDriverWait(browser, 10).until(ec.presence_of_element_located((By.ID, "raw-utterance")))
    assert "Why are they dying?" in browser.find_element(By.ID, "raw-utterance").text
    assert "Can you tell me why are" in browser.page_source
