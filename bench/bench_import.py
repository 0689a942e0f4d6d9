"""Benchmark: importing the real CAsT data through ``import_file`` against a plain csv/json parse of the same files.

Imports, in order: CAsT 2019 train + eval topics (with the resolved TSVs), 2020 automatic + manual (_extended)
topics, 2021 manual topics, the full ECAsT CSV (9,214 rows → 18,428 paraphrases), the 2019 and 2020 qrels, and
the 16 DECAF 2019 runs. Baseline: reading and parsing the same files with ``json.load`` / ``csv.reader`` /
``str.split`` into Python lists, nothing else (the floor any importer pays).

Uses a scratch database created with Django's test-database machinery (PostgreSQL "test_<name>" when DATABASE_URL
is set, in-memory SQLite otherwise) and destroys it at the end. Its schema comes from the project's migrations, so
the physical settings they make (rankings stored uncompressed, no foreign-key checks on bulk rows) are measured.
Evaluation's receivers (score recompute, analyses on new runs/qrels) are silenced: that work runs in the worker and
has its own benchmarks.
Prints figures and the ratio (best of 3 rounds of plain parse + import into a fresh database, interleaved); asserts
nothing about time. Beside wall seconds it prints CPU seconds: this process's, and the PostgreSQL server process's
when it runs on this machine (on a shared machine the wall time says how much CPU others left us, the CPU time what
the work cost). ``--profile`` then imports everything again into a fresh database under cProfile and prints where
the app's time goes per file type and the functions that cost most.

Usage: DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench python bench/bench_import.py [--data ../shared/data]
       [--profile] [--rounds 3]
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
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
from django.db.models.signals import post_save  # noqa: E402

from bench.common import backend_pid, load_average, process_cpu, row  # noqa: E402
from ecast.imports.services import import_file  # noqa: E402
from ecast.models import ImportJob  # noqa: E402


def steps(data: Path) -> list[tuple[str, Path, dict]]:
    """The import sequence: (kind, path, options)."""
    c = data / "cast"
    out: list[tuple[str, Path, dict]] = [
        (
            "cast_topics",
            c / "2019/train_topics_v1.0.json",
            {"resolved_tsv": str(c / "2019/train_topic_sample_annotated_resolved_v1.0.tsv")},
        ),
        (
            "cast_topics",
            c / "2019/evaluation_topics_v1.0.json",
            {"resolved_tsv": str(c / "2019/evaluation_topics_annotated_resolved_v1.0.tsv")},
        ),
        ("cast_topics", c / "2020/2020_automatic_evaluation_topics_v1.0.json", {}),
        ("cast_topics", c / "2020/2020_manual_evaluation_topics_v1.0_extended.json", {}),
        ("cast_topics", c / "2021/2021_manual_evaluation_topics_v1.0.json", {}),
        ("ecast_csv", data / "ecast/ECAsT.csv", {}),
        ("qrels", c / "2019/2019qrels.txt", {}),
        ("qrels", c / "2020/2020qrels.txt", {}),
    ]
    out += [("run", data / f"runs/cast2019_decaf/exp{n}.run.gz", {}) for n in range(1, 17)]
    return out


def baseline(plan: list[tuple[str, Path, dict]]) -> float:
    """Plain parse of every file into Python lists (json / csv / split), no validation, no database."""
    t0 = time.perf_counter()
    sink = 0
    for kind, path, options in plan:
        if kind == "cast_topics":
            sink += len(json.loads(path.read_text(encoding="utf-8")))
            if options.get("resolved_tsv"):
                sink += len([line.split("\t") for line in Path(options["resolved_tsv"]).read_text().splitlines()])
        elif kind == "ecast_csv":
            sink += len(list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"), newline=""))))
        else:
            opener = gzip.open if path.suffix == ".gz" else open
            with opener(path, "rt", encoding="utf-8") as fh:
                sink += len([line.split() for line in fh])
    assert sink > 0
    return time.perf_counter() - t0


def cpu_now(pid: int | None) -> tuple[float, float]:
    """(this process's CPU seconds, the database server process's or 0): one /proc read, as it is inside the
    timed loop."""
    return time.process_time(), process_cpu(pid) if pid else 0.0


Step = tuple[str, str, float, float, float, dict]


def run_imports(plan: list[tuple[str, Path, dict]]) -> tuple[float, list[Step]]:
    """Import every file through import_file; returns the total wall seconds and per file (kind, name, wall
    seconds, this process's CPU seconds, the server's CPU seconds, counts)."""
    rows = []
    connection.ensure_connection()
    pid = backend_pid()
    t0 = time.perf_counter()
    for kind, path, options in plan:
        t, (c, s) = time.perf_counter(), cpu_now(pid)
        job = import_file(kind=kind, path=path, options=options)
        if job.status != ImportJob.Status.SUCCEEDED:
            raise SystemExit(f"{path.name} failed: {job.errors[:5]}")
        c2, s2 = cpu_now(pid)
        rows.append((kind, path.name, time.perf_counter() - t, c2 - c, s2 - s, job.counts))
    return time.perf_counter() - t0, rows


def profile_imports(plan: list[tuple[str, Path, dict]], old_name: str) -> None:
    """Import everything again into a fresh database under cProfile: seconds per file type, then the costliest
    functions (cumulative, then own time)."""
    import cProfile
    import pstats
    from collections import defaultdict

    connection.creation.destroy_test_db(old_name, verbosity=0)
    connection.creation.create_test_db(verbosity=0, autoclobber=True)
    by_kind: dict[str, float] = defaultdict(float)
    prof = cProfile.Profile()
    for kind, path, options in plan:
        t = time.perf_counter()
        prof.runcall(import_file, kind=kind, path=path, options=options)
        by_kind[kind] += time.perf_counter() - t
    print("profile (cProfile on, so slower than above): " + ", ".join(f"{k} {v:.2f} s" for k, v in by_kind.items()))
    stats = pstats.Stats(prof)
    stats.sort_stats("cumulative").print_stats(45)
    stats.sort_stats("tottime").print_stats(30)


def deep_run() -> float:
    """Seconds to import a 1,000-deep run over 200 ad hoc turns (qrels with create_turns make the turns)."""
    import tempfile

    from ecast.models import Collection

    coll = Collection.objects.create(name="bench deep run", year=2020)
    with tempfile.TemporaryDirectory() as tmp:
        qrels, run = Path(tmp) / "deep.qrels", Path(tmp) / "deep.run"
        qrels.write_text("".join(f"q{q} 0 D1 1\n" for q in range(200)))
        run.write_text("".join(f"q{q} Q0 D{d} {d} {1000 - d}.25 deep\n" for q in range(200) for d in range(1000)))
        import_file(kind="qrels", path=qrels, collection=coll, options={"create_turns": True})
        t0 = time.perf_counter()
        job = import_file(kind="run", path=run, collection=coll)
        seconds = time.perf_counter() - t0
    if job.status != ImportJob.Status.SUCCEEDED:
        raise SystemExit(f"deep run failed: {job.errors[:3]}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data", type=Path, default=Path(os.environ.get("ECAST_SHARED_DATA", REPO.parent / "shared" / "data"))
    )
    parser.add_argument("--profile", action="store_true", help="then cProfile a full import into a fresh database")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of plain parse + import into a fresh database")
    args = parser.parse_args()
    plan = steps(args.data)

    from evaluation import events
    from evaluation.models import QrelsVersion

    # The importer announces new runs/qrels; every receiver (score recompute, analyses) is worker work measured
    # by its own benchmark, so the announcements are silenced here.
    post_save.disconnect(sender=QrelsVersion, dispatch_uid="evaluation.scores.version_saved")
    events.qrels_changed = lambda **kw: None  # type: ignore[assignment]
    events.run_imported = lambda **kw: None  # type: ignore[assignment]

    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True)
    # A worker has its cache client loaded before its first import (with REDIS_URL, Redis is its broker too); this
    # process would otherwise import the redis package inside the first timed import (about 0.08 s).
    from django.core.cache import cache

    cache.get("bench-import-warm-up")
    try:
        print(f"database: {connection.vendor} ({connection.settings_dict['NAME']}); {load_average()}")
        # Rounds of (plain parse, import into a fresh database), interleaved so both see the same load; the best
        # of each is compared. On a shared machine one import alone drew a slow moment as often as not.
        base_times, base_cpus, imports = [], [], []
        for i in range(args.rounds):
            if i:
                connection.creation.destroy_test_db(old_name, verbosity=0)
                connection.creation.create_test_db(verbosity=0, autoclobber=True)
            c = time.process_time()
            base_times.append(baseline(plan))
            base_cpus.append(time.process_time() - c)
            imports.append(run_imports(plan))
        base, base_cpu = min(base_times), min(base_cpus)
        total, rows = min(imports, key=lambda done: done[0])
        print(
            f"import of everything into a fresh database, {args.rounds} rounds: "
            + ", ".join(f"{t:.2f}" for t, _ in imports)
            + " s; plain parse: "
            + ", ".join(f"{t:.3f}" for t in base_times)
            + " s; the best round's import by file:"
        )
        print("  kind         file                                                       wall     CPU  server CPU")
        for kind, name, seconds, cpu, server, counts in rows:
            shown = {k: v for k, v in counts.items() if k not in ("warnings",) and not k.endswith("_id")}
            print(f"  {kind:<12} {name:<52} {seconds:7.3f} s {cpu:6.2f} s {server:6.2f} s  {shown}")
        runs = sum(r[2] for r in rows if r[0] == "run")
        print(f"16 DECAF runs (19,400 lines each): {runs:.2f} s, {runs / 16:.3f} s per run")
        per_kind = {}
        for kind, _n, seconds, cpu, server, _c in rows:
            w, c, s = per_kind.get(kind, (0.0, 0.0, 0.0))
            per_kind[kind] = (w + seconds, c + cpu, s + server)
        for kind, (w, c, s) in per_kind.items():
            print(f"  {kind:<12} wall {w:6.2f} s, CPU {c:6.2f} s, server CPU {s:6.2f} s")
        cpu, server = sum(r[3] for r in rows), sum(r[4] for r in rows)
        print(
            f"CPU: import {cpu:.2f} s in this process + {server:.2f} s in the database server; plain parse "
            f"{base_cpu:.3f} s (best of {args.rounds}): {(cpu + server) / base_cpu:.1f}x"
        )
        again, _ = run_imports(plan)
        print(
            f"import total: {total:.2f} s (best round); "
            f"re-import of everything: {again:.2f} s (no new rows, runs replaced)"
        )
        deep = deep_run()
        print(f"synthetic 1,000-deep run over 200 turns (200,000 lines): {deep:.2f} s")
        print(f"baseline (plain json/csv/split parse of the same files, best of {args.rounds}): {base:.3f} s")
        print(f"ratio import / baseline: {total / base:.1f}x")
        ratio = f"{total / base:.1f}x"
        row("import CAsT + ECAsT + qrels + 16 runs", f"{total:.2f} s", f"plain parse {base:.3f} s", ratio, "≤ 3x")
        if args.profile:
            profile_imports(plan, old_name)
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)


if __name__ == "__main__":
    main()
