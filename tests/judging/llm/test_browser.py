"""In headless Chromium an admin starts an LLM pre-judgment job, watches it finish, and opens its agreement report
against the human version in one click."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.select import Select

from judging.models import LlmLabel
from tests.conftest import ARTIFACTS, browser_login, page_wait
from tests.judging.llm.helpers import judged_collection


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_an_admin_starts_a_job_and_reaches_its_agreement_report_in_one_click(
    browser, live_server, admin_user, tiny_causal
):
    coll, original, _ = judged_collection()
    browser_login(browser, live_server, "admin1", "pass-admin1")
    browser.get(f"{live_server.url}/judging/llm/")
    assert "No LLM pre-judgment job yet" in browser.find_element(By.ID, "llm-jobs").text
    Select(browser.find_element(By.ID, "id_source_version")).select_by_visible_text("LlmMini / original")
    model = browser.find_element(By.ID, "id_model")
    model.clear()
    model.send_keys(str(tiny_causal))
    browser.find_element(By.CSS_SELECTOR, "#llm-job-form button[type=submit]").click()
    # The tests run tasks inline, so the job has finished when its page loads (a worker would make it poll).
    page_wait(browser).until(ec.text_to_be_present_in_element((By.ID, "counts"), "7 / 7 pairs labelled"))
    # The job page opens at its top (the form's own "#llm-job-form" is not carried over to it).
    assert "#llm-job-form" not in browser.current_url
    assert browser.execute_script("return window.scrollY") == 0
    grades = browser.find_element(By.ID, "grades").text
    assert "Labels" in grades
    assert len(browser.find_elements(By.CSS_SELECTOR, "#labels tbody tr")) == LlmLabel.objects.count() == 7
    browser.set_window_size(1280, 1400)
    browser.save_screenshot(str(ARTIFACTS / "llm-judge-job.png"))

    browser.find_element(By.ID, "agreement-link").click()
    page_wait(browser).until(ec.presence_of_element_located((By.ID, "per-grade-table")))
    picked = [browser.find_element(By.ID, f"pick-{side}") for side in ("a", "b")]
    assert [p.find_element(By.CSS_SELECTOR, "option:checked").text for p in picked] == [
        "original",
        f"llm: {tiny_causal.name}",
    ]
    rows = browser.find_elements(By.CSS_SELECTOR, "#per-grade-table tbody tr")
    assert [r.find_element(By.TAG_NAME, "th").text for r in rows] == ["0", "1", "2", "3", "4"]
    browser.set_window_size(1280, 2200)
    browser.save_screenshot(str(ARTIFACTS / "llm-judge-agreement.png"))


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_refused_job_form_comes_back_scrolled_to_its_error_on_a_short_screen(browser, live_server, admin_user):
    judged_collection()
    browser.set_window_size(1280, 500)  # the form starts below the fold
    browser_login(browser, live_server, "admin1", "pass-admin1")
    browser.get(f"{live_server.url}/judging/llm/")
    browser.execute_script("window.scrollTo(0, 0)")
    browser.find_element(By.CSS_SELECTOR, "#llm-job-form button[type=submit]").submit()
    page_wait(browser).until(ec.presence_of_element_located((By.CSS_SELECTOR, "#llm-job-form .error")))
    error = browser.find_element(By.CSS_SELECTOR, "#llm-job-form .error")
    assert "required" in error.text.lower()
    top = browser.execute_script("return arguments[0].getBoundingClientRect().top", error)
    assert 0 <= top < browser.execute_script("return window.innerHeight"), "the error is on screen without scrolling"


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_an_admin_has_an_endpoint_write_baseline_answers_for_two_turns_and_sees_what_they_cite(
    browser, live_server, admin_user, settings, fresh_cache
):
    from ecast.models import Turn
    from tests.judging.llm.response_helpers import response_collection
    from tests.openai_helpers import endpoint_settings_reset, openai_server

    endpoint_settings_reset(settings, retries=1, timeout=5.0)
    coll, *_ = response_collection()
    for turn_id, question in (("1_1", "What is throat cancer?"), ("2_1", "Why are bees dying?")):
        Turn.objects.filter(collection=coll, turn_id=turn_id).update(raw_utterance=question, manual_rewrite=question)
    browser_login(browser, live_server, "admin1", "pass-admin1")
    browser.get(f"{live_server.url}/judging/llm/responses/")
    form = browser.find_element(By.ID, "form-baseline")
    choices = [label.text for label in form.find_elements(By.CSS_SELECTOR, "#baseline-backend label")]
    assert [c.split(" ")[0] for c in choices] == ["Extractive", "SmolLM2-135M-Instruct", "The"]
    chosen = form.find_element(By.CSS_SELECTOR, "input[name=backend]:checked")
    assert chosen.get_attribute("value") == "extractive"  # the default: no model, every sentence cited
    assert (
        "often copies passage sentences without citing" in form.find_element(By.ID, "id_baseline_backend_helptext").text
    )
    with openai_server(
        lambda m, b: ["The first passage answers it [1]. A second source agrees [2]. Thanks."]
    ) as server:
        Select(form.find_element(By.ID, "id_baseline_collection")).select_by_visible_text(coll.name)
        browser.execute_script(
            "arguments[0].scrollIntoView({block:'center'})", form.find_element(By.ID, "id_baseline_backend_2")
        )
        form.find_element(By.ID, "id_baseline_backend_2").click()
        form.find_element(By.ID, "id_baseline_base_url").send_keys(server.base_url)
        form.find_element(By.ID, "id_baseline_served_model").send_keys("m1")
        form.find_element(By.ID, "id_baseline_turn_ids").send_keys("1_1, 2_1")
        form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        page_wait(browser).until(ec.text_to_be_present_in_element((By.TAG_NAME, "h1"), "Baseline answers by m1"))
    body = browser.find_element(By.TAG_NAME, "body").text
    assert "Writes into ecast-baseline-bm25-top3-m1." in body
    # Each answer: three sentences, the closing "Thanks." uncited.
    assert body.count("2 of 3 sentences cited") == 2
    browser.set_window_size(1280, 1400)
    browser.save_screenshot(str(ARTIFACTS / "baseline-endpoint-job.png"))
