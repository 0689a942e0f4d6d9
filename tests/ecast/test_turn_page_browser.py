"""The per-turn curation page in a real browser: keyboard shortcuts approve, reject, edit and move on."""

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from ecast import services
from ecast.imports.services import import_file
from ecast.models import Paraphrase, Turn
from tests.conftest import ARTIFACTS, browser_login, page_wait


def _press(browser, key):
    browser.find_element(By.TAG_NAME, "body").send_keys(key)


def _wait_status(pk, status):
    WebDriverWait(None, 10, poll_frequency=0.1).until(
        lambda _: Paraphrase.objects.get(pk=pk).status == status, f"paraphrase {pk} never became {status}"
    )


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_curator_works_a_turn_with_the_keyboard(browser, live_server, admin_user, small_collection):
    turn = small_collection.turns.get(turn_id="1_2")
    turn.feedback_sentences = ["No, I asked about surgery."]
    turn.save()
    m1, r1 = services.paraphrase_add(
        turn=turn, manual_text="Can throat cancer be treated?", raw_text="Can it be treated?"
    )
    m2, r2 = services.paraphrase_add(turn=turn, manual_text="Is throat cancer curable?", raw_text="Is it curable?")
    browser_login(browser, live_server, "admin1", "pass-admin1")
    browser.get(f"{live_server.url}/turns/{turn.pk}/")
    assert browser.find_elements(By.CSS_SELECTOR, "mark.repeat")  # "throat cancer" repeated
    selected = browser.find_element(By.CSS_SELECTOR, "tr.pair-row.selected")
    assert selected.find_element(By.CSS_SELECTOR, ".para").get_attribute("id") == f"p{m1.pk}"

    _press(browser, "a")  # approve the first pair: both members, then on to the next undecided pair
    _wait_status(m1.pk, "approved")
    _wait_status(r1.pk, "approved")
    page_wait(browser).until(ec.presence_of_element_located((By.CSS_SELECTOR, f"tr.pair-row.selected #p{m2.pk}")))
    assert "approved" in browser.find_element(By.ID, f"p{r1.pk}").text

    _press(browser, "k")  # back to the first pair
    _press(browser, "E")  # edit its raw paraphrase; Ctrl+Enter saves
    textarea = browser.switch_to.active_element
    assert textarea.tag_name == "textarea"
    textarea.send_keys(Keys.CONTROL, "a")
    textarea.send_keys("Could it be treated?")
    textarea.send_keys(Keys.CONTROL, Keys.ENTER)
    page_wait(browser).until(lambda d: "Edit saved" in d.page_source)
    new = Paraphrase.objects.get(text="Could it be treated?")
    assert new.edited_from_id == r1.pk and new.pair_id == m1.pk and new.status == "approved"

    _press(browser, "?")
    assert browser.find_element(By.ID, "help").is_displayed()
    browser.save_screenshot(str(ARTIFACTS / "turn_page.png"))
    _press(browser, "?")

    _press(browser, "j")
    assert browser.find_element(By.CSS_SELECTOR, "tr.pair-row.selected .para").get_attribute("id") == f"p{m2.pk}"
    _press(browser, "r")  # the last undecided pair: rejected, and the curator is taken to the next turn
    _wait_status(m2.pk, "rejected")
    _wait_status(r2.pk, "rejected")
    page_wait(browser).until(lambda d: "Turn 1_3" in d.page_source)
    assert "Every pair of turn 1_2 is decided: on to turn 1_3." in browser.find_element(By.TAG_NAME, "body").text


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_search_page_ticks_a_whole_page_and_asks_before_deciding_every_match(
    browser, live_server, admin_user, small_collection
):
    turn = small_collection.turns.get(turn_id="1_2")
    services.paraphrase_add(turn=turn, manual_text="Can throat cancer be treated?", raw_text="Can it be treated?")
    browser_login(browser, live_server, "admin1", "pass-admin1")
    browser.get(f"{live_server.url}/paraphrases/?q=treated")
    browser.find_element(By.ID, "tick-page").click()
    ticks = browser.find_elements(By.CSS_SELECTOR, "input.tick")
    assert len(ticks) == 2 and all(t.is_selected() for t in ticks)
    browser.execute_script("window.confirm = (m) => { window.asked = m; return false; };")
    browser.find_element(By.ID, "bulk-reject-all").click()
    asked = browser.execute_script("return window.asked;")
    assert asked == "Reject every pair matching these filters (2 paraphrases and their partners)?"
    assert not Paraphrase.objects.filter(turn=turn, status="rejected").exists()  # declined: nothing sent


def _selected_row(browser) -> int:
    rows = browser.find_elements(By.CSS_SELECTOR, "tr.pair-row")
    return [n for n, row in enumerate(rows) if "selected" in row.get_attribute("class").split()][0]


def _row_ids(browser) -> list[str]:
    rows = browser.find_elements(By.CSS_SELECTOR, "tr.pair-row")
    return [row.find_element(By.CSS_SELECTOR, ".para").get_attribute("id") for row in rows]


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_turn_opens_on_its_first_undecided_pair_and_an_edited_pair_keeps_its_row(
    browser, live_server, admin_user, small_collection
):
    turn, following = small_collection.turns.get(turn_id="1_2"), small_collection.turns.get(turn_id="1_3")
    first, second, third = (
        services.paraphrase_add(turn=turn, manual_text=f"Can throat cancer be treated ({n})?", raw_text=f"It {n}?")
        for n in ("a", "b", "c")
    )
    services.paraphrase_approve(paraphrase=first[0])
    services.paraphrase_reject(paraphrase=second[0])
    decided, open_ = (
        services.paraphrase_add(turn=following, manual_text=text, raw_text=text)
        for text in ("What causes throat cancer?", "Why do people get throat cancer?")
    )
    services.paraphrase_approve(paraphrase=decided[0])
    browser_login(browser, live_server, "admin1", "pass-admin1")

    # Opening the turn: the two decided pairs are passed over.
    browser.get(f"{live_server.url}/turns/{turn.pk}/")
    assert _row_ids(browser) == [f"p{first[0].pk}", f"p{second[0].pk}", f"p{third[0].pk}"]
    assert _selected_row(browser) == 2

    # Editing both paraphrases of the first pair leaves the pair in the first row, selected.
    _press(browser, "k")
    _press(browser, "k")
    for key, text in (("e", "Is there a treatment for throat cancer?"), ("E", "Is there a treatment for it?")):
        _press(browser, key)
        textarea = browser.switch_to.active_element
        textarea.send_keys(Keys.CONTROL, "a")
        textarea.send_keys(text)
        textarea.send_keys(Keys.CONTROL, Keys.ENTER)
        page_wait(browser).until(lambda d, text=text: text in d.find_element(By.ID, "paraphrases").text)
    edited = Paraphrase.objects.get(text="Is there a treatment for throat cancer?")
    assert _row_ids(browser) == [f"p{edited.pk}", f"p{second[0].pk}", f"p{third[0].pk}"]
    assert "Is there a treatment for it?" in browser.find_elements(By.CSS_SELECTOR, "tr.pair-row")[0].text
    assert _selected_row(browser) == 0
    browser.save_screenshot(str(ARTIFACTS / "turn_page_edited_pair_keeps_its_row.png"))

    # Deciding the last open pair moves on to the next turn, on its first pair still to decide.
    _press(browser, "j")
    _press(browser, "j")
    _press(browser, "a")
    page_wait(browser).until(lambda d: "Turn 1_3" in d.page_source)
    assert _row_ids(browser) == [f"p{decided[0].pk}", f"p{open_[0].pk}"]
    assert _selected_row(browser) == 1
    browser.save_screenshot(str(ARTIFACTS / "turn_page_opens_on_first_undecided_pair.png"))


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_curator_moves_on_past_a_system_turn_whose_page_offers_no_pairs(
    browser, live_server, admin_user, shared_data
):
    job = import_file(kind="cast2022_topics", path=shared_data / "cast/2022/2022_evaluation_topics_tree_v1.0.json")
    turn = Turn.objects.get(collection=job.collection, turn_id="136_2-3")
    services.paraphrase_add(
        turn=turn, manual_text="Did the public ever find out who Deep Throat was?", raw_text="Did we?"
    )
    browser_login(browser, live_server, "admin1", "pass-admin1")
    browser.get(f"{live_server.url}/turns/{turn.pk}/")
    assert browser.find_element(By.ID, "next-turn").text.startswith("136_2-5")

    _press(browser, "a")  # the turn's only pair: on to the next User turn, not the System turn 136_2-4 between
    page_wait(browser).until(lambda d: "Turn 136_2-5" in d.find_element(By.TAG_NAME, "h1").text)
    body = browser.find_element(By.TAG_NAME, "body").text
    assert "Every pair of turn 136_2-3 is decided: on to turn 136_2-5." in body
    assert "Add a paraphrase pair" in body

    # The System turn, reached from the history, says why it has no pairs and offers none.
    browser.find_element(By.CSS_SELECTOR, "#history li[data-turn-id='136_2-4'] a").click()
    page_wait(browser).until(lambda d: "Turn 136_2-4" in d.find_element(By.TAG_NAME, "h1").text)
    body = browser.find_element(By.TAG_NAME, "body").text
    assert "Add a paraphrase pair" not in body and not browser.find_elements(By.ID, "paraphrases")
    assert "it has no utterance to paraphrase" in browser.find_element(By.ID, "system-turn-note").text
    browser.save_screenshot(str(ARTIFACTS / "turn_page_system_turn.png"))
    _press(browser, "n")
    page_wait(browser).until(lambda d: "Turn 136_2-5" in d.find_element(By.TAG_NAME, "h1").text)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_moving_on_to_a_long_turn_shows_the_message_in_view_while_its_first_undecided_pair_is_selected(
    browser, live_server, admin_user, small_collection
):
    turn, nxt = small_collection.turns.get(turn_id="1_1"), small_collection.turns.get(turn_id="1_2")
    (last, _) = services.paraphrase_add(turn=turn, manual_text="What is throat cancer?", raw_text="What is it?")
    for i in range(25):  # a long table of decided pairs, then one still to decide
        m, r = services.paraphrase_add(turn=nxt, manual_text=f"Decided question {i}?", raw_text=f"Decided {i}?")
        Paraphrase.objects.filter(pk__in=[m.pk, r.pk]).update(status="approved")
    todo, _ = services.paraphrase_add(turn=nxt, manual_text="Is throat cancer curable?", raw_text="Is it curable?")
    browser_login(browser, live_server, "admin1", "pass-admin1")
    browser.get(f"{live_server.url}/turns/{turn.pk}/#p{last.pk}")
    _press(browser, "a")  # the last pair of 1_1: on to 1_2, far down its table
    page_wait(browser).until(ec.presence_of_element_located((By.CSS_SELECTOR, f"tr.pair-row.selected #p{todo.pk}")))
    message = browser.find_element(By.CSS_SELECTOR, ".messages")
    assert "on to turn 1_2" in message.text
    top, bottom = browser.execute_script(
        "const r = document.querySelector('.messages').getBoundingClientRect(); return [r.top, r.bottom];"
    )
    assert 0 <= top and bottom > 0, (top, bottom)  # in view, not scrolled away above the table
