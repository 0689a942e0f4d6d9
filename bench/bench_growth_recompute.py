"""Cost of a full score recompute as a collection grows: time, CPU and peak memory per size, and the log–log slope.

Two curves (synthetic, seeded; shallower rankings than ``bench_evaluation.py`` so the largest point takes seconds,
not minutes): runs 10 / 50 / 200 at 200 turns, and turns 200 / 1,000 / 5,000 at 10 runs, every ranking ``--depth``
documents deep (default 100) drawn from 2 × depth candidates per turn, ``--depth`` / 2 of them judged (grades
skewed like CAsT). Scratch database as ``bench_evaluation.py``: PostgreSQL ``test_<name>`` when DATABASE_URL is set
(the streamed recompute a worker runs), else SQLite.

At each size, interleaved and best of ``--repeat``: the app's full recompute in one process
(``evaluation.services.scores_compute_for_version``: rankings read from the database, 17 measures written back)
against raw pytrec_eval evaluating the same rankings as in-memory dicts (one evaluator, the same 16 trec_eval
measures; each run's dicts built outside the timed region, one run at a time, so the baseline's own memory stays
flat). Printed per size: wall and CPU seconds of both, their ratios, and the recompute's peak resident memory above
what the process held before it (VmHWM, reset per call). Per curve: the slope of log(cost) against log(size) by
least squares (1 = linear; goal ≤ 1.1) for the app's wall and CPU time and for the baseline's CPU time, and the
peak memory at the smallest and largest size (flat where the data streams: the rankings do; the version's qrels and
each run's score rows are held whole, so memory grows with turns × judgments, not with runs).

Usage: python bench/bench_growth_recompute.py [--depth 100 --repeat 2 --runs 10,50,200 --turns 200,1000,5000]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

VAR = Path(tempfile.mkdtemp(prefix="bench-growth-"))
os.environ.setdefault("ECAST_VAR_DIR", str(VAR))
os.environ["DJANGO_SETTINGS_MODULE"] = "ecast.settings"
os.environ.pop("ECAST_TASKS_EAGER", None)
USING_PG = bool(os.environ.get("DATABASE_URL"))
if not USING_PG:
    os.environ["DATABASE_URL"] = f"sqlite:///{VAR / 'bench.sqlite3'}"

import django  # noqa: E402

django.setup()

from django.apps import apps  # noqa: E402
from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.utils import timezone  # noqa: E402

settings.MIGRATION_MODULES = {a.label: None for a in apps.get_app_configs()}  # syncdb from models, like the tests

import pytrec_eval  # noqa: E402

from bench.common import (  # noqa: E402
    TREC_MEASURES,
    cpu_model,
    load_average,
    loglog_slope,
    row,
    rss_mb,
    rss_peak_mb,
    rss_peak_reset,
    synthetic_grade,
)


def turn_ids(n_turns: int) -> list[str]:
    return [f"{1000 + t // 10}_{t % 10 + 1}" for t in range(n_turns)]


def qrels_of(qids: list[str], depth: int) -> dict[str, dict[str, int]]:
    """depth / 2 judged documents per turn among its first 1.2 × depth candidates (seeded)."""
    rng = random.Random(1)
    pool = int(1.2 * depth)
    return {q: {f"D{q}-{i}": synthetic_grade(rng) for i in rng.sample(range(pool), depth // 2)} for q in qids}


def run_rankings(qids: list[str], depth: int, run: int) -> Iterator[tuple[str, list[str]]]:
    """(turn id, ranked doc ids) of synthetic run number ``run``, regenerated identically on every call, so neither
    the store nor the baseline holds more than one run."""
    rng = random.Random(1000 + run)
    for q in qids:
        yield q, [f"D{q}-{i}" for i in rng.sample(range(2 * depth), depth)]


def store(n_turns: int, n_runs: int, depth: int) -> tuple:
    """A collection of ``n_turns`` turns, its "original" qrels version and ``n_runs`` runs, loaded by COPY as the
    importers load them; returns (version, qids, qrels)."""
    from ecast.core.bulk import rows_insert
    from ecast.models import Collection, Conversation, Turn
    from evaluation.models import Qrel, QrelsVersion, Run, RunTurn

    qids = turn_ids(n_turns)
    qrels = qrels_of(qids, depth)
    scores = [float(depth - i) for i in range(depth)]
    now = timezone.now()
    with transaction.atomic():
        coll = Collection.objects.create(name=f"Growth {n_turns}x{n_runs}", year=2020, relevance_threshold=1)
        convs = {}
        for q in qids:
            topic = q.split("_")[0]
            if topic not in convs:
                convs[topic] = Conversation.objects.create(collection=coll, topic_id=topic)
        Turn.objects.bulk_create(
            [
                Turn(
                    conversation=convs[q.split("_")[0]],
                    collection=coll,
                    number=int(q.split("_")[1]),
                    turn_id=q,
                    raw_utterance="q",
                )
                for q in qids
            ],
            batch_size=2000,
        )
        pk_of = dict(Turn.objects.filter(collection=coll).values_list("turn_id", "pk"))
        version = QrelsVersion.objects.create(collection=coll, name="original")
        rows_insert(
            Qrel,
            ("version", "turn", "passage_id", "grade", "source", "created_at"),
            ((version.pk, pk_of[q], d, g, "imported", now) for q in qids for d, g in qrels[q].items()),
            analyze=True,
        )
        for i in range(n_runs):
            run = Run.objects.create(collection=coll, name=f"run{i:03d}")
            rows_insert(
                RunTurn,
                ("run", "turn", "doc_ids", "scores"),
                ((run.pk, pk_of[q], docs, scores) for q, docs in run_rankings(qids, depth, i)),
                analyze=i == n_runs - 1,
            )
    version = QrelsVersion.objects.select_related("collection").get(pk=version.pk)
    return version, qids, qrels


def measure(n_turns: int, n_runs: int, depth: int, repeat: int) -> dict[str, float]:
    from evaluation import services

    t0 = time.perf_counter()
    version, qids, qrels = store(n_turns, n_runs, depth)
    setup_s = time.perf_counter() - t0
    scores = [float(depth - i) for i in range(depth)]

    def raw() -> tuple[float, float]:
        # Only pytrec_eval's own work is timed: the evaluator's construction and each run's evaluation.
        wall = cpu = 0.0
        t, c = time.perf_counter(), time.process_time()
        ev = pytrec_eval.RelevanceEvaluator(qrels, TREC_MEASURES, relevance_level=1)
        wall, cpu = time.perf_counter() - t, time.process_time() - c
        for i in range(n_runs):
            as_dict = {q: dict(zip(docs, scores, strict=True)) for q, docs in run_rankings(qids, depth, i)}
            t, c = time.perf_counter(), time.process_time()
            ev.evaluate(as_dict)
            wall, cpu = wall + time.perf_counter() - t, cpu + time.process_time() - c
            del as_dict
        return wall, cpu

    def app() -> tuple[float, float, float]:
        before = rss_mb()
        rss_peak_reset()
        t, c = time.perf_counter(), time.process_time()
        services.scores_compute_for_version(version=version)
        wall, cpu = time.perf_counter() - t, time.process_time() - c
        return wall, cpu, rss_peak_mb() - before

    raws, apps_ = [], []
    for _ in range(repeat):
        raws.append(raw())
        apps_.append(app())
    out = {
        "size_runs": n_runs,
        "size_turns": n_turns,
        "raw_wall": min(w for w, _ in raws),
        "raw_cpu": min(c for _, c in raws),
        "app_wall": min(w for w, _, _ in apps_),
        "app_cpu": min(c for _, c, _ in apps_),
        "app_mem": max(m for _, _, m in apps_),
        "rss": rss_mb(),
    }
    print(
        f"[growth] {n_runs} runs × {n_turns} turns × {depth} docs ({n_runs * n_turns:,} rankings; stored in "
        f"{setup_s:.1f} s): app {out['app_wall']:.2f} s wall / {out['app_cpu']:.2f} s CPU; raw pytrec_eval "
        f"{out['raw_wall']:.2f} s / {out['raw_cpu']:.2f} s CPU; ratio {out['app_wall'] / out['raw_wall']:.2f}x wall, "
        f"{out['app_cpu'] / out['raw_cpu']:.2f}x CPU; recompute's peak memory +{out['app_mem']:.0f} MB over the "
        f"{out['rss'] - out['app_mem']:.0f} MB held before (best of {repeat}); {load_average()}",
        flush=True,
    )
    return out


def curve(name: str, axis: str, points: list[dict[str, float]], goal: float = 1.1) -> None:
    sizes = [p[axis] for p in points]
    app_wall = loglog_slope(sizes, [p["app_wall"] for p in points])
    app_cpu = loglog_slope(sizes, [p["app_cpu"] for p in points])
    raw_cpu = loglog_slope(sizes, [p["raw_cpu"] for p in points])
    span = f"{int(sizes[0]):,}→{int(sizes[-1]):,}"
    print(
        f"[growth] {name} {span}: log–log slope app {app_wall:.2f} wall, {app_cpu:.2f} CPU; raw pytrec_eval "
        f"{raw_cpu:.2f} CPU (goal ≤ {goal}); CPU ratio {points[0]['app_cpu'] / points[0]['raw_cpu']:.2f}x → "
        f"{points[-1]['app_cpu'] / points[-1]['raw_cpu']:.2f}x; recompute's peak memory +{points[0]['app_mem']:.0f} "
        f"→ +{points[-1]['app_mem']:.0f} MB"
    )
    row(
        f"full recompute growth, {name} {span}",
        f"slope {app_wall:.2f} wall / {app_cpu:.2f} CPU",
        f"raw pytrec_eval slope {raw_cpu:.2f} CPU",
        f"peak memory +{points[0]['app_mem']:.0f} → +{points[-1]['app_mem']:.0f} MB",
        f"slope ≤ {goal}",
        cpu=f"{points[-1]['app_cpu'] / points[-1]['raw_cpu']:.2f}x at the largest",
    )


def sizes(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--depth", type=int, default=100, help="documents per ranking (default 100)")
    ap.add_argument("--repeat", type=int, default=2, help="interleaved repetitions per size, best kept")
    ap.add_argument("--runs", type=sizes, default=[10, 50, 200], help="run counts at --runs-turns turns")
    ap.add_argument("--runs-turns", type=int, default=200)
    ap.add_argument("--turns", type=sizes, default=[200, 1000, 5000], help="turn counts at --turns-runs runs")
    ap.add_argument("--turns-runs", type=int, default=10)
    args = ap.parse_args()

    old_name = connection.settings_dict["NAME"]
    if USING_PG:
        connection.creation.create_test_db(verbosity=0, autoclobber=True)
    else:
        call_command("migrate", run_syncdb=True, verbosity=0)
    try:
        print(
            f"database: {connection.vendor} ({connection.settings_dict['NAME']}); {cpu_model()}; {load_average()}; "
            f"depth {args.depth}, best of {args.repeat}"
        )
        done: dict[tuple[int, int], dict[str, float]] = {}  # a size on both curves (200 turns × 10 runs) runs once

        def point(n_turns: int, n_runs: int) -> dict[str, float]:
            if (n_turns, n_runs) not in done:
                done[n_turns, n_runs] = measure(n_turns, n_runs, args.depth, args.repeat)
            return done[n_turns, n_runs]

        by_runs = [point(args.runs_turns, n) for n in args.runs]
        by_turns = [point(n, args.turns_runs) for n in args.turns]
        if len(by_runs) > 1:
            curve(f"runs at {args.runs_turns} turns", "size_runs", by_runs)
        if len(by_turns) > 1:
            curve(f"turns at {args.turns_runs} runs", "size_turns", by_turns)
    finally:
        if USING_PG:
            connection.creation.destroy_test_db(old_name, verbosity=0)


if __name__ == "__main__":
    main()
