"""Benchmark: importing the CAsT 2022 conversation trees (tree and flattened file) and reading every turn's history
(its path), against importing the linear CAsT 2021 manual topics and reading theirs, in the same run.

Each import goes into a fresh collection of a scratch database made with Django's test-database machinery
(in-memory SQLite unless DATABASE_URL is set), with the project's migrations; the re-import of the tree changes
nothing. Prints seconds, seconds per turn and the ratios to the 2021 baseline; asserts nothing about time.

Usage: python bench/bench_cast2022_import.py [--data ../shared/data] [--repeat 3]
"""

from __future__ import annotations

import argparse
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

from ecast.imports.services import import_file  # noqa: E402
from ecast.models import Collection, ImportJob, Turn  # noqa: E402
from ecast.selectors import turn_history  # noqa: E402


def timed_import(kind: str, path: Path, name: str) -> tuple[float, dict]:
    """Seconds to import ``path`` into a new collection ``name``, and the job's counts."""
    collection = Collection.objects.create(name=name, year=2022 if "2022" in path.name else 2021)
    t0 = time.perf_counter()
    job = import_file(kind=kind, path=path, collection=collection)
    seconds = time.perf_counter() - t0
    if job.status != ImportJob.Status.SUCCEEDED:
        raise SystemExit(f"{path.name} failed: {job.errors[:3]}")
    return seconds, job.counts


def histories(name: str) -> tuple[float, int]:
    """Seconds to read the history of every turn of collection ``name`` (one ``turn_history`` call each)."""
    turns = list(Turn.objects.filter(collection__name=name))
    t0 = time.perf_counter()
    steps = sum(len(turn_history(turn=t)) for t in turns)
    return time.perf_counter() - t0, steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    cast = args.data / "cast"
    files = {
        "2021 manual (linear, baseline)": ("cast_topics", cast / "2021/2021_manual_evaluation_topics_v1.0.json"),
        "2022 tree": ("cast2022_topics", cast / "2022/2022_evaluation_topics_tree_v1.0.json"),
        "2022 flattened": ("cast2022_topics", cast / "2022/2022_evaluation_topics_flattened_duplicated_v1.0.json"),
    }
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        print(f"database: {connection.vendor}; best of {args.repeat} imports, each into a fresh collection")
        best: dict[str, tuple[float, dict]] = {}
        for r in range(args.repeat):
            for label, (kind, path) in files.items():
                seconds, counts = timed_import(kind, path, f"{label} #{r}")
                if label not in best or seconds < best[label][0]:
                    best[label] = (seconds, counts)
        base_s, base_counts = best["2021 manual (linear, baseline)"]
        base_per_turn = base_s / base_counts["turns_created"]
        for label, (seconds, counts) in best.items():
            turns = counts["turns_created"]
            shown = {k: counts[k] for k in ("topics", "paths", "turns", "user_turns", "system_turns") if k in counts}
            print(
                f"  {label:<31} {seconds:6.3f} s  {turns:4d} turns  {1000 * seconds / turns:6.2f} ms/turn  "
                f"×{(seconds / turns) / base_per_turn:4.2f} per turn vs 2021  {shown}"
            )
        kind, path = files["2022 tree"]
        t0 = time.perf_counter()
        again = import_file(kind=kind, path=path, collection=Collection.objects.get(name="2022 tree #0"))
        print(
            f"  re-import of the tree: {time.perf_counter() - t0:.3f} s "
            f"(created {again.counts['turns_created']}, updated {again.counts['turns_updated']})"
        )
        linear_s, linear_steps = histories("2021 manual (linear, baseline) #0")
        tree_s, tree_steps = histories("2022 tree #0")
        print(
            f"  histories: 2021 {linear_s:.3f} s for {base_counts['turns_created']} turns ({linear_steps} history "
            f"turns); 2022 tree {tree_s:.3f} s for 408 turns ({tree_steps} path turns); "
            f"×{(tree_s / 408) / (linear_s / base_counts['turns_created']):.2f} per turn vs 2021"
        )
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)


if __name__ == "__main__":
    main()
