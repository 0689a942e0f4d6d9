"""Permutations of a conversation tree (TREC CAsT 2022): every root-to-leaf path is permuted as a conversation of
its own, over the User turns along it. Counts on real CAsT 2022 paths are checked against brute force: every
ordering of the path's User turns tested one by one with the rules written out again here (not the module's)."""

from __future__ import annotations

import itertools
import json
import math

import pytest

from ecast import trees
from ecast.imports.services import import_file
from ecast.models import Turn
from evaluation.models import Permutation, PermutationResult, Qrel
from evaluation.permutations import orders as P
from evaluation.permutations import selectors as sel
from evaluation.permutations import services as svc
from tests import factories
from tests.ecast.imports.conftest import ok

TREE = "cast/2022/2022_evaluation_topics_tree_v1.0.json"

# SE/FT/PT of the 15 User turns of topic 132 (COP26), labelled by hand from their utterances; a class is relative
# to the turn's path (FT: needs the first turn, PT: needs the nearest SE before it on the path).
TOPIC_132 = {
    "1-1": "SE",  # "… Glasgow hosting COP26 last year … What was it about?"
    "1-3": "FT",  # "What are the effects of these changes?" (the climate changes of turn 1)
    "1-5": "PT",  # "That's rather vague. Can you be more specific?"
    "1-7": "PT",  # "Woah. They're not all bad, right?"
    "2-1": "PT",  # "That's interesting. Tell me more."
    "2-3": "PT",  # "Okay, but how does it affect developing countries?"
    "2-5": "PT",  # "How are developed countries helping with that?"
    "2-7": "PT",  # "Are they meeting them?"
    "2-9": "FT",  # "… is that related to last year's conference?" (COP26, turn 1)
    "2-11": "SE",  # "So what happens at each COP?"
    "2-13": "PT",  # "How are the two different?"
    "3-1": "PT",  # "Why?"
    "3-3": "PT",  # "How did other parties respond?"
    "3-5": "SE",  # "Where does the US stand now that Biden is president?"
    "3-7": "PT",  # "And how are they doing?"
}


def _paths_132(shared_data) -> dict[str, list[str]]:
    """Leaf → the User turns on its path, from the real tree file."""
    topic = next(t for t in json.loads((shared_data / TREE).read_text()) if t["number"] == 132)
    parents = {t["number"]: t.get("parent") for t in topic["turn"]}
    users = {t["number"] for t in topic["turn"] if t["participant"] == "User"}
    return {path[-1]: [n for n in path if n in users] for path in trees.root_to_leaf_paths(parents)}


def _valid_by_the_rules(order: tuple[str, ...], labels: list[tuple[str, str]]) -> bool:
    """DESIGN.md "Permutations", read literally: turn 1 first; the PTs of each SE (of turn 1 when no SE precedes
    them on the path) follow it at once, in any order."""
    first = labels[0][0]
    if order[0] != first:
        return False
    blocks: dict[str, set[str]] = {first: set()}
    head = first
    for n, cls in labels[1:]:
        if cls == "SE":
            head = n
            blocks[head] = set()
        elif cls == "PT":
            blocks[head].add(n)
    for head, pts in blocks.items():
        at = order.index(head)
        if set(order[at + 1 : at + 1 + len(pts)]) != pts:
            return False
    return True


@pytest.mark.parametrize(("leaf", "expected"), [("1-8", 2), ("2-14", 144)])
def test_a_real_path_s_count_equals_brute_force(shared_data, leaf, expected):
    path = _paths_132(shared_data)[leaf]
    labels = [(n, TOPIC_132[n]) for n in path]
    numbered = {n: i for i, n in enumerate(path, start=1)}  # the module takes turn numbers
    structure = P.structure_from_labels(P.path_labels([(numbered[n], c) for n, c in labels]))
    valid = [o for o in itertools.permutations(path) if _valid_by_the_rules(o, labels)]
    assert P.count_orders(structure) == len(valid) == expected
    assert sorted(P.enumerate_orders(structure)) == sorted(tuple(numbered[n] for n in o) for o in valid)
    # 2-14: turn 1's four PTs 4! × three units (FT 1-3, FT 2-9, SE 2-11 with its PT 2-13) 3! = 144.
    assert len(path) <= 9 and math.factorial(len(path)) >= len(valid)


def test_the_longest_path_counts_by_the_closed_form(shared_data):
    path = _paths_132(shared_data)["3-8"]
    labels = P.path_labels([(i, TOPIC_132[n]) for i, n in enumerate(path, start=1)])
    # Turn 1's six PTs (6!) × units 1-3, 2-9 and SE 3-5 with PT 3-7 (3!) = 4,320.
    assert P.count_orders(P.structure_from_labels(labels)) == math.factorial(6) * math.factorial(3) == 4320


def _labelled_132(shared_data, tmp_path):
    """The tree imported and topic 132 labelled through the utterance classes import (qid<TAB>utterance<TAB>class)."""
    coll = ok("cast2022_topics", shared_data / TREE).collection
    utterances = dict(Turn.objects.filter(collection=coll).values_list("turn_id", "raw_utterance"))
    labels = tmp_path / "labels_132.tsv"
    labels.write_text("".join(f"132_{n}\t{utterances[f'132_{n}']}\t{cls}\n" for n, cls in TOPIC_132.items()))
    assert ok("utterance_labels", labels, collection=coll).counts["turns_updated"] == 15
    system = tmp_path / "system.tsv"
    system.write_text("132_1-2\tThe COP26 event …\tSE\n")
    refused = import_file(kind="utterance_labels", path=system, collection=coll)
    assert [e["reason"] for e in refused.errors] == ["132_1-2 is a System turn: only User turns have a class"]
    return coll


@pytest.mark.django_db
def test_an_experiment_permutes_each_path_of_a_tree_on_its_own(shared_data, tmp_path):
    coll = _labelled_132(shared_data, tmp_path)
    conv = coll.conversations.get(topic_id="132")
    exp = svc.permutation_experiment_create(
        collection=coll,
        name="tree",
        qrels_version=factories.qrels_version(coll),
        systems=[],
        k=200,
        conversations=[conv],
        start=False,
    )
    rows = list(Permutation.objects.filter(experiment=exp).order_by("index"))
    by_path = {path: [p for p in rows if p.path == path] for path in ("1-8", "2-14", "3-8")}
    assert {p.path for p in rows} == set(by_path)
    # Every valid order plus the (invalid: an FT sits between turn 1 and its PTs) original; 3-8 samples k of 4,320.
    assert [len(by_path[p]) for p in ("1-8", "2-14", "3-8")] == [3, 145, 201]
    numbers = dict(Turn.objects.filter(conversation=conv).values_list("tree_number", "number"))
    for leaf, path in _paths_132(shared_data).items():
        perms = by_path[leaf]
        assert perms[0].is_original and perms[0].order == [numbers[n] for n in path]
        assert sum(p.is_original for p in perms) == 1
        assert all(sorted(p.order) == sorted(numbers[n] for n in path) for p in perms)
        assert len({tuple(p.order) for p in perms}) == len(perms)
    assert [p.index for p in rows] == list(range(len(rows)))
    # Every analysis reads each path as a conversation (topic) of its own.
    PermutationResult.objects.bulk_create(PermutationResult(permutation=p, system="bm25", mean=0.5) for p in rows)
    frame = sel.experiment_frame(experiment=exp)
    assert sorted(frame["topic"].unique()) == ["132/1-8", "132/2-14", "132/3-8"]
    assert frame.groupby("topic")["is_original"].sum().to_dict() == {"132/1-8": 1, "132/2-14": 1, "132/3-8": 1}
    summary = {s["path"]: s for s in sel.experiment_conversation_summary(experiment=exp)}
    assert {k: (v["valid_orders"], v["sampled"], v["original_valid"]) for k, v in summary.items()} == {
        "1-8": (2, 3, False),
        "2-14": (144, 145, False),
        "3-8": (4320, 201, False),
    }


@pytest.mark.django_db
def test_a_turn_depends_on_its_own_path(shared_data, tmp_path):
    coll = _labelled_132(shared_data, tmp_path)
    svc.conversation_dependencies_refresh(conversation=coll.conversations.get(topic_id="132"))
    deps = dict(Turn.objects.filter(conversation__topic_id="132").values_list("tree_number", "depends_on__tree_number"))
    # 3-1's path has no SE after turn 1, so it depends on 1-1, not on 2-11 (earlier in the file, another branch).
    assert (deps["3-7"], deps["2-13"], deps["3-1"], deps["2-9"], deps["1-2"]) == ("3-5", "2-11", "1-1", "1-1", None)


@pytest.mark.django_db
def test_the_labelling_page_shows_one_path_with_the_system_side(client, admin_user, shared_data):
    coll = ok("cast2022_topics", shared_data / TREE).collection
    conv = coll.conversations.get(topic_id="132")
    client.force_login(admin_user)
    html = client.get(f"/permutations/labels/conversation/{conv.pk}/?path=2-14").content.decode()
    assert 'id="current-path">to 2-14<' in html and "?path=3-8" in html and "?path=1-8" in html
    listed = html[html.index('id="turns"') : html.index("</ol>", html.index('id="turns"'))]
    assert listed.count('class="label-turn"') == 9 and 'data-label="2-13"' in listed
    assert "Woah. They’re not all bad, right?" not in listed  # 1-7 is on the path to 1-8
    assert "The COP26 event is a global united Nations summit" in listed  # System 1-2, the system's side


@pytest.mark.django_db
def test_each_path_is_retrieved_and_scored_over_its_own_turns(
    shared_data, tmp_path, settings, django_capture_on_commit_callbacks
):
    settings.ECAST_CACHE_DIR = tmp_path / "cache"
    coll = _labelled_132(shared_data, tmp_path)
    # A real corpus to search, imported for the collection (iKAT passages; CAsT 2022's own are not in the shared
    # data) and qrels from the passages the System answers were written from.
    ok("passages_jsonl", shared_data / "ikat/2023/2023_train_topics_psg_text.jsonl", collection=coll)
    version = factories.qrels_version(coll)
    answers = Turn.objects.filter(collection=coll, conversation__topic_id="132", participant="System")
    Qrel.objects.bulk_create(
        Qrel(version=version, turn=a.parent, passage_id=pid, grade=4)
        for a in answers.select_related("parent")
        for pid in a.response_provenance
    )
    with django_capture_on_commit_callbacks(execute=True):
        exp = svc.permutation_experiment_create(
            collection=coll,
            name="tree",
            qrels_version=version,
            systems=["current", "cu"],
            k=3,
            corpus="all",
            conversations=[coll.conversations.get(topic_id="132")],
        )
    exp.refresh_from_db()
    assert exp.status == "succeeded", exp.error
    paths = _paths_132(shared_data)
    results = PermutationResult.objects.filter(permutation__experiment=exp).select_related("permutation")
    assert results.count() == 2 * Permutation.objects.filter(experiment=exp).count() == 2 * (3 + 4 + 4)
    for r in results:
        on_path = {f"132_{n}" for n in paths[r.permutation.path]}
        assert set(r.queries) == on_path and set(r.per_turn) <= on_path and r.mean is not None
