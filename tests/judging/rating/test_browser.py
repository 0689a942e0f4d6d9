"""Headless Chromium: a rater rates three items with the keyboard only (reload keeps the lease); an admin creates a
campaign and watches kappa update as ratings arrive."""

from __future__ import annotations

import uuid

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as ec

from ecast import services as ecast_services
from ecast.imports.services import import_file
from ecast.models import Paraphrase
from judging.models import Campaign, Rating, RatingAssignment
from judging.rating import leasing, selectors, services
from tests import factories
from tests.conftest import ARTIFACTS, browser_login, page_wait


def _item_id(driver) -> str:
    return driver.find_element(By.NAME, "assignment_id").get_attribute("value")


def _open_as_rater1(browser, live_server, c: Campaign) -> None:
    browser_login(browser, live_server, "rater1", "pass-rater1")
    browser.get(live_server.url + f"/rating/campaigns/{c.pk}/rate/")


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_rater_completes_three_items_with_the_keyboard_and_a_reload_keeps_the_lease(browser, live_server, rater):
    c = factories.rating_campaign(factories.paraphrase_collection(), size=4, n=2)
    browser_login(browser, live_server, "rater1", "pass-rater1")
    browser.get(live_server.url + f"/rating/campaigns/{c.pk}/rate/")
    # The page swaps the item in place; a lookup may hit the old node mid-swap, so such errors mean 'not yet'.
    wait = page_wait(browser)
    body = browser.find_element(By.TAG_NAME, "body")

    first = _item_id(browser)
    body.send_keys("?")
    assert browser.find_element(By.ID, "guidelines").is_displayed()
    body.send_keys(Keys.ESCAPE)
    assert not browser.find_element(By.ID, "guidelines").is_displayed()
    body.send_keys("4")
    body.send_keys("5")
    browser.save_screenshot(str(ARTIFACTS / "rater.png"))
    body.send_keys(Keys.ENTER)
    wait.until(ec.text_to_be_present_in_element((By.ID, "progress-text"), "1 done"))

    second = _item_id(browser)
    assert second != first
    body = browser.find_element(By.TAG_NAME, "body")
    body.send_keys("2")
    browser.refresh()  # mid-item reload: same lease, same item
    assert _item_id(browser) == second
    body = browser.find_element(By.TAG_NAME, "body")
    body.send_keys(Keys.ENTER)  # nothing answered yet: refused on the page, nothing sent
    assert "Answer every measure" in browser.find_element(By.ID, "rating-hint").text
    body.send_keys("3")
    body.send_keys(Keys.ARROW_RIGHT)  # 3 → 4 on the second measure... focus moved there after "3"
    body.send_keys(Keys.ARROW_UP)
    body.send_keys("1")  # first measure corrected to 1; focus moves to the second
    body.send_keys(Keys.ENTER)
    wait.until(ec.text_to_be_present_in_element((By.ID, "progress-text"), "2 done"))

    third = _item_id(browser)
    body = browser.find_element(By.TAG_NAME, "body")
    body.send_keys("5", "5", Keys.ENTER)
    wait.until(ec.text_to_be_present_in_element((By.ID, "progress-text"), "3 done"))

    ratings = {str(r.assignment_id): r for r in Rating.objects.filter(rater=rater)}
    assert set(ratings) == {first, second, third}
    keys = c.measure_keys
    assert ratings[first].values == {keys[0]: 4, keys[1]: 5}
    assert ratings[second].values[keys[0]] == 1
    assert ratings[third].values == {keys[0]: 5, keys[1]: 5}
    assert all(r.seconds_on_task is not None and r.seconds_on_task >= 0 for r in ratings.values())
    assert RatingAssignment.objects.filter(rater=rater).count() == 4  # three done + the fourth now leased
    browser.save_screenshot(str(ARTIFACTS / "rater-after.png"))


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_on_a_laptop_screen_the_question_in_focus_stays_clear_of_the_submit_bar(browser, live_server, rater):
    from judging.models import DEFAULT_MEASURES

    c = factories.rating_campaign(factories.paraphrase_collection(), size=2, n=1, measures=DEFAULT_MEASURES)
    browser.set_window_size(1280, 760)
    browser_login(browser, live_server, "rater1", "pass-rater1")
    browser.get(live_server.url + f"/rating/campaigns/{c.pk}/rate/")
    body = browser.find_element(By.TAG_NAME, "body")
    for _ in DEFAULT_MEASURES[:-1]:
        body.send_keys("3")  # each answer moves the focus to the next question, scrolling it into view
    focused = browser.find_element(By.CSS_SELECTOR, "fieldset.measure.focused")
    assert focused.get_attribute("data-key") == DEFAULT_MEASURES[-1]
    rect = "return arguments[0].getBoundingClientRect()"
    question = browser.execute_script(rect, focused)
    bar = browser.execute_script(rect, browser.find_element(By.CSS_SELECTOR, ".rate-form .judge-nav"))
    browser.save_screenshot(str(ARTIFACTS / "rater-last-question.png"))
    assert question["bottom"] <= bar["top"], "the last question's answers are hidden under the Submit bar"


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_an_admin_creates_a_campaign_and_sees_kappa_update(browser, live_server, admin_user):
    coll = factories.paraphrase_collection()
    browser_login(browser, live_server, "admin1", "pass-admin1")
    browser.get(live_server.url + "/rating/campaigns/")
    browser.find_element(By.ID, "id_name").send_keys("Browser campaign")
    browser.find_element(By.CSS_SELECTOR, f"input[name=collections][value='{coll.pk}']").click()
    size = browser.find_element(By.ID, "id_sample_size")
    size.clear()
    size.send_keys("4")
    n = browser.find_element(By.ID, "id_raters_per_item")
    n.clear()
    n.send_keys("3")
    browser.find_element(By.ID, "create-campaign").click()
    # The page swaps the item in place; a lookup may hit the old node mid-swap, so such errors mean 'not yet'.
    wait = page_wait(browser)
    wait.until(ec.presence_of_element_located((By.ID, "kappa-table")))
    c = Campaign.objects.get(name="Browser campaign")
    cell = '#kappa-table tr[data-measure="semantic_similarity"] [data-f="kappa_raw"]'
    assert browser.find_element(By.CSS_SELECTOR, cell).text == "—"
    raters = factories.users(3)
    scores = {0: [5, 5, 4], 1: [1, 1, 2], 2: [3, 3, 3], 3: [5, 4, 5]}
    for j, u in enumerate(raters):
        for _ in range(4):
            a = leasing.assignment_next(campaign=c, rater=u)
            s = scores[a.item.position][j]
            services.rating_submit(
                assignment_id=a.pk, rater=u, values={k: s for k in c.measure_keys}, idempotency_key=uuid.uuid4().hex
            )
    wait.until(lambda d: d.find_element(By.CSS_SELECTOR, cell).text not in ("—", ""))
    shown = float(browser.find_element(By.CSS_SELECTOR, cell).text)
    expected = selectors.campaign_agreement(campaign=c)["measures"]["semantic_similarity"]["kappa_raw"]
    assert shown == pytest.approx(expected, abs=5e-4)
    browser.save_screenshot(str(ARTIFACTS / "rating-report.png"))


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_tiny_negative_kappa_refreshed_by_the_report_reads_0_000_not_minus_0_000(
    browser, live_server, admin_user, monkeypatch
):
    c = factories.rating_campaign(factories.paraphrase_collection(), size=2, n=2)
    real = selectors.campaign_agreement

    def nearly_zero(*, campaign, **kw):
        report = real(campaign=campaign, **kw)
        for rep in report["measures"].values():
            rep["kappa_raw"] = -1e-6
        return report

    monkeypatch.setattr(selectors, "campaign_agreement", nearly_zero)
    browser_login(browser, live_server, "admin1", "pass-admin1")
    browser.get(live_server.url + f"/rating/campaigns/{c.pk}/")
    page_wait(browser).until(ec.text_to_be_present_in_element((By.ID, "agreement-updated"), "updated"))
    cell = '#kappa-table tr[data-measure="semantic_similarity"] [data-f="kappa_raw"]'
    assert browser.find_element(By.CSS_SELECTOR, cell).text == "0.000"


def _rect(driver, css: str) -> dict:
    return driver.execute_script(
        "const el = document.querySelector(arguments[0]); const r = el.getBoundingClientRect();"
        "return {top: r.top, bottom: r.bottom, height: r.height, vh: window.innerHeight,"
        " scrolls: el.scrollHeight > el.clientHeight};",
        css,
    )


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_at_1366x768_the_whole_form_works_without_scrolling_and_undo_brings_the_answer_back(
    browser, live_server, rater
):
    # Eight turns of history, five measures and long guidelines: the worst case a rater meets in the demo.
    c = factories.rating_campaign(
        factories.paraphrase_collection(topics=1, turns=8),
        size=8,
        n=2,
        measures=(
            "semantic_similarity",
            "language_diversity",
            "raw_semantic_similarity",
            "conversational_entailment",
            "passage_relevance",
        ),
        guidelines="\n".join(f"Guideline {i}: read the whole conversation before answering." for i in range(40)),
    )
    browser.set_window_size(1366, 768)
    browser_login(browser, live_server, "rater1", "pass-rater1")
    browser.get(live_server.url + f"/rating/campaigns/{c.pk}/rate/")
    submit = _rect(browser, "#submit-rating")
    assert 0 <= submit["top"] and submit["bottom"] <= submit["vh"], submit
    page = browser.find_element(By.TAG_NAME, "body").text
    assert "Item 1 of 8" in page and "Rewritten question" in page and "p^m" not in page
    browser.save_screenshot(str(ARTIFACTS / "rater-1366x768.png"))

    body = browser.find_element(By.TAG_NAME, "body")
    body.send_keys("?")
    guide = _rect(browser, "#guidelines")
    assert guide["top"] >= 0 and guide["bottom"] <= guide["vh"] and guide["scrolls"], guide
    browser.save_screenshot(str(ARTIFACTS / "rater-guidelines-1366x768.png"))
    body.send_keys(Keys.ESCAPE)

    first = _item_id(browser)
    body.send_keys("2", "3", "4", "5", "1")
    submit = _rect(browser, "#submit-rating")  # the focus moved down five questions: Submit is still in view
    assert 0 <= submit["top"] and submit["bottom"] <= submit["vh"], submit
    body.send_keys(Keys.ENTER)
    wait = page_wait(browser)
    wait.until(ec.text_to_be_present_in_element((By.ID, "progress-text"), "1 done"))
    assert "Item 2 of 8" in browser.find_element(By.ID, "item-position").text

    browser.find_element(By.TAG_NAME, "body").send_keys("u")
    wait.until(ec.presence_of_element_located((By.ID, "correcting")))
    assert _item_id(browser) == first
    assert "Item 1 of 8" in browser.find_element(By.ID, "item-position").text
    assert "0 done · 8 left" in browser.find_element(By.ID, "progress-text").text
    checked = browser.execute_script(
        "return Array.from(document.querySelectorAll('fieldset.measure input:checked')).map(i => i.value);"
    )
    assert checked == ["2", "3", "4", "5", "1"]
    browser.save_screenshot(str(ARTIFACTS / "rater-undo-correction.png"))
    body = browser.find_element(By.TAG_NAME, "body")
    body.send_keys(Keys.ARROW_RIGHT)  # the first question is focused again: 2 → 3, the rest stays
    body.send_keys(Keys.ENTER)
    wait.until(ec.text_to_be_present_in_element((By.ID, "progress-text"), "1 done"))
    values = Rating.objects.get(rater=rater).values
    assert [values[k] for k in c.measure_keys] == [3, 3, 4, 5, 1]


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_at_1366x768_an_ikat_item_folds_the_users_ptkb_and_submit_stays_in_view(
    browser, live_server, rater, shared_data
):
    coll = import_file(kind="ikat_topics", path=shared_data / "ikat/2023/2023_test_topics.json").collection
    turn = coll.turns.get(turn_id="17-3_16")  # 15 turns of history, 12 statements, 3 used
    ecast_services.paraphrase_add(
        turn=turn, manual_text=turn.manual_rewrite + " Please explain.", raw_text=turn.raw_utterance + " Please."
    )
    Paraphrase.objects.filter(turn=turn).update(status="approved")
    c = factories.rating_campaign(
        coll, size=1, n=1, measures=("semantic_similarity", "conversational_entailment", "passage_relevance")
    )
    browser.set_window_size(1366, 768)
    browser_login(browser, live_server, "rater1", "pass-rater1")
    browser.get(live_server.url + f"/rating/campaigns/{c.pk}/rate/")
    details = browser.find_element(By.ID, "ptkb")
    assert details.get_attribute("open") is None and "What the user told about themselves" in details.text
    submit = _rect(browser, "#submit-rating")
    assert 0 <= submit["top"] and submit["bottom"] <= submit["vh"], submit
    browser.save_screenshot(str(ARTIFACTS / "rater-ikat-1366x768.png"))
    details.find_element(By.TAG_NAME, "summary").click()
    assert details.get_attribute("open") is not None
    assert len(details.find_elements(By.CSS_SELECTOR, "ol.ptkb li")) == turn.conversation.ptkb.count()
    submit = _rect(browser, "#submit-rating")
    assert 0 <= submit["top"] and submit["bottom"] <= submit["vh"], submit
    browser.save_screenshot(str(ARTIFACTS / "rater-ikat-ptkb-1366x768.png"))


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_an_answer_sent_while_the_network_is_down_is_stored_once_and_a_refusal_is_shown_beside_submit(
    browser, live_server, rater
):
    c = factories.rating_campaign(factories.paraphrase_collection(), size=3, n=1)
    _open_as_rater1(browser, live_server, c)
    wait = page_wait(browser)
    first = _item_id(browser)
    # The first POST fails as a dropped connection would; the queue tries again with the same idempotency key.
    browser.execute_script(
        "const real = window.fetch; let drops = 1;"
        "window.fetch = (...a) => drops-- > 0 ? Promise.reject(new TypeError('offline')) : real(...a);"
    )
    body = browser.find_element(By.TAG_NAME, "body")
    body.send_keys("4", "5", Keys.ENTER)
    wait.until(ec.text_to_be_present_in_element((By.ID, "rating-hint"), "retrying"))
    wait.until(ec.text_to_be_present_in_element((By.ID, "progress-text"), "1 done"))
    assert "Saved." in browser.find_element(By.CSS_SELECTOR, "ul.messages").text
    assert [r.values for r in Rating.objects.filter(rater=rater)] == [{c.measure_keys[0]: 4, c.measure_keys[1]: 5}]
    assert str(Rating.objects.get(rater=rater).assignment_id) == first

    # A value the server refuses (out of the 1-5 scale): not retried, its reason shown, the page stays.
    second = _item_id(browser)
    body = browser.find_element(By.TAG_NAME, "body")
    body.send_keys("5", "5")
    browser.execute_script("document.querySelector('fieldset.measure input:checked').value = '9';")
    body.send_keys(Keys.ENTER)
    wait.until(ec.text_to_be_present_in_element((By.ID, "rating-hint"), "Not saved"))
    assert _item_id(browser) == second
    assert Rating.objects.filter(rater=rater).count() == 1
    assert browser.find_element(By.ID, "submit-rating").is_enabled()


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_after_the_last_item_u_brings_the_answer_back(browser, live_server, rater):
    c = factories.rating_campaign(factories.paraphrase_collection(), size=1, n=1)
    _open_as_rater1(browser, live_server, c)
    browser.find_element(By.TAG_NAME, "body").send_keys("4", "5", Keys.ENTER)
    wait = page_wait(browser)
    wait.until(ec.presence_of_element_located((By.ID, "rating-done")))
    browser.find_element(By.TAG_NAME, "body").send_keys("u")
    wait.until(ec.presence_of_element_located((By.ID, "correcting")))
    assert not Rating.objects.filter(rater=rater).exists()
