"""Benchmark of a measure asked for on demand: the app stores a measure no run has yet, against raw pytrec_eval.

Synthetic data generated here (seeded, as in bench_evaluation.py): 200 turns × 20 runs × 1,000 ranked docs per turn,
~500 judged docs per turn. Scratch database: PostgreSQL ``test_<name>`` when DATABASE_URL is set, otherwise a fresh
SQLite file under /tmp.

Timed (best of 3, interleaved so both see the same load; wall and CPU seconds, load average printed):
- the app: ``evaluation.services.measure_request(measure="nDCG@100")`` on a version whose default measures are
  stored, with the "measures" job it queues run at once in this process (eager tasks): every run rescored under the
  version with the 17 defaults plus the new measure, rows replaced, progress recorded. Between rounds the measure
  is forgotten again (untimed).
- baseline: raw ``pytrec_eval.RelevanceEvaluator`` over the same qrels and runs as in-memory dicts, in the same
  process, for the one new measure (``ndcg_cut.100``); and, beside it, for all 18 measures the app stores.

Usage: python bench/bench_measure_on_demand.py [--turns 200 --runs 20 --depth 1000 --judged 500 --measure nDCG@100]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

VAR = Path(tempfile.mkdtemp(prefix="bench-measure-"))
os.environ.setdefault("ECAST_VAR_DIR", str(VAR))
os.environ["DJANGO_SETTINGS_MODULE"] = "ecast.settings"
USING_PG = bool(os.environ.get("DATABASE_URL"))
if not USING_PG:
    os.environ["DATABASE_URL"] = f"sqlite:///{VAR / 'bench.sqlite3'}"

import django  # noqa: E402

django.setup()

from django.apps import apps  # noqa: E402
from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402

settings.MIGRATION_MODULES = {a.label: None for a in apps.get_app_configs()}  # syncdb from models, like the tests

import pytrec_eval  # noqa: E402

from bench.common import load_average, row, synthetic_data, synthetic_scores, synthetic_store  # noqa: E402

# The 17 stored defaults in pytrec_eval's names (Judged@k is the app's own), plus the measure asked for.
DEFAULT_TREC = {"ndcg_cut.3,5,10", "map", "recall.100,500,1000", "bpref", "infAP", "P.1,3,5,10", "Rprec", "recip_rank"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=200)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--depth", type=int, default=1000)
    ap.add_argument("--judged", type=int, default=500)
    ap.add_argument("--measure", default="nDCG@100", help="an ir_measures string pytrec_eval names directly")
    args = ap.parse_args()

    if USING_PG:
        connection.creation.create_test_db(verbosity=0, autoclobber=True)
    else:
        call_command("migrate", run_syncdb=True, verbosity=0)

    from ecast.celery import app
    from evaluation import metrics, services
    from evaluation.models import EvaluationJob, QrelsVersion
    from evaluation.selectors import score_means

    app.conf.task_always_eager = True  # the job the request queues runs here, once its transaction commits

    t0 = time.perf_counter()
    qids, qrels, runs = synthetic_data(args.turns, args.runs, args.depth, args.judged)
    _, version, _, _ = synthetic_store(qids, qrels, runs, args.depth)
    scores = synthetic_scores(args.depth)
    services.scores_compute_for_version(version=version)  # the defaults, stored before anything is asked for
    print(f"database: {connection.vendor}; data setup {time.perf_counter() - t0:.1f} s; {load_average()}")
    print(f"data: {len(qids)} turns × {len(runs)} runs × {args.depth} docs; {len(metrics.DEFAULT_MEASURES)} defaults")

    parsed = metrics.parse_measure(args.measure, rel_threshold=1)
    named = metrics.pytrec_eval_name(parsed)
    if named is None:
        raise SystemExit(f"{args.measure}: pytrec_eval has no direct name for it; pick one it has (nDCG@100, P@20…)")
    (level, _), trec_name = named
    as_dicts = [{q: dict(zip(docs, scores, strict=True)) for q, docs in r.items()} for r in runs]

    def raw(measures: set[str]) -> tuple[float, float]:
        t, c = time.perf_counter(), time.process_time()
        ev = pytrec_eval.RelevanceEvaluator(qrels, measures, relevance_level=max(level, 1))
        for as_dict in as_dicts:
            ev.evaluate(as_dict)
        return time.perf_counter() - t, time.process_time() - c

    def on_demand() -> tuple[float, float]:
        t, c = time.perf_counter(), time.process_time()
        state = services.measure_request(version=version, measure=args.measure)
        wall, cpu = time.perf_counter() - t, time.process_time() - c
        job = EvaluationJob.objects.get(pk=state.job.pk) if state.job else None
        if job is None or job.status != "succeeded" or job.progress_done != len(runs):
            raise SystemExit(f"the measures job did not finish: {job and (job.status, job.error)}")
        return wall, cpu

    def forget() -> None:
        QrelsVersion.objects.filter(pk=version.pk).update(requested_measures=[])
        version.requested_measures = []
        services.scores_compute_for_version(version=version)

    app_t, one_t, all_t = [], [], []
    for _ in range(3):
        one_t.append(raw({trec_name}))
        all_t.append(raw(DEFAULT_TREC | {trec_name}))
        app_t.append(on_demand())
        means = score_means(version=version, measures=[args.measure])
        forget()
    assert len(means) == len(runs) and all(args.measure in m for m in means.values())
    app_s, app_c = min(w for w, _ in app_t), min(c for _, c in app_t)
    one_s, one_c = min(w for w, _ in one_t), min(c for _, c in one_t)
    all_s, all_c = min(w for w, _ in all_t), min(c for _, c in all_t)
    print(f"[measure] {load_average()}")
    print(
        f"[measure] app: {args.measure} asked for, job run, {len(runs)} runs rescored with "
        f"{len(metrics.DEFAULT_MEASURES) + 1} measures and stored: {app_s:.2f} s wall, {app_c:.2f} s CPU (best of 3)"
    )
    print(f"[measure] baseline: raw pytrec_eval, {trec_name} only, same process: {one_s:.2f} s wall, {one_c:.2f} s CPU")
    print(
        f"[measure] beside it: raw pytrec_eval, all {len(DEFAULT_TREC)} default groups + {trec_name}: "
        f"{all_s:.2f} s wall, {all_c:.2f} s CPU"
    )
    print(f"[measure] ratio app / raw one measure: {app_s / one_s:.2f}x; app / raw all measures: {app_s / all_s:.2f}x")
    row(
        f"{args.measure} on demand, {len(runs)} runs × {len(qids)} turns",
        f"{app_s:.2f} s ({app_c:.2f} s CPU)",
        f"raw pytrec_eval {one_s:.2f} s ({one_c:.2f} s CPU)",
        f"{app_s / one_s:.2f}x",
        "seconds, not minutes",
    )


if __name__ == "__main__":
    main()
