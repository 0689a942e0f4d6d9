"""Benchmark: streamed ECAsT release export (CSV and JSONL) of the 9,214 imported pairs, time and peak memory.

Sets up a scratch database (Django's test-database machinery: PostgreSQL "test_<name>" when DATABASE_URL is set,
in-memory SQLite otherwise), imports the CAsT 2019–2021 topics and the full ECAsT CSV, then measures

- export: ``ecast.releases.release_csv_rows`` / ``release_jsonl_rows`` (server-side ``iterator(chunk_size)``)
  encoded line by line into a file, exactly what the streaming API and ``export_release`` do;
- baseline: the same rows loaded into a Python list first (``list(queryset.values_list(...))``), then written
  with ``csv.writer`` — the "load everything, then write" approach.

Seconds are the best of 3 untraced runs; peak memory is a separate run under tracemalloc. Both are measured at
1k, 4k and all (≈9.2k) pairs to show that the streamed export's memory stays flat while the baseline's grows.
Asserts nothing about time. Usage: python bench/bench_release.py [--data ../shared/data]
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402

from ecast import releases  # noqa: E402
from ecast.core.csvfiles import csv_lines  # noqa: E402
from ecast.imports.services import import_file  # noqa: E402
from ecast.models import Paraphrase  # noqa: E402

TOPICS = [
    "2019/train_topics_v1.0.json",
    "2019/evaluation_topics_v1.0.json",
    "2020/2020_manual_evaluation_topics_v1.0.json",
    "2021/2021_manual_evaluation_topics_v1.0.json",
]


class _NoMigrations(dict):
    def __contains__(self, item: object) -> bool:
        return True

    def __getitem__(self, item: str) -> None:
        return None


def _subsets() -> list:
    """Growing release sets as the API builds them: one collection, the largest collection, everything."""
    from ecast.models import Collection

    by_size = sorted(Collection.objects.all(), key=lambda c: releases.release_pairs(collection=c).count())
    return [
        (f"{by_size[0].name}", releases.release_pairs(collection=by_size[0])),
        (f"{by_size[-1].name}", releases.release_pairs(collection=by_size[-1])),
        ("all collections", releases.release_pairs()),
    ]


def export_csv(qs, path: Path) -> int:
    n = 0
    with open(path, "w", encoding="utf-8", newline="") as fh:
        for line in csv_lines(releases.release_csv_rows(pairs_queryset=qs)):
            fh.write(line)
            n += 1
    return n - 1


def export_jsonl(qs, path: Path) -> int:
    n = 0
    with open(path, "w", encoding="utf-8") as fh:
        for line in releases.jsonl_lines(releases.release_jsonl_rows(pairs_queryset=qs)):
            fh.write(line)
            n += 1
    return n


def baseline_csv(qs, path: Path) -> int:
    rows = list(qs.values_list("turn__turn_id", "text", "pair__text"))
    with open(path, "w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(releases.CSV_HEADER)
        writer.writerows(rows)
    return len(rows)


def measure(fn: Callable, qs, path: Path) -> tuple[float, float, int]:
    """Best-of-3 seconds, then peak traced MiB in a separate run; returns (seconds, MiB, rows)."""
    best = float("inf")
    n = 0
    for _ in range(3):
        t0 = time.perf_counter()
        n = fn(qs, path)
        best = min(best, time.perf_counter() - t0)
    tracemalloc.start()
    fn(qs, path)
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return best, peak, n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    args = parser.parse_args()
    settings.MIGRATION_MODULES = _NoMigrations()
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        print(f"database: {connection.vendor} ({connection.settings_dict['NAME']})")
        for name in TOPICS:
            import_file(kind="cast_topics", path=args.data / "cast" / name)
        job = import_file(kind="ecast_csv", path=args.data / "ecast" / "ECAsT.csv")
        assert job.status == "succeeded", job.errors[:3]
        total = Paraphrase.objects.filter(kind="manual").count()
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "release"
            print(f"{'pairs':>6} {'subset':<16} {'method':<20} {'seconds':>8} {'peak MiB':>9}")
            methods = (("stream CSV", export_csv), ("stream JSONL", export_jsonl), ("baseline list+csv", baseline_csv))
            timings = {}
            for name, qs in _subsets():
                for label, fn in methods:
                    seconds, peak, rows = measure(fn, qs, out)
                    timings[(name, label)] = seconds
                    print(f"{rows:>6} {name:<16} {label:<20} {seconds:8.3f} {peak:9.2f}")
            full, base = timings[("all collections", "stream CSV")], timings[("all collections", "baseline list+csv")]
            print(f"full CSV export of {total} pairs: {full:.3f} s; ratio stream / baseline: {full / base:.2f}x")
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)


if __name__ == "__main__":
    main()
