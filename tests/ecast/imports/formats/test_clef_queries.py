"""CLEF eHealth topics: the 2021 XML topics (real files copied under data/) and the 2018 queries import with ids and
query text; a malformed element is reported with its line while the others are still read; no DTD is honoured."""

from __future__ import annotations

from pathlib import Path

import pytest

from ecast.imports.formats import clef_queries
from ecast.imports.parsing import Parsed
from ecast.models import Collection, Conversation, Turn
from tests.ecast.imports.conftest import ok

CLEF_2021 = Path(__file__).parent.parent / "data" / "clef_ehealth_2021"


def _parse(path: Path) -> Parsed:
    return clef_queries.parse_clef_queries(path.read_text(encoding="utf-8"), file=path.name)


def test_it_reads_the_2021_topics_with_their_ids_and_query_text():
    parsed = _parse(CLEF_2021 / "topics.txt")
    assert parsed.errors == [] and parsed.counts == {"queries": 55}
    assert parsed.records[0] == (
        2,
        "1",
        "What are the most common chronic diseases? What effects do chronic diseases have for the society and the "
        "individual?",
    )
    assert parsed.records[1] == (7, "8", "best apps daily activity exercise diabetes")
    assert parsed.records[-1] == (249, "150", "fish oil supplement dosage")


def test_it_reads_the_2021_topics_with_narratives_though_one_narrative_holds_a_bare_ampersand():
    # The file as a whole is not well-formed XML (line 214: "ehlers danlos syndrome & POTS").
    parsed = _parse(CLEF_2021 / "topics_narrative.txt")
    assert parsed.errors == [] and parsed.counts == {"queries": 55}
    by_id = {qid: (line, text) for line, qid, text in parsed.records}
    assert by_id["109"] == (211, "ehlers danlos syndrome POTS nausea stomach pain")
    assert [r[1] for r in parsed.records] == [r[1] for r in _parse(CLEF_2021 / "topics.txt").records]
    narratives = parsed.extra["narratives"]
    assert len(narratives) == 55 and narratives["109"].startswith("i’ve been diagnosed w ehlers danlos syndrome & POTS")
    assert _parse(CLEF_2021 / "topics.txt").extra["narratives"] == {}


def test_it_still_reads_the_2018_queries(shared_data):
    parsed = _parse(shared_data / "clef_ehealth_2018/clef2018_queries_task1_task4.txt")
    assert parsed.errors == [] and parsed.counts == {"queries": 50}
    assert parsed.records[0] == (2, "151001", "anemia diet therapy")
    assert parsed.records[-1][1] == "200001"


def test_each_malformed_topic_is_reported_with_its_line_and_the_others_are_read():
    text = (CLEF_2021 / "topics.txt").read_text(encoding="utf-8")
    text = text.replace("<id>8</id>", "<id>8</idd>")  # line 8: mismatched tag
    text = text.replace("<id>22</id>", "")  # the topic on line 12 loses its id
    text = text.replace("<query> Can diabetes be cured?", "<query>")  # topic 45 (line 22): empty query
    text = text.replace("<id>51</id>", "<id>35</id>")  # line 27: a second topic 35
    parsed = clef_queries.parse_clef_queries(text, file="topics.txt")
    assert [(e["line"], e["reason"]) for e in parsed.errors] == [
        (8, "<topic> is not well-formed XML: mismatched tag"),
        (12, "<topic> without an <id>"),
        (22, "topic 45: no query text in <query>"),
        (27, "topic 35 appears twice (first on line 17)"),
    ]
    assert len(parsed.records) == 51


def test_an_unclosed_topic_is_reported_and_the_next_one_is_read():
    text = "<topics>\n<topic><id>1</id><query>a</query>\n<topic><id>2</id><query>b</query></topic>\n</topics>\n"
    parsed = clef_queries.parse_clef_queries(text, file="t.xml")
    assert [(e["line"], e["reason"]) for e in parsed.errors] == [(2, "<topic> is not closed before the next <topic>")]
    assert parsed.records == [(3, "2", "b")]


def test_a_dtd_or_an_entity_is_refused_and_never_resolved(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET", encoding="utf-8")
    text = (
        f'<?xml version="1.0"?>\n<!DOCTYPE topics [<!ENTITY x SYSTEM "file://{secret}">]>\n'
        "<topics><topic><id>1</id><query>&x;</query></topic></topics>\n"
    )
    parsed = clef_queries.parse_clef_queries(text, file="t.xml")
    assert parsed.records == [] and [e["line"] for e in parsed.errors] == [2]
    assert "not allowed" in parsed.errors[0]["reason"] and "TOP SECRET" not in str(parsed.errors)
    undefined = clef_queries.parse_clef_queries(
        "<topics><topic><id>1</id><query>&x;</query></topic></topics>", file="t"
    )
    assert undefined.records == [] and "undefined entity" in undefined.errors[0]["reason"]


@pytest.mark.django_db
def test_the_2021_topics_import_as_single_turn_conversations():
    coll = Collection.objects.create(name="CLEF eHealth 2021", year=2021)
    job = ok("clef_queries", CLEF_2021 / "topics_narrative.txt", collection=coll)
    assert job.counts == {"queries": 55, "turns_created": 55, "narratives": 55}
    turn = Turn.objects.get(collection=coll, turn_id="35")
    assert turn.raw_utterance == "Is a ketogenic / keto diet suitable for people with diabetes?"
    assert ok("clef_queries", CLEF_2021 / "topics.txt", collection=coll).counts["turns_created"] == 0


@pytest.mark.django_db
def test_2021_narratives_are_kept_as_the_topics_descriptions_and_counted_in_the_report():
    coll = Collection.objects.create(name="CLEF eHealth 2021", year=2021)
    job = ok("clef_queries", CLEF_2021 / "topics_narrative.txt", collection=coll)
    assert job.counts == {"queries": 55, "turns_created": 55, "narratives": 55}
    topic = Conversation.objects.get(collection=coll, topic_id="35")
    assert topic.description == (
        "I have type 1 diabetes and wondered if a ketogenic diet / keto diet is suitable for people with diabetes?"
    )
    # Topics imported first without narratives gain them when the narrative file follows.
    bare = Collection.objects.create(name="CLEF eHealth 2021 bare", year=2021)
    assert "narratives" not in ok("clef_queries", CLEF_2021 / "topics.txt", collection=bare).counts
    assert Conversation.objects.get(collection=bare, topic_id="35").description == ""
    ok("clef_queries", CLEF_2021 / "topics_narrative.txt", collection=bare)
    assert Conversation.objects.get(collection=bare, topic_id="35").description == topic.description


@pytest.mark.django_db
def test_narratives_of_a_queries_file_given_with_create_turns_describe_the_new_topics(tmp_path):
    coll = Collection.objects.create(name="CLEF eHealth 2021", year=2021)
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("45 0 doc-a 1\n", encoding="utf-8")
    ok(
        "qrels",
        qrels,
        collection=coll,
        options={"create_turns": "true", "queries": str(CLEF_2021 / "topics_narrative.txt")},
    )
    topic = Conversation.objects.get(collection=coll, topic_id="45")
    assert topic.description == "I have type 2 diabetes. Will the diabetes eventually go away? Can it be cured?"


@pytest.mark.django_db
def test_2021_topics_name_the_ad_hoc_turns_of_qrels_imported_with_create_turns(tmp_path):
    coll = Collection.objects.create(name="CLEF eHealth 2021", year=2021)
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("1 0 doc-a 1\n150 0 doc-b 0\n", encoding="utf-8")
    options = {"create_turns": "true", "queries": str(CLEF_2021 / "topics.txt")}
    ok("qrels", qrels, collection=coll, options=options)
    assert Turn.objects.get(collection=coll, turn_id="150").raw_utterance == "fish oil supplement dosage"
