"""Run files stream: checked line by line and spooled turn by turn, so memory does not grow with the file; a turn
whose lines come back later is merged as if the file had been read whole; bad lines are reported, capped."""

from __future__ import annotations

import tempfile
import tracemalloc

import pytest

from ecast.imports import readers
from ecast.imports.errors import ImportFailed
from ecast.imports.formats import pyterrier_run, runs

MiB = 1 << 20


def test_reading_a_run_file_holds_one_turn_not_the_file(tmp_path):
    path = tmp_path / "big.run"
    with path.open("w") as f:
        for t in range(150):
            f.writelines(f"{t}_1 Q0 MARCO_{t * 7919 + r} {r + 1} {1000 - r}.25 big\n" for r in range(1000))
    tracemalloc.start()
    try:
        with tempfile.TemporaryFile() as spool:
            run = runs.parse_run_file(path, name="big.run", spool=spool)
            _, peak = tracemalloc.get_traced_memory()
            first = next(run.rankings())
    finally:
        tracemalloc.stop()
    # Held whole, these 150,000 lines took ~25 MiB of rankings; a turn's 1,000 lines take a fraction of one.
    assert peak < 3 * MiB, f"peak {peak / MiB:.1f} MiB while reading"
    assert run.report["documents"] == 150_000 and len(run.offsets) == 150
    assert first[0] == "0_1" and first[1][:2] == ["MARCO_0", "MARCO_1"] and first[2][:2] == [1000.25, 999.25]


def test_scattered_lines_of_a_turn_are_merged_with_their_duplicates_in_line_order():
    text = (
        "a Q0 x 1 1.0 t\n"  # 1
        "a Q0 y 2 2.0 t\n"  # 2
        "b Q0 x 1 7.0 t\n"  # 3
        "a Q0 x 3 4.0 t\n"  # 4: duplicate of line 1, better
        "a Q0 z 4 0.5 t\n"  # 5
        "a Q0 z 5 0.1 t\n"  # 6: duplicate of line 5 in the same stretch, worse
        "b Q0 x 2 1.0 t\n"  # 7: duplicate of line 3, worse
        "a Q0 y 6 2.0 t\n"  # 8: duplicate of line 2, same score
    )
    parsed = runs.parse_run(text, file="r")
    data = parsed.records[0]
    assert parsed.errors == []
    assert data.rankings == {"a": (["x", "y", "z"], [4.0, 2.0, 0.5]), "b": (["x"], [7.0])}
    assert data.first_line == {"a": 1, "b": 3}
    assert data.report["duplicate_lines"] == 4
    assert data.report["duplicate_examples"] == ["line 4: a x", "line 6: a z", "line 7: b x", "line 8: a y"]


def test_a_pyterrier_csv_streams_like_a_trec_run(tmp_path):
    path = tmp_path / "r.csv"
    path.write_text('qid,docno,score,rank,name\n1_1,d1,2.0,0,bm25\n1_2,d2,1.0,0,bm25\n1_1,"d3",3.0,1,bm25\n')
    with tempfile.TemporaryFile() as spool:
        run = pyterrier_run.parse_pyterrier_run_file(path, name="r.csv", spool=spool)
        assert list(run.rankings()) == [("1_1", ["d3", "d1"], [3.0, 2.0]), ("1_2", ["d2"], [1.0])]
    assert run.report["tags"] == ["bm25"] and run.first_line == {"1_1": 2, "1_2": 3}
    path.write_text("qid,docno,score\n1_1,d1,2.0\n1_1,d2,x\n1_1,d 3,1.0\n")
    with pytest.raises(ImportFailed) as failed, tempfile.TemporaryFile() as spool:
        pyterrier_run.parse_pyterrier_run_file(path, name="r.csv", spool=spool)
    assert [e["line"] for e in failed.value.errors] == [3, 4]


def test_the_bad_lines_of_a_run_file_are_reported_up_to_a_cap_then_counted(tmp_path, monkeypatch):
    monkeypatch.setattr(readers, "MAX_ERRORS", 3)
    path = tmp_path / "r.run"
    path.write_text("q Q0 a 1 1.0 t\n" + "q Q0 b 2 x t\n" * 10)
    with pytest.raises(ImportFailed) as failed, tempfile.TemporaryFile() as spool:
        runs.parse_run_file(path, name="r.run", spool=spool)
    errors = failed.value.errors
    assert [e["line"] for e in errors] == [2, 3, 4, None] and errors[-1]["reason"] == "… and 7 more bad line(s)"
