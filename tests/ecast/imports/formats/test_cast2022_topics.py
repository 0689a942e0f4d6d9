"""TREC CAsT 2022 conversation trees from the real files: the tree and the flattened file import to the same User
and System turns with their parents and branch-aware numbers; qrels and runs of ``<topic>_<number>`` ids import
against those turns; a bad file writes nothing."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from django.urls import reverse

from ecast import trees
from ecast.imports.formats import cast2022_topics
from ecast.imports.services import import_file
from ecast.models import Collection, Conversation, ImportJob, Turn
from evaluation.models import Qrel
from tests.ecast.imports.conftest import ok

pytestmark = pytest.mark.django_db

TREE = "2022/2022_evaluation_topics_tree_v1.0.json"
FLAT = "2022/2022_evaluation_topics_flattened_duplicated_v1.0.json"
TURN_IDS = "2022/2022_evaluation_topics_turn_ids.json"


def _shape(collection: Collection) -> set[tuple]:
    """Every turn as (id, parent id, participant, utterance, rewrite, response, mixed initiative)."""
    return set(
        Turn.objects.filter(collection=collection).values_list(
            "turn_id",
            "parent__turn_id",
            "participant",
            "raw_utterance",
            "manual_rewrite",
            "canonical_response_text",
            "mixed_initiative",
        )
    )


def _paths(collection: Collection) -> list[list[str]]:
    paths = []
    for conv in Conversation.objects.filter(collection=collection):
        parents = dict(conv.turns.values_list("tree_number", "parent__tree_number"))
        paths += [[f"{conv.topic_id}_{n}" for n in p] for p in trees.root_to_leaf_paths(parents)]
    return paths


def test_the_tree_file_imports_18_topics_50_paths_and_408_user_and_system_turns(cast):
    job = ok("cast2022_topics", cast / TREE)
    coll = Collection.objects.get(name="CAsT 2022")
    assert job.collection == coll and coll.year == 2022 and coll.relevance_threshold == 2
    assert {k: job.counts[k] for k in ("topics", "paths", "turns", "user_turns", "system_turns")} == {
        "topics": 18,
        "paths": 50,
        "turns": 408,
        "user_turns": 205,
        "system_turns": 203,
    }
    assert (job.counts["clarifications"], job.counts["suggestions"], job.counts["turns_created"]) == (9, 3, 408)
    assert [w["reason"] for w in job.counts["warnings"] if w.get("kind") == "provenance"] == [
        f"topic 149, turn {n}: passage id 'MARCO_50_2268879788 -3' in 'provenance' contains a space"
        for n in ("1-4", "1-6")
    ]
    assert Conversation.objects.filter(collection=coll).count() == 18 and len(_paths(coll)) == 50
    # The user turns are exactly the turns CAsT 2022 evaluates (its turn ids file).
    listed = json.loads((cast / TURN_IDS).read_text())
    users = set(Turn.objects.filter(collection=coll, participant="User").values_list("turn_id", flat=True))
    assert users == {f"{topic}_{n}" for topic, numbers in listed.items() for n in numbers}

    first = Turn.objects.get(collection=coll, turn_id="132_1-1")
    answer = Turn.objects.get(collection=coll, turn_id="132_1-2")
    assert (first.participant, first.parent, first.tree_number, first.number) == ("User", None, "1-1", 1)
    assert first.raw_utterance.startswith("I remember Glasgow hosting COP26 last year")
    assert first.manual_rewrite.endswith("What was the conference about?")
    assert (answer.participant, answer.parent, answer.raw_utterance, answer.label) == ("System", first, "", "1-2")
    assert answer.canonical_response_text.startswith("The COP26 event is a global united Nations summit")
    assert answer.response_provenance == ["MARCO_26_222804180-1", "MARCO_26_222804180-2", "MARCO_33_1621342262-1"]
    # Branches share a parent: 133's third branch is an alternative System answer (a clarifying question) to 1-5.
    ask = Turn.objects.get(collection=coll, turn_id="133_3-1")
    assert (ask.parent.turn_id, ask.participant, ask.mixed_initiative) == ("133_1-5", "System", "clarification")
    assert ask.canonical_response_text == "What beauty product would you like to make?"
    assert sorted(ask.parent.children.values_list("tree_number", flat=True)) == ["1-6", "3-1"]
    offer = Turn.objects.get(collection=coll, turn_id="149_3-6")
    assert offer.mixed_initiative == "suggestion" and offer.canonical_response_text.endswith("know about them?")
    # Parents always have lower numbers than their children: ordering a path by number keeps its order.
    assert all(t.parent.number < t.number for t in Turn.objects.filter(collection=coll, parent__isnull=False))


def test_reimporting_the_tree_changes_nothing(cast):
    ok("cast2022_topics", cast / TREE)
    again = ok("cast2022_topics", cast / TREE)
    assert (again.counts["turns_created"], again.counts["turns_updated"], again.counts["conversations_created"]) == (
        0,
        0,
        0,
    )
    assert Turn.objects.count() == 408


def test_the_flattened_file_recovers_the_same_turns_and_paths(cast):
    flat = ok("cast2022_topics", cast / FLAT, collection=Collection.objects.create(name="flat", year=2022))
    tree = ok("cast2022_topics", cast / TREE)
    assert flat.counts["layout"] == "flattened" and tree.counts["layout"] == "tree"
    for key in ("topics", "paths", "turns", "user_turns", "system_turns", "clarifications", "suggestions"):
        assert flat.counts[key] == tree.counts[key], key
    assert _shape(flat.collection) == _shape(tree.collection)
    assert sorted(_paths(flat.collection)) == sorted(_paths(tree.collection))
    # The two public files disagree on one passage id of one System turn; each import keeps its own file's.
    differ = {
        t: (
            Turn.objects.get(collection=tree.collection, turn_id=t).response_provenance,
            Turn.objects.get(collection=flat.collection, turn_id=t).response_provenance,
        )
        for t in Turn.objects.filter(collection=tree.collection).values_list("turn_id", flat=True)
    }
    differ = {t: pair for t, pair in differ.items() if pair[0] != pair[1]}
    assert list(differ) == ["149_4-2"] and differ["149_4-2"][0][-1] == "MARCO_23_183358734-31"
    assert differ["149_4-2"][1][-1] == "MARCO_23_183358734-3"


def test_the_flattened_system_numbers_match_the_tree_file(cast):
    tree = cast2022_topics.parse_cast2022_tree((cast / TREE).read_text(), file="tree")
    flat = cast2022_topics.parse_cast2022_flattened((cast / FLAT).read_text(), file="flat")
    assert not tree.errors and not flat.errors
    assert {w["kind"] for w in flat.warnings} == {"provenance"}  # no path lost in the merge
    numbers = Counter[str]()
    for parsed in (tree, flat):
        for topic in parsed.records:
            numbers.update(f"{topic['number']}_{t['number']}" for t in topic["turns"] if t["participant"] == "System")
    assert len(numbers) == 203 and set(numbers.values()) == {2}


def _qrels_from_provenance(cast: Path, tmp: Path) -> Path:
    """Qrels for the real CAsT 2022 user turns: each turn's passages are those its System answers were written from
    (the 2022 qrels are not in the shared data), graded 4."""
    lines = []
    for topic in json.loads((cast / TREE).read_text()):
        turns = {t["number"]: t for t in topic["turn"]}
        for t in topic["turn"]:
            if t["participant"] == "System" and turns[t["parent"]]["participant"] == "User":
                # One id of the file has a space in it ("MARCO_50_2268879788 -3"); the import warns about it.
                lines += [f"{topic['number']}_{t['parent']} 0 {pid} 4\n" for pid in t["provenance"] if " " not in pid]
    path = tmp / "2022_provenance.qrels"
    path.write_text("".join(lines))
    return path


def test_qrels_and_runs_with_branch_aware_ids_import_against_the_tree_turns(cast, tmp_path):
    coll = ok("cast2022_topics", cast / TREE).collection
    qrels = _qrels_from_provenance(cast, tmp_path)
    job = ok("qrels", qrels, collection=coll)
    judged = set(Qrel.objects.filter(version__collection=coll).values_list("turn__turn_id", flat=True))
    assert "132_1-1" in judged and "133_1-5" in judged and all(t.count("_") == 1 and "-" in t for t in judged)
    assert job.counts["turns"] == len(judged) and Turn.objects.filter(collection=coll).count() == 408
    # Without a collection the ids themselves find it.
    assert ok("qrels", qrels, options={"version": "inferred"}).collection == coll
    run = tmp_path / "2022.run"
    run.write_text("132_1-1 Q0 MARCO_26_222804180-1 1 9.5 bm25\n133_2-1 Q0 MARCO_0 1 9.0 bm25\n")
    assert ok("run", run, collection=coll).counts["turns"] == 2


def _bad_tree(cast: Path, tmp: Path, change) -> Path:
    data = json.loads((cast / TREE).read_text())
    change(data)
    path = tmp / "tree.json"
    path.write_text(json.dumps(data, indent=4))
    return path


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda d: d[0]["turn"][3].update(parent="9-9"), "topic 132, turn 1-4: 'parent' '9-9' is not an earlier turn"),
        (lambda d: d[1]["turn"][2].update(participant="Bot"), "topic 133, turn 1-3: 'participant' must be \"User\""),
        (lambda d: d[2]["turn"][-1].update(number=45), "topic 134, turn #29: 'number' must be a branch-aware turn"),
        (lambda d: d[3]["turn"][1].pop("response"), "topic 135, turn 1-2: missing 'response'"),
    ],
)
def test_a_bad_tree_turn_is_reported_with_its_line_and_nothing_is_written(cast, tmp_path, change, reason):
    job = import_file(kind="cast2022_topics", path=_bad_tree(cast, tmp_path, change))
    assert job.status == ImportJob.Status.FAILED
    assert [e["reason"][: len(reason)] for e in job.errors] == [reason]
    assert job.errors[0]["line"] > 1
    assert not Turn.objects.exists() and not Conversation.objects.exists()


def test_a_flattened_file_whose_paths_disagree_is_refused_with_the_line(cast, tmp_path):
    data = json.loads((cast / FLAT).read_text())
    data[1]["turn"][0]["utterance"] = "Something else entirely?"  # 132 1-1 on its second path
    path = tmp_path / "flat.json"
    path.write_text(json.dumps(data, indent=4))
    job = import_file(kind="cast2022_topics", path=path)
    assert job.status == ImportJob.Status.FAILED and not Turn.objects.exists()
    assert [e["reason"] for e in job.errors] == [
        "topic 132 path 2, turn 1-1: its raw utterance differs from the same turn on an earlier path"
    ]
    assert job.errors[0]["line"] > 1


AUTO_TREE = "2022/2022_automatic_evaluation_topics_tree_v1.0.json"
AUTO_FLAT = "2022/2022_automatic_evaluation_topics_flattened_duplicated_v1.0.json"


@pytest.mark.parametrize("name", [AUTO_TREE, AUTO_FLAT])
def test_the_automatic_files_store_every_user_turns_automatic_rewrite(cast, name):
    job = ok("cast2022_topics", cast / name)
    users = Turn.objects.filter(collection=job.collection, participant="User")
    assert users.count() == 205 and not users.filter(automatic_rewrite="").exists()
    assert job.counts["automatic_rewrites"] == 205 and job.counts["manual_rewrites"] == 0
    first = users.get(turn_id="132_1-1")
    source = json.loads((cast / name).read_text())[0]["turn"][0]
    assert first.automatic_rewrite == source["automatic_rewritten_utterance"].strip()
    assert "ignored_fields" not in job.counts  # every field of the file is stored


def test_the_manual_and_the_automatic_file_together_keep_both_rewrites(cast):
    ok("cast2022_topics", cast / TREE)
    again = ok("cast2022_topics", cast / AUTO_TREE)
    assert again.counts["turns_created"] == 0 and again.counts["turns_updated"] == 205
    first = Turn.objects.get(turn_id="132_1-1")
    assert first.manual_rewrite.endswith("What was the conference about?") and first.automatic_rewrite
    assert ok("cast2022_topics", cast / TREE).counts["turns_updated"] == 0  # the manual file leaves them be


def test_fields_the_import_does_not_store_are_listed_as_ignored(cast, tmp_path, admin_client):
    data = json.loads((cast / TREE).read_text())
    data[0]["year"] = 2022
    data[0]["turn"][0]["speaker_mood"] = "curious"
    data[0]["turn"][2]["speaker_mood"] = "calm"
    path = tmp_path / "tree.json"
    path.write_text(json.dumps(data, indent=1))
    job = ok("cast2022_topics", path)
    assert job.counts["ignored_fields"] == {"User turn.speaker_mood": 2, "topic.year": 1}
    assert [w["reason"] for w in job.counts["warnings"] if w.get("kind") == "ignored field"] == [
        "field 'speaker_mood' of 2 User turn(s) is not stored (ignored)",
        "field 'year' of 1 topic(s) is not stored (ignored)",
    ]
    page = admin_client.get(reverse("import-job", args=[job.pk])).content.decode()
    assert "<th>ignored_fields</th><td>User turn.speaker_mood (2), topic.year (1)</td>" in page
