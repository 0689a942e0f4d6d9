"""One branch-aware CAsT 2022 conversation in headless Chromium, through the curation turn page, the rating page and
the relevance judging page: each shows the path to the turn as the conversation so far — the System turns on it as
the system's side, the clarifying question marked — and never a turn of a sibling branch."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from ecast import services as ecast_services
from ecast.imports.services import import_file
from ecast.models import Paraphrase, Turn
from judging.models import AssessorJudgment
from judging.relevance import pools
from tests import factories
from tests.conftest import ARTIFACTS, browser_login
from tests.judging.relevance import helpers

# Topic 133 ("a pamper pack for my mom"): after 1-5 the system either answers (1-6, then the user asks 1-7 "How much
# would this cost?") or asks back "What beauty product would you like to make?" (3-1), and the user says 3-2.
CLARIFYING = "What beauty product would you like to make?"
SIBLING = "How much would this cost?"  # 133_1-7, on the branch beside 3-2
SIBLING_2 = "Can you tell me how to make the first one at home?"  # 133_2-1, another branch


def _label(browser, body, keys: str) -> None:
    """Press each labelling key once the previous label is saved (SQLite takes one writer at a time)."""
    for key in keys:
        body.send_keys(key)
        WebDriverWait(browser, 30).until(lambda d: d.find_element(By.ID, "save-summary").text == "All labels saved.")


def _login(browser, live_server, user: str) -> None:
    browser.delete_all_cookies()
    browser_login(browser, live_server, user, f"pass-{user}")


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_tree_turn_shows_its_own_path_on_the_curation_rating_and_judging_pages(
    browser, live_server, admin_user, rater, assessor, shared_data
):
    coll = import_file(kind="cast2022_topics", path=shared_data / "cast/2022/2022_evaluation_topics_tree_v1.0.json")
    coll = coll.collection
    lotion = Turn.objects.get(collection=coll, turn_id="133_3-2")
    cost = Turn.objects.get(collection=coll, turn_id="133_1-7")
    browser.set_window_size(1366, 900)
    wait = WebDriverWait(browser, 10)

    # Curation: the turn page's history is the path 1-1 … 1-5, 3-1.
    _login(browser, live_server, "admin1")
    browser.get(f"{live_server.url}/turns/{lotion.pk}/")
    history = browser.find_element(By.ID, "history")
    labels = [li.find_element(By.CLASS_NAME, "turn-label").text for li in history.find_elements(By.TAG_NAME, "li")]
    assert labels == ["1-1 · User", "1-2 · System", "1-3 · User", "1-4 · System", "1-5 · User", "3-1 · System"]
    assert (
        _shows_the_clarifying_question(history.text) and SIBLING not in history.text and SIBLING_2 not in history.text
    )
    assert "Turn 3-2 · User" in browser.find_element(By.ID, "tree-position").text
    browser.save_screenshot(str(ARTIFACTS / "tree-curation-turn-133_3-2.png"))

    # Rating: the item's "conversation so far" is the same path.
    ecast_services.paraphrase_add(
        turn=lotion,
        manual_text="My mum loves a good scented lotion, so let's make a scented lotion.",
        raw_text="My mum loves a good scented lotion. Let's make that.",
    )
    Paraphrase.objects.filter(turn=lotion).update(status="approved")
    c = factories.rating_campaign(coll, size=1, n=1, measures=("semantic_similarity", "conversational_entailment"))
    _login(browser, live_server, "rater1")
    browser.get(f"{live_server.url}/rating/campaigns/{c.pk}/rate/")
    conversation = browser.find_element(By.CSS_SELECTOR, ".rate-context ol.conversation")
    assert _shows_the_clarifying_question(conversation.text) and SIBLING not in conversation.text
    assert len(conversation.find_elements(By.TAG_NAME, "li")) == 6
    assert len(conversation.find_elements(By.CSS_SELECTOR, "li.system-turn")) == 3
    browser.save_screenshot(str(ARTIFACTS / "tree-rating-133_3-2.png"))

    # Relevance judging: one pair on 3-2 and one on 1-7; each shows its own branch.
    answers = {t.parent.turn_id: t.response_provenance for t in Turn.objects.filter(parent__in=[lotion, cost])}
    original = helpers.qrels(coll, {"133_1-1": {answers["133_1-7"][0]: 1}})
    run = helpers.run(coll, "A", {"133_3-2": answers["133_3-2"][:1], "133_1-7": answers["133_1-7"][:1]})
    pools.pool_create(collection=coll, qrels_version=original, runs=[run], name="Tree pool")
    _login(browser, live_server, "assessor1")
    browser.get(live_server.url + "/judging/relevance/")
    browser.find_element(By.XPATH, "//button[normalize-space()='Take a topic']").click()
    seen = {}
    for position in ("1 of 2", "2 of 2"):
        wait.until(ec.text_to_be_present_in_element((By.ID, "pair-pos"), position))
        turn_id = browser.find_element(By.ID, "pair-turn").text
        seen[turn_id] = browser.find_element(By.ID, "conversation").text
        # The branches part at the end of the conversation: show that end in the screenshot.
        current = browser.find_element(By.CSS_SELECTOR, "#conversation li.turn-current")
        browser.execute_script("arguments[0].scrollIntoView({block: 'end'})", current)
        browser.save_screenshot(str(ARTIFACTS / f"tree-judging-{turn_id}.png"))
        browser.find_element(By.TAG_NAME, "body").send_keys("2")
    assert set(seen) == {"133_3-2", "133_1-7"}
    assert _shows_the_clarifying_question(seen["133_3-2"]) and SIBLING not in seen["133_3-2"]
    assert SIBLING in seen["133_1-7"] and CLARIFYING not in seen["133_1-7"] and "3-1 · System" not in seen["133_1-7"]
    assert "1-6 · System" in seen["133_1-7"] and "1-6 · System" not in seen["133_3-2"]
    wait.until(ec.text_to_be_present_in_element((By.ID, "progress-text"), "2 / 2"))
    wait.until(lambda _: AssessorJudgment.objects.count() == 2)


def _shows_the_clarifying_question(text: str) -> bool:
    """The path's clarifying question is shown, marked as one."""
    return CLARIFYING in text and "Clarifying question" in text


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_an_admin_labels_a_tree_path_by_path_and_sees_each_path_s_exact_count(
    browser, live_server, admin_user, shared_data
):
    coll = import_file(kind="cast2022_topics", path=shared_data / "cast/2022/2022_evaluation_topics_tree_v1.0.json")
    conv = coll.collection.conversations.get(topic_id="132")
    wait = WebDriverWait(browser, 10)
    _login(browser, live_server, "admin1")
    browser.get(f"{live_server.url}/permutations/labels/conversation/{conv.pk}/?path=2-14")
    listed = browser.find_element(By.ID, "turns")
    assert len(listed.find_elements(By.CSS_SELECTOR, "li.label-turn")) == 9
    assert "Woah. They’re not all bad, right?" not in listed.text  # 1-7 lies on the path to 1-8
    body = browser.find_element(By.TAG_NAME, "body")
    # 1-3 FT; 2-1, 2-3, 2-5, 2-7 PT; 2-9 FT; 2-11 SE; 2-13 PT (the hand labels of the permutation tests).
    _label(browser, body, "fppppfsp")
    wait.until(ec.text_to_be_present_in_element((By.ID, "order-count"), "Valid orders: 144"))
    browser.execute_script("window.scrollTo(0, 0)")  # the forest and the count are at the top
    browser.save_screenshot(str(ARTIFACTS / "tree-labelling-132-path-2-14.png"))

    browser.find_element(By.LINK_TEXT, "to 3-8").click()
    wait.until(ec.text_to_be_present_in_element((By.ID, "current-path"), "to 3-8"))
    body = browser.find_element(By.TAG_NAME, "body")
    _label(browser, body, "ppsp")  # focus starts at 3-1, the first unlabelled turn of this path
    wait.until(ec.text_to_be_present_in_element((By.ID, "order-count"), "Valid orders: 4,320"))
    browser.execute_script("window.scrollTo(0, 0)")  # the forest and the count are at the top
    browser.save_screenshot(str(ARTIFACTS / "tree-labelling-132-path-3-8.png"))
    classes = dict(
        Turn.objects.filter(conversation=conv, participant="User").values_list("tree_number", "utterance_class")
    )
    assert (classes["1-3"], classes["2-7"], classes["2-11"], classes["3-5"], classes["3-7"]) == (
        "FT",
        "PT",
        "SE",
        "SE",
        "PT",
    )
    assert classes["1-5"] == classes["1-7"] == ""  # the path to 1-8 is not labelled yet


def _node_line(node) -> str:
    return node.find_element(By.CSS_SELECTOR, ":scope > .tree-turn-line").text


def _stretch_labels(stretch) -> list[str]:
    nodes = stretch.find_elements(By.CSS_SELECTOR, ":scope > li.tree-node")
    return [n.find_element(By.CSS_SELECTOR, ":scope > .tree-turn-line .turn-label").text for n in nodes]


def _branches(node) -> list:
    """The stretches of the branches that part after ``node``."""
    return node.find_elements(By.CSS_SELECTOR, ":scope > ul.tree-branches > li.tree-branch > ol.tree-stretch")


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_conversation_page_draws_the_tree_with_its_branches_and_marked_system_initiatives(
    browser, live_server, admin_user, shared_data
):
    coll = import_file(kind="cast2022_topics", path=shared_data / "cast/2022/2022_evaluation_topics_tree_v1.0.json")
    conv = coll.collection.conversations.get(topic_id="149")  # "Are search engines biased?"
    _login(browser, live_server, "admin1")
    browser.get(f"{live_server.url}/conversations/{conv.pk}/")
    tree = browser.find_element(By.ID, "conversation-tree")
    (root,) = tree.find_elements(By.CSS_SELECTOR, ":scope > ol.tree-stretch")
    assert _stretch_labels(root) == ["1-1 · User", "1-2 · System"]
    parting = root.find_elements(By.CSS_SELECTOR, ":scope > li.tree-node")[-1]
    assert "branch-point" in parting.get_attribute("class") and "2 branches" in _node_line(parting)

    ways, impartial = _branches(parting)
    assert _stretch_labels(ways) == ["1-3 · User", "1-4 · System"]
    assert _stretch_labels(impartial) == [f"3-{n} · {'User' if n % 2 else 'System'}" for n in range(1, 7)]
    # The system asks back (3-2) and makes suggestions (1-4, 3-6, 3-8); two of the suggestions part the tree.
    offer = ways.find_elements(By.CSS_SELECTOR, ":scope > li.tree-node")[-1]
    assert "Suggestion" in _node_line(offer) and "2 branches" in _node_line(offer)
    assert [_stretch_labels(b) for b in _branches(offer)] == [
        ["1-5 · User", "1-6 · System"],
        [f"2-{n} · {'User' if n % 2 else 'System'}" for n in range(1, 9)],
    ]
    asks = impartial.find_elements(By.CSS_SELECTOR, ":scope > li.tree-node")
    assert "Clarifying question" in _node_line(asks[1]) and "Do you mean, search neutrality?" in _node_line(asks[1])
    assert "Suggestion" in _node_line(asks[-1]) and "2 branches" in _node_line(asks[-1])
    alternatives, less_biased = _branches(asks[-1])
    assert _stretch_labels(alternatives) == ["3-7 · User", "3-8 · System", "3-9 · User", "3-10 · System"]
    assert "Suggestion" in alternatives.text and _stretch_labels(less_biased) == ["4-1 · User", "4-2 · System"]
    assert len(tree.find_elements(By.CSS_SELECTOR, "li.tree-node")) == conv.turns.count() == 26
    browser.save_screenshot(str(ARTIFACTS / "tree-conversation-149.png"))

    # Every node links to its turn.
    less_biased.find_element(By.LINK_TEXT, "4-1 · User").click()
    WebDriverWait(browser, 10).until(lambda d: "Turn 149_4-1" in d.find_element(By.TAG_NAME, "h1").text)
