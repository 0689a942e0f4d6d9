"""The streamed corpus import (passages_tsv / passages_jsonl): TSV, JSONL and gzip read line by line, only the
needed passages kept, every bad line reported with file, line and reason, nothing written unless all are valid."""

from __future__ import annotations

import gzip
import json
import tracemalloc

import pytest

from ecast.imports import readers
from ecast.imports.formats import passages
from ecast.models import Collection, ImportJob, Passage
from tests.ecast.imports.conftest import GPT4_LABELS, ok
from tests.judging.relevance import helpers

pytestmark = pytest.mark.django_db


@pytest.fixture
def needed(monkeypatch):
    """Needed ids from a stand-in source instead of the collection's runs, qrels and pools."""
    wanted: set[str] = set()
    monkeypatch.setattr(passages, "_NEEDED", {"test": lambda collection: wanted})
    return wanted


def _failed(kind, path, **kw):
    from ecast.imports.services import import_file

    job = import_file(kind=kind, path=path, **kw)
    assert job.status == ImportJob.Status.FAILED
    return job


def test_a_tsv_corpus_keeps_only_the_needed_passages(tmp_path, needed):
    needed.update({"MARCO_2", "MARCO_4", "MARCO_9"})
    path = tmp_path / "collection.tsv"
    path.write_text("".join(f"MARCO_{i}\tpassage number {i}\n" for i in range(1, 6)), encoding="utf-8")
    job = ok("passages_tsv", path, options={"only_needed": "true"})
    assert dict(Passage.objects.values_list("passage_id", "text")) == {
        "MARCO_2": "passage number 2",
        "MARCO_4": "passage number 4",
    }
    assert job.counts == {
        "lines": 5,
        "passages": 5,
        "needed_ids": 3,
        "not_needed": 3,
        "passages_created": 2,
        "passages_updated": 0,
        "passages_unchanged": 0,
    }
    # Importing again changes nothing; a changed text is updated.
    path.write_text("MARCO_2\tpassage number 2\nMARCO_4\tnew text\n", encoding="utf-8")
    again = ok("passages_tsv", path, options={"only_needed": "true"})
    assert (again.counts["passages_unchanged"], again.counts["passages_updated"]) == (1, 1)
    assert Passage.objects.get(passage_id="MARCO_4").text == "new text"


def test_gzipped_jsonl_with_the_usual_field_names_is_streamed(tmp_path, needed):
    needed.update({"a", "b", "c", "7"})
    rows = [
        {"id": "a", "contents": "pyserini style"},
        {"docid": "b", "text": "docid and text"},
        {"_id": "c", "title": "BEIR", "body": "beir style"},
        {"pid": 7, "passage": "numeric id"},
        {"id": "skip-me", "contents": "not needed"},
    ]
    path = tmp_path / "corpus.jsonl.gz"
    path.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in rows).encode()))
    job = ok("passages_jsonl", path, options={"only_needed": "yes"})
    assert dict(Passage.objects.values_list("passage_id", "text")) == {
        "a": "pyserini style",
        "b": "docid and text",
        "c": "beir style",
        "7": "numeric id",
    }
    assert Passage.objects.get(passage_id="a").source == "corpus.jsonl.gz"
    assert job.counts["not_needed"] == 1 and job.counts["passages_created"] == 4


def test_without_only_needed_every_passage_is_stored_and_the_first_text_of_an_id_wins(tmp_path):
    path = tmp_path / "p.tsv.gz"
    path.write_bytes(gzip.compress("\ufeffP1\tfirst\r\n\r\nP2\tsecond\t\r\nP1\tagain\r\n".encode()))
    job = ok("passages_tsv", path)
    assert dict(Passage.objects.values_list("passage_id", "text")) == {"P1": "first", "P2": "second"}
    assert job.counts["duplicates"] == 1 and job.counts["lines"] == 4 and "needed_ids" not in job.counts


def test_passages_imported_for_a_collection_join_its_corpus_and_only_its(tmp_path, needed):
    cast20, cast22 = Collection.objects.create(name="CAsT 2020"), Collection.objects.create(name="CAsT 2022")
    (tmp_path / "marco.tsv").write_text("MARCO_1\tgarage doors\nMARCO_2\tsafety sensors\n", encoding="utf-8")
    (tmp_path / "kilt.tsv").write_text("KILT_1\tmeditation\n", encoding="utf-8")
    (tmp_path / "other.tsv").write_text("WAPO_1\tnews\n", encoding="utf-8")
    ok("passages_tsv", tmp_path / "marco.tsv", collection=cast20)
    ok("passages_tsv", tmp_path / "kilt.tsv", collection=cast22)
    ok("passages_tsv", tmp_path / "other.tsv")  # stored for no collection
    assert sorted(cast20.corpus.values_list("passage_id", flat=True)) == ["MARCO_1", "MARCO_2"]
    assert list(cast22.corpus.values_list("passage_id", flat=True)) == ["KILT_1"]
    # A corpus two collections share (MS MARCO) is imported for the second too; its texts are unchanged.
    needed.add("MARCO_2")
    job = ok("passages_tsv", tmp_path / "marco.tsv", collection=cast22, options={"only_needed": "true"})
    assert job.counts["passages_unchanged"] == 1
    assert sorted(cast22.corpus.values_list("passage_id", flat=True)) == ["KILT_1", "MARCO_2"]
    assert cast20.corpus.count() == 2 and not Passage.objects.get(passage_id="WAPO_1").collections.exists()


def test_every_bad_tsv_line_is_reported_with_its_line_and_nothing_is_written(tmp_path, needed):
    needed.update({"ok1", "ok2"})
    lines = [
        "ok1\tfine",
        "no tab here",
        "\tno id",
        "ok2\t   ",
        "x" * 201 + "\ttoo long an id",
        "ok3\tfine but not needed",
    ]
    path = tmp_path / "bad.tsv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    job = _failed("passages_tsv", path, options={"only_needed": "true"})
    assert [(e["file"], e["line"]) for e in job.errors] == [
        ("bad.tsv", 2),
        ("bad.tsv", 3),
        ("bad.tsv", 4),
        ("bad.tsv", 5),
    ]
    reasons = [e["reason"] for e in job.errors]
    assert reasons[0] == "expected 'id<TAB>text'" and reasons[1] == "empty passage id"
    assert reasons[2] == "ok2: empty passage text" and reasons[3].startswith("passage id longer than 200")
    assert not Passage.objects.exists()


def test_lines_with_more_fields_than_id_and_text_are_errors_and_nothing_is_written(tmp_path):
    # Parsed line by line (as when the sniffer has nothing to say): each line is refused, the header included.
    for n, line in enumerate(GPT4_LABELS.splitlines(keepends=True), start=1):
        assert isinstance(passages.parse_tsv_line(line), str), n
    path = tmp_path / "mixed.tsv"
    path.write_text("P1\tfirst\nP2\tsecond\tthird\nP3\tfine\t\n", encoding="utf-8")
    job = _failed("passages_tsv", path)
    assert [(e["file"], e["line"]) for e in job.errors] == [("mixed.tsv", 2)]
    assert job.errors[0]["reason"].startswith("expected 2 tab-separated fields (id<TAB>text), found 3")
    assert not Passage.objects.exists()


@pytest.mark.parametrize("header", ["id\ttext", "docid\tpassage", "PID\tContents"])
def test_a_first_line_that_is_a_header_is_an_error_and_nothing_is_written(tmp_path, header):
    path = tmp_path / "with_header.tsv"
    path.write_text(f"\n{header}\nP1\tfirst passage\nP2\tsecond passage\n", encoding="utf-8")
    job = _failed("passages_tsv", path)
    assert [(e["file"], e["line"]) for e in job.errors] == [("with_header.tsv", 2)]
    assert "a passages TSV has no header line" in job.errors[0]["reason"]
    assert not Passage.objects.exists()
    # The same words further down are a passage like any other.
    path.write_text(f"P1\tfirst passage\n{header}\n", encoding="utf-8")
    ok("passages_tsv", path)
    assert Passage.objects.count() == 2


def test_every_bad_jsonl_line_is_reported_and_nothing_is_written(tmp_path):
    lines = [
        '{"id": "a", "contents": "fine"}',
        "not json",
        "[1, 2]",
        '{"id": "b"}',
        '{"id": "c", "contents": 5}',
        '{"id": true, "contents": "x"}',
        '{"id": "d\\n2", "contents": "an id no run or qrels line could name"}',
    ]
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    job = _failed("passages_jsonl", path)
    assert [e["line"] for e in job.errors] == [2, 3, 4, 5, 6, 7]
    assert job.errors[5]["reason"] == "passage id 'd\\n2' holds whitespace: runs and qrels separate their columns by it"
    assert job.errors[0]["reason"].startswith("invalid JSON") and "JSON object" in job.errors[1]["reason"]
    assert "needs an id" in job.errors[2]["reason"] and job.errors[3]["reason"] == "text must be a string"
    assert not Passage.objects.exists()


def test_a_bad_utf8_byte_deep_in_a_gzipped_file_names_its_line_and_later_lines_are_still_checked(tmp_path):
    good = b"".join(b"P%d\tpassage text number %d\n" % (i, i) for i in range(1, 20001))
    bad = b"BAD\tcaf\xe9 au lait\n"
    path = tmp_path / "big.tsv.gz"
    path.write_bytes(gzip.compress(good + bad + b"P20002\tfine\nno tab\n"))
    job = _failed("passages_tsv", path)
    assert [(e["line"], e["reason"][:30]) for e in job.errors] == [
        (20001, "not valid UTF-8 (byte 0xe9 at "),
        (20003, "expected 'id<TAB>text'"),
    ]
    assert not Passage.objects.exists()


def test_unreadable_files_fail_with_one_clear_reason(tmp_path, settings):
    cases = {
        "empty.tsv": (b"\n\n", "file is empty"),
        "binary.tsv": (b"P1\tx\x00y\n", "binary file"),
        "corrupt.tsv.gz": (gzip.compress(b"P1\tx\n" * 1000)[:-30], "corrupt gzip file"),
    }
    for name, (content, reason) in cases.items():
        path = tmp_path / name
        path.write_bytes(content)
        job = _failed("passages_tsv", path)
        assert job.errors[0]["file"] == name and reason in job.errors[0]["reason"], job.errors
    settings.ECAST_MAX_UPLOAD_BYTES = 20_000  # the gzip file (19 kB) fits; its 20 MB inflated do not
    bomb = tmp_path / "bomb.tsv.gz"
    bomb.write_bytes(gzip.compress(b"P1\t" + b"x" * 20_000_000 + b"\n"))
    errors = _failed("passages_tsv", bomb).errors
    assert "decompressed content exceeds 10 times the upload limit" in errors[0]["reason"]
    assert not Passage.objects.exists()


def test_a_line_longer_than_the_limit_is_an_error_not_a_memory_spike(tmp_path, monkeypatch):
    monkeypatch.setattr(readers, "MAX_LINE", 64)
    path = tmp_path / "long.tsv"
    path.write_text("P1\tshort\nP2\t" + "y" * 500 + "\nP3\tshort too\n", encoding="utf-8")
    job = _failed("passages_tsv", path)
    assert [(e["line"], e["reason"]) for e in job.errors] == [(2, "line longer than 64 characters")]


def test_only_needed_without_anything_needed_is_refused_before_reading(tmp_path, needed):
    path = tmp_path / "p.tsv"
    path.write_text("P1\tx\n", encoding="utf-8")
    coll = Collection.objects.create(name="Empty", year=2020)
    job = _failed("passages_tsv", path, collection=coll, options={"only_needed": "true"})
    assert "Empty has no run, qrels or pool yet" in job.errors[0]["reason"]


def test_the_reported_errors_are_capped_and_the_rest_counted(tmp_path, monkeypatch):
    monkeypatch.setattr(readers, "MAX_ERRORS", 3)
    path = tmp_path / "p.tsv"
    path.write_text("no tab\n" * 10, encoding="utf-8")
    errors = _failed("passages_tsv", path).errors
    assert [e["line"] for e in errors] == [1, 2, 3, None] and errors[-1]["reason"] == "… and 7 more bad line(s)"


def test_needed_ids_come_from_the_collections_runs_qrels_and_pools_or_every_collections(tmp_path, small_collection):
    other = Collection.objects.create(name="Other", year=2021)
    helpers.run(small_collection, "A", {"1_1": ["m1", "m2"]})
    helpers.qrels(small_collection, {"2_1": {"m3": 1}})
    from tests import factories

    factories.collection_with_turns(name="Other turns", year=2021, conversations={"9": ["q"]})
    other_coll = Collection.objects.get(name="Other turns")
    helpers.run(other_coll, "B", {"9_1": ["o1"]})
    path = tmp_path / "c.tsv"
    path.write_text("".join(f"{pid}\ttext of {pid}\n" for pid in ("m1", "m2", "m3", "o1", "zz")), encoding="utf-8")
    job = ok("passages_tsv", path, collection=small_collection, options={"only_needed": "true"})
    assert set(Passage.objects.values_list("passage_id", flat=True)) == {"m1", "m2", "m3"}
    assert job.counts["needed_ids"] == 3
    # No collection: what any collection needs (passage ids are corpus-wide).
    ok("passages_tsv", path, options={"only_needed": "true"})
    assert set(Passage.objects.values_list("passage_id", flat=True)) == {"m1", "m2", "m3", "o1"}
    assert other.pk  # a collection without runs needs nothing and changes nothing


def _peak(path, wanted) -> int:
    import tempfile

    tracemalloc.start()
    try:
        with tempfile.TemporaryFile() as spool:
            passages.corpus_stream(path=path, name=path.name, fmt="tsv", wanted=wanted, spool=spool)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_stays_flat_however_long_the_file(tmp_path):
    wanted = {f"P{i}" for i in range(0, 400_000, 1000)}
    sizes = {}
    for lines in (20_000, 200_000):
        path = tmp_path / f"c{lines}.tsv.gz"
        with gzip.open(path, "wt", encoding="utf-8") as fh:
            for i in range(lines):
                fh.write(f"P{i}\tsome passage text about topic {i % 97} that is long enough to matter\n")
        sizes[lines] = _peak(path, wanted)
    # Ten times the lines: the peak grows only by the few more kept ids, never with the file.
    assert sizes[200_000] < sizes[20_000] + 256 * 1024, sizes
