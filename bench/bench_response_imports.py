"""Benchmark: the response-level imports (issue 33) on the real TREC RAG 2024 files, against a plain ``json.loads``
of the same files and against the qrels import of the RAG 2024 passage qrels (20,283 lines) in the same run.

Imports, in order, into one collection of ad hoc topics (``create_turns``): the NIST nugget assignments (927 rows,
298 nuggets, 13,158 labels, 927 answers created from ``answer_text`` and split with Punkt), the gpt-4o baseline
answers (301 topics, 3,975 sentences), the NIST citation support judgments (381 answers, 2,840 labels), then the
same three again (a re-import: nothing changes). Punkt is loaded before the clock starts, as a worker has it after
its first import.

Uses a scratch database made with Django's test-database machinery and destroys it. Prints figures, ratios, CPU
seconds (this process and the PostgreSQL server process) and the load; asserts nothing about time. ``--profile``
then imports the nugget file again into a fresh database under cProfile.

Usage: DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench python bench/bench_response_imports.py
       [--data ../shared/data] [--rounds 3] [--profile]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402

from bench.common import backend_pid, load_average, process_cpu, row  # noqa: E402
from ecast.imports.services import import_file  # noqa: E402
from ecast.models import Collection, ImportJob  # noqa: E402
from ecast.pipeline.preprocess import split_sentences  # noqa: E402

RAG = "rag/trec_rag_2024"
PLAN = (
    ("nuggets", "nugget_assignment.20241108.jl.gz"),
    ("responses", "baseline_rag24.test_gpt-4o_top20.jsonl.fixed.gz"),
    ("citation_support", "final.citation_judgments_without_prediction.20241025.jsonl"),
)


def plain_parse(data: Path) -> float:
    """json.loads of every line of the three files: the floor any importer pays."""
    t0 = time.perf_counter()
    for _kind, name in PLAN:
        path = data / RAG / name
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8") as fh:
            assert [json.loads(line) for line in fh]
    return time.perf_counter() - t0


def timed(kind: str, path: Path, coll: Collection, pid: int | None) -> tuple[float, float, float, dict]:
    t, c, s = time.perf_counter(), time.process_time(), process_cpu(pid) if pid else 0.0
    job = import_file(kind=kind, path=path, collection=coll, options={"create_turns": True})
    if job.status != ImportJob.Status.SUCCEEDED:
        raise SystemExit(f"{path.name} failed: {job.errors[:5]}")
    server = (process_cpu(pid) if pid else 0.0) - s
    return time.perf_counter() - t, time.process_time() - c, server, job.counts


def one_round(data: Path, pid: int | None) -> tuple[float, list, float]:
    coll = Collection.objects.create(name=f"RAG 2024 {time.time()}", year=2024)
    qrels = timed("qrels", data / RAG / "2024-retrieval-qrels.txt.gz", coll, pid)[0]
    rows = [(kind, name, *timed(kind, data / RAG / name, coll, pid)) for kind, name in PLAN]
    rows += [(kind, f"{name} (again)", *timed(kind, data / RAG / name, coll, pid)) for kind, name in PLAN]
    return qrels, rows, sum(r[2] for r in rows[:3])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True)
    split_sentences("Punkt loads here. Not in the timed imports.")
    try:
        connection.ensure_connection()
        pid = backend_pid()
        print(f"database: {connection.vendor}; {load_average()}")
        rounds = []
        for _ in range(args.rounds):
            base = plain_parse(args.data)
            rounds.append((base, *one_round(args.data, pid)))
        base = min(r[0] for r in rounds)
        best = min(rounds, key=lambda r: r[3])
        _b, qrels, rows, total = best
        print(f"rounds (three files imported, s): {', '.join(f'{r[3]:.2f}' for r in rounds)}")
        print("  kind              file                                                          wall     CPU  server")
        for kind, name, wall, cpu, server, counts in rows:
            shown = {k: counts[k] for k in ("labels_written", "created", "unchanged", "nuggets_created") if k in counts}
            print(f"  {kind:<17} {name:<60} {wall:6.2f} s {cpu:6.2f} s {server:6.2f} s {shown}")
        print(f"plain json.loads of the three files: {base:.3f} s (best of {args.rounds}); qrels import: {qrels:.2f} s")
        row(
            "import RAG 2024 nuggets + answers + citation labels",
            f"{total:.2f} s",
            f"plain parse {base:.3f} s",
            f"{total / base:.1f}x",
            "seconds",
        )
        row(
            "import RAG 2024 nuggets + answers + citation labels",
            f"{total:.2f} s",
            f"qrels import (20,283 lines) {qrels:.2f} s",
            f"{total / qrels:.1f}x",
            "seconds",
        )
        if args.profile:
            import cProfile
            import pstats

            coll = Collection.objects.create(name="profiled", year=2024)
            prof = cProfile.Profile()
            prof.runcall(
                import_file,
                kind="nuggets",
                path=args.data / RAG / PLAN[0][1],
                collection=coll,
                options={"create_turns": True},
            )
            pstats.Stats(prof).sort_stats("cumulative").print_stats(r"(evaluation|ecast)/", 25)
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)


if __name__ == "__main__":
    main()
