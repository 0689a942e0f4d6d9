"""One history for every feature: the path to a turn. In a CAsT 2022 tree it holds the turn's User and System
ancestors and never a turn of a sibling branch (even one earlier in the file); a linear conversation's history is
every earlier turn, as before. Checked on the real files for curation, generation (CQR context), rating,
negative-feedback detection and test-set export."""

from __future__ import annotations

import json

import pytest

from ecast import selectors
from ecast.generation import processing, testsets
from ecast.generation import services as generation
from ecast.models import Collection, Turn
from judging.models import Campaign
from judging.rating.sampling import item_from_paraphrase
from tests import factories
from tests.ecast.imports.conftest import ok

pytestmark = pytest.mark.django_db

TREE = "cast/2022/2022_evaluation_topics_tree_v1.0.json"


@pytest.fixture
def tree(shared_data) -> Collection:
    return ok("cast2022_topics", shared_data / TREE).collection


def _turn(coll: Collection, turn_id: str) -> Turn:
    return Turn.objects.get(collection=coll, turn_id=turn_id)


def _ids(turns) -> list[str]:
    return [t.turn_id for t in turns]


def test_a_tree_turn_s_history_is_its_path_not_the_sibling_branch(tree):
    lotion = _turn(tree, "133_3-2")  # answers the clarifying question 3-1, an alternative to 1-6
    assert _ids(selectors.turn_history(turn=lotion)) == [
        "133_1-1",
        "133_1-2",
        "133_1-3",
        "133_1-4",
        "133_1-5",
        "133_3-1",
    ]
    assert _ids(selectors.turn_history(turn=lotion, users_only=True)) == ["133_1-1", "133_1-3", "133_1-5"]
    # 1-6 … 2-4 come before 3-2 in the file but lie on other branches.
    earlier = Turn.objects.filter(conversation=lotion.conversation, number__lt=lotion.number)
    assert {"133_1-6", "133_1-7", "133_2-1"} <= set(_ids(earlier))
    assert selectors.turn_history(turn=_turn(tree, "133_1-1")) == []


def test_a_linear_conversation_keeps_every_earlier_turn_as_history(shared_data):
    coll = ok("cast_topics", shared_data / "cast/2019/evaluation_topics_v1.0.json").collection
    third = _turn(coll, "31_3")
    assert _ids(selectors.turn_history(turn=third)) == ["31_1", "31_2"]
    assert _ids(selectors.turn_history(turn=third, users_only=True)) == ["31_1", "31_2"]
    assert selectors.path_entry(third) == {"number": 3, "text": third.raw_utterance}


def test_the_turn_page_shows_the_path_with_the_system_side(client, admin_user, tree):
    client.force_login(admin_user)
    html = client.get(f"/turns/{_turn(tree, '133_3-2').pk}/").content.decode()
    history = html[html.index('id="history"') : html.index("</ol>", html.index('id="history"'))]
    assert 'data-turn-id="133_3-1"' in history and "What beauty product would you like to make?" in history
    assert "Clarifying question" in history and 'data-turn-id="133_1-6"' not in history
    assert "Turn <strong>3-2</strong> · User" in html


def test_the_cqr_context_is_the_users_earlier_utterances_on_the_path(tree, monkeypatch):
    seen = []

    def capture(turn_input, *args, **kwargs):
        seen.append(turn_input)
        raise RuntimeError("stop after reading the input")

    monkeypatch.setattr(processing, "run_turn", capture)
    job = generation.generation_job_create(collection=tree, selection={"turns": ["133_3-2"]})
    processing.generation_turn_process(gen_turn_id=job.turns.get().pk)
    assert seen[0].history == [_turn(tree, t).raw_utterance for t in ("133_1-1", "133_1-3", "133_1-5")]
    assert seen[0].history_manual[-1] == _turn(tree, "133_1-5").manual_rewrite
    # Each user turn's response is the System turn that answers it on the path.
    responses = [_turn(tree, t).canonical_response_text for t in ("133_1-2", "133_1-4", "133_3-1")]
    assert seen[0].history_responses == responses and all(responses)


def test_generation_selects_user_turns_only(tree):
    job = generation.generation_job_create(collection=tree, selection={"conversations": ["133"]})
    assert job.turns.count() == 10 and not job.turns.filter(turn__participant="System").exists()


def test_the_rating_item_s_conversation_so_far_is_the_path(tree):
    turn = _turn(tree, "133_3-2")
    para = factories.paraphrase(turn, "My mother loves scented lotion; let's make that.")
    item = item_from_paraphrase(Campaign(name="c"), para, position=0)
    # c_i of a tree User turn is the System turn that answers it (3-3 here).
    assert item.passage_text.startswith("You can easily make your own scented lotions") and item.passage_id == ""
    history = item.context["history"]
    assert [h["label"] for h in history] == ["1-1", "1-2", "1-3", "1-4", "1-5", "3-1"]
    assert history[-1] == {
        "number": _turn(tree, "133_3-1").number,
        "text": "What beauty product would you like to make?",
        "label": "3-1",
        "participant": "System",
        "mixed_initiative": "clarification",
    }


def test_negative_feedback_blames_the_response_on_its_own_path(tree):
    # 139 2-1 "No, not the song." follows the System turn 1-2; the turn before it in the file is 1-8.
    generation.turn_preprocess_conversation(conversation=_turn(tree, "139_2-1").conversation)
    assert _turn(tree, "139_1-2").canonical_response_unreliable
    assert not _turn(tree, "139_1-8").canonical_response_unreliable


def test_a_tree_test_set_exports_in_the_tree_layout_and_imports_back(tree, tmp_path):
    for turn in Turn.objects.filter(collection=tree, participant="User"):
        factories.paraphrase(turn, f"P {turn.turn_id}", status="approved", origin="added")
    (test_set,) = testsets.test_sets_create(collection=tree, kind="manual", n_sets=1, seed=3)
    topics = testsets.test_set_export(test_set=test_set)
    first = topics[1]["turn"][:2]
    assert first[0]["manual_rewritten_utterance"] == "P 133_1-1" and first[0]["participant"] == "User"
    assert first[1]["participant"] == "System" and first[1]["parent"] == "1-1" and "response" in first[1]
    path = tmp_path / "test_set.json"
    path.write_text(json.dumps(topics))
    again = ok("cast2022_topics", path, collection=factories.collection("back", 2022))
    assert (again.counts["turns"], again.counts["paths"], again.counts["user_turns"]) == (408, 50, 205)
    assert _turn(again.collection, "133_3-2").manual_rewrite == "P 133_3-2"
    assert _turn(again.collection, "133_3-2").parent.turn_id == "133_3-1"


def test_the_turn_api_gives_a_tree_turn_s_participant_parent_and_number(admin_api, tree):
    body = admin_api.get(f"/api/turns/{_turn(tree, '133_3-1').pk}/").json()
    assert (body["participant"], body["parent_turn_id"], body["tree_number"]) == ("System", "133_1-5", "3-1")
    assert body["mixed_initiative"] == "clarification" and body["raw_utterance"] == ""
    assert body["canonical_response_text"] == "What beauty product would you like to make?"
    first = admin_api.get(f"/api/turns/{_turn(tree, '133_1-1').pk}/").json()
    assert (first["participant"], first["parent"], first["parent_turn_id"]) == ("User", None, None)


def test_a_raw_test_set_run_reformulates_each_turn_given_its_own_path(tree):
    from evaluation.permutations import retrieval
    from evaluation.robustness import services as robustness

    users = Turn.objects.filter(collection=tree, participant="User")
    for turn in users:
        factories.paraphrase(turn, turn.raw_utterance, kind="raw", status="approved", origin="added")
    (test_set,) = testsets.test_sets_create(collection=tree, kind="raw", n_sets=1, seed=1)
    plan = robustness.test_set_plan(test_set=test_set)
    assert set(plan.queries) == set(users.values_list("turn_id", flat=True))  # 205 queries, none for System turns
    lotion = _turn(tree, "133_3-2")
    path = [*selectors.turn_history(turn=lotion, users_only=True), lotion]
    expected = retrieval.queries_for_order(
        "rewrite", [t.number for t in path], {t.number: t.raw_utterance for t in path}
    )
    assert plan.queries["133_3-2"] == expected[lotion.number]


def test_the_conversation_page_lists_system_turns_as_the_system_side(client, admin_user, tree):
    client.force_login(admin_user)
    conv = _turn(tree, "133_3-1").conversation
    html = client.get(f"/conversations/{conv.pk}/").content.decode()
    assert html.count('<tr class="system-turn">') == 11 and "System · after 1-5" in html
    assert "Clarifying question" in html and "What beauty product would you like to make?" in html
