"""Benchmark: streamed export of 100k assessor judgments to TREC qrels, against a plain csv baseline.

Creates a scratch database (Django's test-database machinery: PostgreSQL "test_<name>" when DATABASE_URL is set,
in-memory SQLite otherwise), fills it with synthetic data — 1,000 turns, a pool of N pairs, one assessor judgment
per pair, a derived qrels version holding the N assessed rows — and measures:

- export: ``judging.relevance.selectors.qrels_export_rows`` (server-side iterators, turn-by-turn merge with the
  judgments, re-aggregation) written by ``judging.relevance.qrels_export.write_qrels`` to a file;
- baseline: the same N rows, already in an in-memory Python list, written with ``csv.writer`` (space delimited).

Seconds are the best of 3 runs without tracing; peak memory is measured in a separate run under tracemalloc
(the baseline's peak includes building its list from the database, i.e. what "load everything, then write"
costs). A second, 10x smaller version shows whether the export's memory stays flat as the data grows.
Prints figures and ratios; asserts nothing about time.

Usage: python bench/bench_qrels_export.py [--rows 100000]
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
from django.contrib.auth.models import User  # noqa: E402
from django.db import connection  # noqa: E402
from django.test.utils import setup_test_environment  # noqa: E402

from ecast.models import Collection, Conversation, Turn  # noqa: E402
from evaluation.models import Qrel, QrelsVersion, Run  # noqa: E402
from judging.models import AssessorAssignment, AssessorJudgment, Pool, PoolPair  # noqa: E402
from judging.relevance.qrels_export import write_qrels  # noqa: E402
from judging.relevance.selectors import qrels_export_rows  # noqa: E402

TOPICS, TURNS_PER_TOPIC = 100, 10


class _NoMigrations(dict):
    def __contains__(self, item: object) -> bool:
        return True

    def __getitem__(self, item: str) -> None:
        return None


def build(rows: int, tag: str, coll: Collection, turns: list[Turn], user: User) -> QrelsVersion:
    """A pool of ``rows`` pairs spread over the turns, each judged once, fed into a derived version."""
    original = QrelsVersion.objects.create(collection=coll, name=f"original-{tag}")
    derived = QrelsVersion.objects.create(collection=coll, name=f"original + new-{tag}", parent=original)
    run = Run.objects.create(collection=coll, name=f"run-{tag}")
    pool = Pool.objects.create(collection=coll, name=f"pool-{tag}", qrels_version=original, target_version=derived)
    pool.runs.add(run)
    per_turn = rows // len(turns)
    pairs = [
        PoolPair(pool=pool, turn=t, passage_id=f"MARCO_{tag}{i:07d}", run_ids=[run.pk], best_rank=1 + i % 3)
        for t in turns
        for i in range(per_turn)
    ]
    PoolPair.objects.bulk_create(pairs, batch_size=5000)
    PoolPair.objects.filter(pool=pool).update(cluster_head_id=django.db.models.F("pk"))
    leases = {
        conv_id: AssessorAssignment.objects.create(pool=pool, conversation_id=conv_id, assessor=user)
        for conv_id in {t.conversation_id for t in turns}
    }
    conv_of = {t.pk: t.conversation_id for t in turns}
    judgments, qrels = [], []
    for pk, turn_pk, pid in PoolPair.objects.filter(pool=pool).values_list("pk", "turn_id", "passage_id"):
        grade = (pk * 7) % 5
        judgments.append(AssessorJudgment(pair_id=pk, assignment=leases[conv_of[turn_pk]], assessor=user, grade=grade))
        qrels.append(Qrel(version=derived, turn_id=turn_pk, passage_id=pid, grade=grade, source="assessed"))
    AssessorJudgment.objects.bulk_create(judgments, batch_size=5000)
    Qrel.objects.bulk_create(qrels, batch_size=5000)
    return derived


def best_of(fn: Callable[[], object], n: int = 3) -> float:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def peak_mib(fn: Callable[[], object]) -> float:
    tracemalloc.start()
    tracemalloc.reset_peak()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    args = parser.parse_args()

    setup_test_environment()
    # Build the scratch schema straight from the models, as the test suite does (--nomigrations): the project keeps
    # no migration files, and syncing unmigrated apps before auth's migrations fails on PostgreSQL.
    settings.MIGRATION_MODULES = _NoMigrations()
    old_name = connection.settings_dict["NAME"]
    if connection.vendor != "sqlite":  # SQLite's scratch database is in memory already
        # Its own scratch name, so a bench never clobbers the test suite's database.
        connection.settings_dict.setdefault("TEST", {})["NAME"] = f"bench_qrels_{old_name}"
    connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        t0 = time.perf_counter()
        coll = Collection.objects.create(name="Bench", year=2020, relevance_threshold=2)
        user = User.objects.create_user("bench-assessor")
        turns = []
        for topic in range(TOPICS):
            conv = Conversation.objects.create(collection=coll, topic_id=str(1000 + topic))
            turns += [
                Turn(conversation=conv, collection=coll, number=n, turn_id=f"{1000 + topic}_{n}", raw_utterance="q")
                for n in range(1, TURNS_PER_TOPIC + 1)
            ]
        Turn.objects.bulk_create(turns)
        turns = list(Turn.objects.filter(collection=coll).order_by("pk"))
        big = build(args.rows, "L", coll, turns, user)
        small = build(args.rows // 10, "S", coll, turns, user)
        setup_s = time.perf_counter() - t0
        out_dir = Path(tempfile.mkdtemp(prefix="bench-qrels-"))

        def export(version: QrelsVersion) -> Callable[[], int]:
            def run() -> int:
                with open(out_dir / "export.qrels", "w", encoding="utf-8") as fh:
                    return write_qrels(qrels_export_rows(version=version, aggregation="majority"), fh)

            return run

        in_memory = list(qrels_export_rows(version=big, aggregation="majority"))

        def baseline_write(rows: list[tuple[str, str, int]]) -> None:
            with open(out_dir / "baseline.qrels", "w", encoding="utf-8", newline="") as fh:
                writer = csv.writer(fh, delimiter=" ", lineterminator="\n")
                for qid, doc, grade in rows:
                    writer.writerow((qid, 0, doc, grade))

        def baseline_materialise() -> None:
            baseline_write(list(Qrel.objects.filter(version=big).values_list("turn__turn_id", "passage_id", "grade")))

        n_lines = export(big)()
        export_s = best_of(export(big))
        baseline_s = best_of(lambda: baseline_write(in_memory))
        same = (out_dir / "export.qrels").read_bytes() == (out_dir / "baseline.qrels").read_bytes()
        export_peak = peak_mib(export(big))
        export_small_peak = peak_mib(export(small))
        baseline_peak = peak_mib(baseline_materialise)

        print(f"database: {connection.vendor} (scratch {connection.settings_dict['NAME']}); setup {setup_s:.1f} s")
        n_judgments = AssessorJudgment.objects.filter(pair__pool__target_version=big).count()
        print(f"rows exported: {n_lines:,} (judgments: {n_judgments:,})")
        print(f"streamed export (DB → merge judgments → qrels file): {export_s:.3f} s, peak {export_peak:.2f} MiB")
        print(f"  same export at {args.rows // 10:,} rows: peak {export_small_peak:.2f} MiB (flat memory check)")
        print(f"baseline csv.writer from in-memory list:             {baseline_s:.3f} s")
        print(f"  baseline peak incl. materialising the list from the DB: {baseline_peak:.2f} MiB")
        print(f"ratio time   export / baseline: {export_s / baseline_s:.1f}x")
        print(f"ratio memory export / baseline: {export_peak / baseline_peak:.2f}x")
        print(f"export and baseline files byte-identical: {same}")
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)


if __name__ == "__main__":
    main()
