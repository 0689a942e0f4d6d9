"""TREC iKAT topics, 2023–2025: conversations, turns and each user's PTKB from the real files; the turns take the
qrels and runs that name them, the passage texts come through the corpus import, and a bad record writes nothing."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from ecast.imports.formats import ikat_topics
from ecast.imports.services import import_file
from ecast.models import Collection, Conversation, ImportJob, Passage, PtkbStatement, Turn
from evaluation.models import Qrel
from tests.ecast.imports.conftest import ok

pytestmark = pytest.mark.django_db

IKAT_2025 = Path(__file__).parent.parent / "data" / "ikat_2025" / "2025_test_topics.json.gz"


@pytest.fixture
def ikat(shared_data) -> Path:
    return shared_data / "ikat"


def _counts(collection: Collection) -> tuple[int, int, int]:
    return (
        Conversation.objects.filter(collection=collection).count(),
        Turn.objects.filter(collection=collection).count(),
        PtkbStatement.objects.filter(conversation__collection=collection).count(),
    )


def test_the_2023_train_and_test_topics_make_one_collection_with_each_users_ptkb(ikat):
    train = ok("ikat_topics", ikat / "2023/2023_train_topics.json")
    test = ok("ikat_topics", ikat / "2023/2023_test_topics.json")
    coll = Collection.objects.get(name="iKAT 2023")
    assert train.collection == test.collection == coll and coll.year == 2023
    assert (train.counts["topics"], train.counts["turns_created"], train.counts["ptkb_statements"]) == (11, 95, 101)
    assert (test.counts["topics"], test.counts["turns_created"], test.counts["ptkb_statements"]) == (25, 332, 262)
    assert train.counts["year"] == test.counts["year"] == 2023
    assert _counts(coll) == (36, 427, 363)

    first = Turn.objects.get(collection=coll, turn_id="1-1_1")
    assert first.conversation.topic_id == "1-1" and first.conversation.title == "Finding a university"
    assert first.raw_utterance.startswith("I want to start my master's degree")
    assert first.canonical_response_text.startswith("Do you want to continue your bachelor's studies")
    assert first.canonical_response_id == "" and first.ptkb_provenance == [5] and first.response_provenance == []
    statements = list(first.conversation.ptkb.values_list("number", "text"))
    assert len(statements) == 11 and statements[4] == (5, "I have a bachelor's degree in computer science.")
    # Several conversations share a topic number (one per user); each has its own PTKB.
    nine = Conversation.objects.filter(collection=coll, topic_id__startswith="9-")
    assert sorted(nine.values_list("topic_id", flat=True)) == ["9-1", "9-2"]
    assert nine.get(topic_id="9-1").ptkb.count() and nine.get(topic_id="9-2").ptkb.count()
    with_provenance = Turn.objects.filter(collection=coll).exclude(response_provenance=[])
    assert all(":" in pid for t in with_provenance for pid in t.response_provenance)


def test_the_2024_topics_number_conversations_by_integer(ikat):
    job = ok("ikat_topics", ikat / "2024/2024_test_topics.json")
    coll = Collection.objects.get(name="iKAT 2024")
    assert job.counts["year"] == 2024 and _counts(coll) == (17, 218, 288)
    turn = Turn.objects.get(collection=coll, turn_id="0_1")
    assert turn.conversation.topic_id == "0" and turn.conversation.title == "Traveling to Egypt"
    assert turn.response_provenance == ["clueweb22-en0017-23-13494:0"] and turn.ptkb_provenance == []
    assert turn.conversation.ptkb.get(number=12).text == "I am from San Francisco, California."


def test_the_2025_layout_is_read_too_and_its_ptkb_texts_become_statement_numbers():
    job = ok("ikat_topics", IKAT_2025)
    coll = Collection.objects.get(name="iKAT 2025")
    assert job.counts["year"] == 2025 and _counts(coll) == (17, 188, 337)
    conv = Conversation.objects.get(collection=coll, topic_id="1-1")
    statements = dict(conv.ptkb.values_list("number", "text"))
    assert statements[1] == "I want to stop doom scrolling." and len(statements) == 21  # a list: n-th is number n
    third = Turn.objects.get(collection=coll, turn_id="1-1_3")
    assert third.raw_utterance == "How about the fruits I mentioned before?"
    assert third.manual_rewrite == "How are the fruits I mentioned before for acid reflux?"
    assert [statements[n] for n in third.ptkb_provenance] == [
        "I enjoy apple, kiwi, and watermelon.",
        "I spent last summer in Brazil and since then love fresh mangoes and pomegranates.",
    ]
    assert third.response_provenance[0] == "clueweb22-en0026-73-16809:6" and len(third.response_provenance) == 4


def test_a_passage_cited_twice_is_kept_twice_and_the_repeat_is_reported():
    source = json.loads(gzip.decompress(IKAT_2025.read_bytes()))
    listed = {
        f"{topic['number']}_{turn['turn_id']}": turn["citations"] for topic in source for turn in topic["responses"]
    }
    job = ok("ikat_topics", IKAT_2025)
    stored = dict(Turn.objects.filter(collection=job.collection).values_list("turn_id", "response_provenance"))
    assert stored == listed  # every citation, in the file's order, repeats included
    assert (len(stored["2-1_12"]), len(stored["3-1_8"])) == (7, 2)
    assert job.counts["citations"] == sum(map(len, listed.values()))
    repeated = [w["reason"] for w in job.counts["warnings"] if w.get("kind") == "repeated"]
    assert len(repeated) == 2
    assert repeated[0].startswith("topic 2-1, turn 12: 'citations' cites ") and "kept as listed" in repeated[0]
    assert repeated[1] == f"topic 3-1, turn 8: 'citations' cites {listed['3-1_8'][0]} more than once; kept as listed"


def test_reimporting_a_file_changes_nothing_and_a_changed_file_updates_turns_and_ptkb(ikat, tmp_path):
    path = ikat / "2023/2023_train_topics.json"
    ok("ikat_topics", path)
    again = ok("ikat_topics", path)
    assert again.counts["turns_created"] == again.counts["turns_updated"] == 0
    assert again.counts["conversations_created"] == again.counts["ptkb_conversations_written"] == 0
    topics = json.loads(path.read_text())
    topics[0]["ptkb"]["3"] = "I'm allergic to shellfish."
    topics[0]["turns"][1]["resolved_utterance"] = "Which computer science master's programmes suit me?"
    changed = tmp_path / "2023_train_topics.json"
    changed.write_text(json.dumps(topics, indent=4))
    job = ok("ikat_topics", changed)
    assert job.counts["turns_updated"] == 1 and job.counts["ptkb_conversations_written"] == 1
    conv = Conversation.objects.get(topic_id="1-1")
    assert conv.ptkb.get(number=3).text == "I'm allergic to shellfish." and conv.ptkb.count() == 11
    assert Turn.objects.get(turn_id="1-1_2").manual_rewrite.startswith("Which computer science")


def _line_before(text: str, needle: str, occurrence: int = 1) -> int:
    """The line before the ``occurrence``-th ``needle``: where its object's brace is (json.dumps(indent=4))."""
    at = -1
    for _ in range(occurrence):
        at = text.index(needle, at + 1)
    return text[:at].count("\n")


def test_bad_records_are_each_reported_with_file_line_and_reason_and_nothing_is_written(ikat, tmp_path):
    topics = json.loads((ikat / "2023/2023_train_topics.json").read_text())
    topics[0]["turns"][2]["ptkb_provenance"] = [5, 99]
    del topics[1]["turns"][0]["utterance"]
    topics[3]["number"] = "1-2"  # the number of topic #2
    topics[4]["ptkb"]["x"] = "I have no number."
    path = tmp_path / "ikat_broken.json"
    text = json.dumps(topics, indent=4)
    path.write_text(text)
    job = import_file(kind="ikat_topics", path=path)
    assert job.status == ImportJob.Status.FAILED
    topic_2 = _line_before(text, '"number": "1-2"')
    assert [(e["file"], e["line"], e["reason"]) for e in job.errors] == [
        (
            "ikat_broken.json",
            _line_before(text, '"turn_id": 3,'),
            "topic 1-1, turn 3: 'ptkb_provenance' names PTKB statement 99, which the topic's PTKB does not have",
        ),
        ("ikat_broken.json", _line_before(text, '"turn_id": 1,', 2), "topic 1-2, turn 1: missing 'utterance'"),
        (
            "ikat_broken.json",
            _line_before(text, '"number": "1-2"', 2),
            f"topic 1-2: topic number appears twice (first on line {topic_2})",
        ),
        (
            "ikat_broken.json",
            _line_before(text, '"number": "3-1"'),
            "topic 3-1: PTKB statement number 'x' is not a positive integer",
        ),
    ]
    assert not Collection.objects.exists() and not Turn.objects.exists() and not PtkbStatement.objects.exists()


def test_a_2025_turn_naming_a_statement_its_ptkb_lacks_is_an_error():
    data = json.loads(gzip.decompress(IKAT_2025.read_bytes()))
    data[0]["responses"][2]["relevant_ptkbs"].append("I own a red bicycle.")
    parsed = ikat_topics.parse_ikat_topics(json.dumps(data, indent=4), file="2025.json")
    assert [e["reason"] for e in parsed.errors] == [
        "topic 1-1, turn 3: 'relevant_ptkbs' names the statement 'I own a red bicycle.', which is not in the "
        "topic's PTKB"
    ]


def test_a_file_mixing_the_2025_and_the_earlier_layouts_is_refused(ikat):
    older = json.loads((ikat / "2023/2023_train_topics.json").read_text())[:1]
    newer = json.loads(gzip.decompress(IKAT_2025.read_bytes()))[1:2]
    parsed = ikat_topics.parse_ikat_topics(json.dumps(older + newer), file="mixed.json")
    assert [e["reason"] for e in parsed.errors] == [
        "topic 1-2 uses the 2025 field names ('responses', a PTKB list) but topic 1-1 the 2023/2024 ones ('turns', a "
        "numbered PTKB): one file holds one year's topics"
    ]


def test_qrels_import_against_the_imported_turns_without_create_turns(ikat, tmp_path):
    """Qrels of iKAT turn ids (here: each response's provenance passages, graded 3) find the imported turns."""
    ok("ikat_topics", ikat / "2023/2023_test_topics.json")
    ok("ikat_topics", ikat / "2024/2024_test_topics.json")
    for year, name in ((2023, "2023/2023_test_topics.json"), (2024, "2024/2024_test_topics.json")):
        topics = json.loads((ikat / name).read_text())
        lines = {
            f"{t['number']}_{turn['turn_id']} 0 {pid} 3\n": None
            for t in topics
            for turn in t["turns"]
            for pid in turn["response_provenance"]
        }
        path = tmp_path / f"{year}_provenance.qrels"
        path.write_text("".join(lines))
        job = ok("qrels", path)  # no collection given: the one holding these turn ids
        coll = Collection.objects.get(name=f"iKAT {year}")
        assert job.collection == coll and job.counts["qrels"] == len(lines)
        with_provenance = Turn.objects.filter(collection=coll).exclude(response_provenance=[])
        assert job.counts["turns"] == with_provenance.count()
    qrel = Qrel.objects.get(turn__turn_id="0_1", turn__collection__name="iKAT 2024")
    assert qrel.passage_id == "clueweb22-en0017-23-13494:0" and qrel.grade == 3


def test_the_ikat_passage_texts_import_under_the_ids_runs_use(ikat):
    ok("ikat_topics", ikat / "2023/2023_train_topics.json")
    job = ok("passages_jsonl", ikat / "2023/2023_train_topics_psg_text.jsonl")
    assert job.counts["passages_created"] == job.counts["passages"] == 194
    passage = Passage.objects.get(passage_id="clueweb22-en0034-09-03452:1")
    assert passage.text == "clueweb22-en0034-09-03452,https://research.com/university-rankings/computer-science/nl"
    cited = {pid for t in Turn.objects.all() for pid in t.response_provenance}
    assert cited and cited <= set(Passage.objects.values_list("passage_id", flat=True))


def test_a_bad_ikat_passage_line_is_reported_and_nothing_is_written(ikat, tmp_path):
    lines = (ikat / "2023/2023_train_topics_psg_text.jsonl").read_text().splitlines(keepends=True)[:5]
    lines[2] = json.dumps({"doc_id": "clueweb22-en0000-00-00000", "passage_id": "3"}) + "\n"
    path = tmp_path / "psg.jsonl"
    path.write_text("".join(lines))
    job = import_file(kind="passages_jsonl", path=path)
    assert job.status == ImportJob.Status.FAILED
    assert [(e["line"], e["reason"]) for e in job.errors] == [
        (3, "an iKAT passage object needs doc_id, passage_id, passage_text; this one lacks passage_text")
    ]
    assert not Passage.objects.exists()


def test_a_topics_file_whose_year_cannot_be_told_needs_a_collection_or_a_year(tmp_path):
    path = tmp_path / "topics.json"
    path.write_text(json.dumps([{"number": "a1", "title": "T", "ptkb": {"1": "I run."}, "turns": [
        {"turn_id": 1, "utterance": "Where can I run?", "resolved_utterance": "Where can I run?", "response": "Here.",
         "ptkb_provenance": [1], "response_provenance": []}]}]))  # fmt: skip
    job = import_file(kind="ikat_topics", path=path)
    assert job.status == ImportJob.Status.FAILED and "cannot tell the iKAT year" in job.errors[0]["reason"]
    assert ok("ikat_topics", path, options={"year": "2024"}).collection.name == "iKAT 2024"
    mine = Collection.objects.create(name="Running", year=2024)
    assert ok("ikat_topics", path, collection=mine).collection == mine
    assert Turn.objects.get(collection=mine, turn_id="a1_1").ptkb_provenance == [1]
