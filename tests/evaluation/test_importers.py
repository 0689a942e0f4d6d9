"""Qrels imports keep to the relevance scale: a grade outside 0–4 is refused with its file and line, and nothing is
written (a grade of 9 in a CAsT collection would skew every graded measure). Run imports stream the file: what they
store is exactly what trec_eval reads from the whole file, and a bad line anywhere, the last included, writes
nothing."""

from __future__ import annotations

import gzip
import math
import random

import pytest

from ecast.imports.formats.runs import read_run
from ecast.imports.services import import_file
from ecast.models import ImportJob
from evaluation.models import Qrel, QrelsVersion, Run, RunTurn
from tests import factories


@pytest.mark.django_db
def test_a_grade_outside_the_relevance_scale_is_refused_with_its_line_and_nothing_is_written(
    small_collection, tmp_path
):
    path = tmp_path / "qrels.txt"
    path.write_text("1_1 0 a 4\n1_1 0 b 9\n1_2 0 c 0\n1_2 0 d -1\n")
    job = import_file(kind="qrels", path=path, collection=small_collection)
    assert job.status == ImportJob.Status.FAILED
    assert [(e["line"], e["reason"]) for e in job.errors] == [
        (2, "grade 9 of b is outside the relevance scale 0–4"),
        (4, "grade -1 of d is outside the relevance scale 0–4"),
    ]
    assert not Qrel.objects.exists() and not QrelsVersion.objects.exists()


@pytest.mark.django_db
def test_every_grade_of_the_scale_is_accepted(small_collection, tmp_path):
    path = tmp_path / "qrels.txt"
    path.write_text("".join(f"1_1 0 p{g} {g}\n" for g in range(5)))
    job = import_file(kind="qrels", path=path, collection=small_collection)
    assert job.status == ImportJob.Status.SUCCEEDED, job.errors
    assert sorted(Qrel.objects.values_list("grade", flat=True)) == [0, 1, 2, 3, 4]


# ---------------------------------------------------------------- runs, streamed


def _run_lines(seed: int = 7) -> list[str]:
    """A messy TREC run: 30 turns, doc ids drawn with repeats (duplicates, some scoring higher later), tied scores,
    a turn's lines coming back later in the file, CRLF and blank lines, a tag that changes, and a turn the
    collection lacks."""
    rng = random.Random(seed)
    stretches = []
    for t in range(30):
        qid = "99_1" if t == 29 else f"{t // 5 + 1}_{t % 5 + 1}"
        lines = [
            f"{qid} Q0 d{rng.randrange(150)} {r} {rng.choice([1.5, 2.0, rng.uniform(-3, 9)])} tag{r % 40 // 39}"
            for r in range(rng.randrange(60, 160))
        ]
        cut = len(lines) // 3
        stretches += [lines[:cut], lines[cut:]]
    rng.shuffle(stretches)  # most turns' lines in two places
    out = []
    for stretch in stretches:
        out += [line + ("\r" if rng.random() < 0.1 else "") for line in stretch] + ([""] if rng.random() < 0.2 else [])
    return out


def _reference(lines: list[str]) -> tuple[dict[str, tuple[list[str], list[float]]], int, list[str]]:
    """The run as trec_eval reads it, from every line at once: the best score of each (qid, doc), ranked by score
    then doc id descending; with the duplicate lines' count and the first 20 of them."""
    best: dict[str, dict[str, float]] = {}
    duplicates: list[str] = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        qid, _q0, doc, _rank, score, _tag = line.split()
        docs = best.setdefault(qid, {})
        if doc in docs:
            duplicates.append(f"line {n}: {qid} {doc}")
        docs[doc] = max(docs.get(doc, -math.inf), float(score))
    ranked = {}
    for qid, docs in best.items():
        order = sorted(docs.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
        ranked[qid] = ([d for d, _ in order], [s for _, s in order])
    return ranked, len(duplicates), duplicates[:20]


def _stored(run: Run) -> dict[str, tuple[list[str], list[float]]]:
    return {rt.turn.turn_id: (list(rt.doc_ids), list(rt.scores)) for rt in run.rankings.select_related("turn")}


@pytest.mark.django_db
@pytest.mark.parametrize("gzipped", [False, True])
def test_a_streamed_run_import_stores_exactly_the_rankings_trec_eval_reads_from_the_whole_file(tmp_path, gzipped):
    lines = _run_lines()
    expected, duplicates, examples = _reference(lines)
    coll = factories.collection_of_turn_ids("Streamed", 2020, [q for q in expected if q != "99_1"])
    data = ("\n".join(lines) + "\n").encode()
    path = tmp_path / ("r.run.gz" if gzipped else "r.run")
    path.write_bytes(gzip.compress(data) if gzipped else data)
    job = import_file(kind="run", path=path, collection=coll, options={"name": "streamed"})
    assert job.status == ImportJob.Status.SUCCEEDED, job.errors[:5]
    run = Run.objects.get(name="streamed")
    assert _stored(run) == {q: r for q, r in expected.items() if q != "99_1"}
    report = run.import_report
    assert report["duplicate_lines"] == duplicates > 100 and report["duplicate_examples"] == examples
    assert report["lines"] == sum(1 for line in lines if line.strip())
    assert (report["queries"], report["documents"]) == (30, sum(len(d) for d, _ in expected.values()))
    assert report["tags"] == ["tag0", "tag1"] and report["unknown_turns"] == ["99_1"]
    assert job.counts["documents"] == report["documents"] - len(expected["99_1"][0])
    # The reader of run files (tests, benchmarks) reads the same file the same way.
    assert read_run(path) == {q: dict(zip(*r, strict=True)) for q, r in expected.items()}


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("last", "reason"),
    [
        (b"1_1 Q0 late 1 high t\n", "score 'high' is not a number"),
        (b"1_1 Q0 caf\xe9 1 1.0 t\n", "not valid UTF-8 (byte 0xe9 at column 11)"),
        (b"1_1 Q0 late 1\n", "expected 6 columns 'qid Q0 docid rank score tag', found 4"),
    ],
)
def test_a_bad_line_at_the_end_of_a_long_run_fails_it_with_its_line_and_writes_nothing(tmp_path, last, reason):
    qids = [f"{t}_{k}" for t in range(1, 11) for k in range(1, 6)]
    coll = factories.collection_of_turn_ids("Long", 2020, qids)
    good = tmp_path / "good.run"
    good.write_text("".join(f"{q} Q0 old{r} {r} {-r} t\n" for q in qids[:3] for r in range(10)))
    job = import_file(kind="run", path=good, collection=coll, options={"name": "r"})
    assert job.status == ImportJob.Status.SUCCEEDED
    before = _stored(Run.objects.get())
    body = "".join(f"{q} Q0 d{r} {r} {1000 - r} t\n" for q in qids for r in range(200)).encode()
    path = tmp_path / "r.run"
    path.write_bytes(body + last)
    job = import_file(kind="run", path=path, collection=coll, options={"name": "r"})
    assert job.status == ImportJob.Status.FAILED
    assert [(e["file"], e["line"]) for e in job.errors] == [("r.run", 10_001)]
    assert reason in job.errors[0]["reason"]
    assert Run.objects.count() == 1 and _stored(Run.objects.get()) == before  # the run it would replace is intact
    assert RunTurn.objects.count() == 3
