"""Benchmark of stored scores: full recompute through the app vs raw pytrec_eval, and the live per-turn recompute.

Synthetic data generated here (seeded): 200 turns × 20 runs × 1,000 ranked docs per turn, ~500 judged docs per
turn (grades skewed like CAsT: most 0). Scratch database: PostgreSQL ``test_<name>`` (Django's test-database
machinery) when DATABASE_URL is set, otherwise a fresh SQLite file under /tmp.

1. Full recompute through the app in one process: ``evaluation.services.scores_compute_for_version`` — RunTurn
   rows in, 17 measures × 200 turns × 20 runs of scores out (one row per run × turn, binary COPY on PostgreSQL) —
   against the baseline: raw ``pytrec_eval.RelevanceEvaluator`` over the same qrels/runs as in-memory dicts (the
   same 16 trec_eval measures; dicts built outside the timed region, one evaluator for all runs), in the same
   process, interleaved with the app's runs (best of 3 each). Beside them, the app's own decoding and evaluating
   of the same rankings held in memory (no database), which splits the ratio into what reading and writing add and
   what remains without them; and the floor pytrec_eval's dict API sets, the same blobs split and zipped into its
   dicts and evaluated with nothing else, which splits what remains into the price of building pytrec_eval's
   inputs at all and the app's own work. Every figure in wall and CPU seconds (this process's, helper thread
   included: on a shared VM the wall time says what the other work left us, the CPU time what the work cost),
   with the load average and CPU model. ``--profile`` adds a cProfile (CPU time) of one recompute.
   With REDIS_URL, the same recompute as a full-recompute job fanned out (ECAST_RECOMPUTE_PARTS=2) to two
   single-process Celery workers, from queueing to done, against the same baseline.
2. One new judgment → recompute of its turn for all 20 runs (``dirty_turns_drain``: rewrite that turn's rows for
   every run + leaderboard snapshot), in-process: median and p95 over 40 judgments.
3. End to end with the Celery workers on REDIS_URL (skipped without it): save a judgment, then poll the
   run-scores API in-process until it shows the new value (the recompute starts at once when the version is idle;
   ECAST_RECOMPUTE_DELAY_S, default 0, is printed), and the page's server-sent-event tick and leaderboard fetch
   on top.

Usage: python bench/bench_evaluation.py [--turns 200 --runs 20 --depth 1000 --judged 500]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from array import array
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

VAR = Path(tempfile.mkdtemp(prefix="bench-eval-"))
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

settings.MIGRATION_MODULES = {a.label: None for a in apps.get_app_configs()}  # syncdb from models, like the tests

import pytrec_eval  # noqa: E402

from bench.common import (  # noqa: E402
    TREC_MEASURES,
    cpu_model,
    cpu_seconds,
    load_average,
    machine_cpu,
    postgres_cpu,
    row,
    synthetic_data,
    synthetic_scores,
    synthetic_store,
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=200)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--depth", type=int, default=1000)
    ap.add_argument("--judged", type=int, default=500)
    ap.add_argument("--judgments", type=int, default=40)
    ap.add_argument("--profile", action="store_true", help="cProfile one app recompute and print where time goes")
    args = ap.parse_args()

    worker_db_url = os.environ["DATABASE_URL"]
    old_name = connection.settings_dict["NAME"]
    if USING_PG:
        test_name = connection.creation.create_test_db(verbosity=0, autoclobber=True)
        parts = urlsplit(worker_db_url)
        worker_db_url = urlunsplit(parts._replace(path="/" + test_name))
    else:
        call_command("migrate", run_syncdb=True, verbosity=0)
    workers: list[subprocess.Popen] = []
    try:
        from django.contrib.auth.models import User
        from rest_framework.test import APIClient

        from evaluation import events, services
        from evaluation.models import Qrel
        from evaluation.selectors import score_count

        t0 = time.perf_counter()
        qids, qrels, runs = synthetic_data(args.turns, args.runs, args.depth, args.judged)
        coll, version, run_rows, pk_of = synthetic_store(qids, qrels, runs, args.depth)
        scores = synthetic_scores(args.depth)
        db = f"{connection.vendor} ({connection.settings_dict['NAME']})"
        setup_s = time.perf_counter() - t0
        print(f"database: {db}; data setup {setup_s:.1f} s; {load_average()}; {cpu_model()}")
        print(
            f"data: {len(qids)} turns × {len(runs)} runs × {args.depth} docs; "
            f"{sum(len(v) for v in qrels.values()):,} judgments; {len(services.MEASURES)} measures stored"
        )

        # 1. full recompute vs raw pytrec_eval, interleaved so both see the same load (best of 3 each)
        as_dicts = [{q: dict(zip(docs, scores, strict=True)) for q, docs in r.items()} for r in runs]

        # CPU seconds beside wall seconds: on a shared machine the wall time says how much CPU the other work left
        # this process; the CPU time (this process, all threads) is what the work cost.
        raw_cpu: list[float] = []

        def raw_pytrec_eval() -> float:
            t, c = time.perf_counter(), time.process_time()
            ev = pytrec_eval.RelevanceEvaluator(qrels, TREC_MEASURES, relevance_level=1)
            for as_dict in as_dicts:
                ev.evaluate(as_dict)
            raw_cpu.append(time.process_time() - c)
            return time.perf_counter() - t

        # The app's own decoding and evaluating with no database: the recompute's loop (``Scorer.runs``: decoding,
        # batches, zero rows) over the same rankings held in memory as the stream delivers them (doc-id blob,
        # packed scores). What is left of the ratio once reading and writing cost nothing.
        from evaluation.scoring import Scorer

        packed = array("d", scores).tobytes()
        blobs = [
            (run.pk, pk_of[q], "\n".join(r[q]).encode(), packed)
            for run, r in zip(run_rows, runs, strict=True)
            for q in qids
        ]
        run_pks = sorted(run.pk for run in run_rows)

        memory_cpu: list[float] = []

        def in_memory() -> float:
            t, c = time.perf_counter(), time.process_time()
            scorer = Scorer(version, pk_of, qrels, services.MEASURES)
            for _ in scorer.runs(blobs, run_pks):
                pass
            memory_cpu.append(time.process_time() - c)
            return time.perf_counter() - t

        # The least Python work pytrec_eval's API allows from the same blobs: each ranking split into its doc ids
        # and zipped into the {doc: score} dict it reads, a run's dicts evaluated at once, nothing else (no
        # Judged@k, no score rows). What this costs beyond the raw baseline is the price of building pytrec_eval's
        # inputs at all, which the baseline leaves out; what the in-memory recompute costs beyond it is the app's.
        turn_of = {pk: q for q, pk in pk_of.items()}
        floor_cpu: list[float] = []

        def dicts_floor() -> float:
            t, c = time.perf_counter(), time.process_time()
            ev = pytrec_eval.RelevanceEvaluator(qrels, TREC_MEASURES, relevance_level=1)
            run: dict[str, dict[str, float]] = {}
            current = None
            for run_pk, tpk, raw_ids, _ in blobs:
                if run_pk != current and run:
                    ev.evaluate(run)
                    run = {}
                current = run_pk
                run[turn_of[tpk]] = dict(zip(raw_ids.decode().split("\n"), scores, strict=True))
            ev.evaluate(run)
            floor_cpu.append(time.process_time() - c)
            return time.perf_counter() - t

        raw_times, app_times, app_cpu, memory_times, floor_times = [], [], [], [], []
        for _ in range(3):
            raw_times.append(raw_pytrec_eval())
            t, c = time.perf_counter(), time.process_time()
            services.scores_compute_for_version(version=version)
            app_times.append(time.perf_counter() - t)
            app_cpu.append(time.process_time() - c)
            memory_times.append(in_memory())
            floor_times.append(dicts_floor())
        app_s, evaluator_s, memory_s, floor_s = min(app_times), min(raw_times), min(memory_times), min(floor_times)
        raw_c, app_c, memory_c, floor_c = min(raw_cpu), min(app_cpu), min(memory_cpu), min(floor_cpu)
        blobs.clear()  # 90 MB the rest of the run does not need
        if args.profile:
            import cProfile
            import pstats

            # CPU time, not wall time: on a shared machine the wall clock charges each function for the other
            # processes that ran meanwhile.
            prof = cProfile.Profile(time.process_time)
            prof.runcall(services.scores_compute_for_version, version=version)
            pstats.Stats(prof).sort_stats("tottime").print_stats(18)
        n_scores = score_count(version=version)
        print(f"[full] {load_average()}; {cpu_model()}")
        print(
            f"[full] app recompute, one process (DB rows in → {n_scores:,} scores out): {app_s:.2f} s wall, "
            f"{app_c:.2f} s CPU (best of 3; this process, its helper thread included)"
        )
        print(
            f"[full] baseline: raw pytrec_eval on in-memory dicts, same process: {evaluator_s:.2f} s wall, "
            f"{raw_c:.2f} s CPU (best of 3)"
        )
        print(
            f"[full] ratio app / raw pytrec_eval: {app_s / evaluator_s:.2f}x wall, {app_c / raw_c:.2f}x CPU "
            "(goal ≤ 1.3x on one worker)"
        )
        print(
            f"[full] of which the app's decoding + evaluating alone, rankings in memory, no database: {memory_s:.2f} s "
            f"wall, {memory_c:.2f} s CPU = {memory_s / evaluator_s:.2f}x wall, {memory_c / raw_c:.2f}x CPU; reading, "
            f"writing and starting: {app_c - memory_c:.2f} s CPU"
        )
        print(
            f"[full] the floor pytrec_eval's API sets: splitting the same blobs into its dicts and evaluating them, "
            f"nothing else: {floor_s:.2f} s wall, {floor_c:.2f} s CPU = {floor_c / raw_c:.2f}x CPU of raw; the app's "
            f"own work above it: in memory {memory_c / floor_c:.2f}x, with the database {app_c / floor_c:.2f}x CPU"
        )
        row(
            "full recompute, one process",
            f"{app_s:.2f} s",
            f"raw pytrec_eval {evaluator_s:.2f} s",
            f"{app_s / evaluator_s:.2f}x",
            "≤ 1.3x",
            cpu=f"{app_c / raw_c:.2f}x (dict-building floor {floor_c / raw_c:.2f}x)",
        )

        # 2. one judgment → its turn for every run, in-process (the drain the worker runs)
        random.seed(2)
        lat = []
        for _ in range(args.judgments):
            q = random.choice(qids)
            doc = runs[0][q][0]
            with transaction.atomic():
                Qrel.objects.update_or_create(
                    version=version, turn_id=pk_of[q], passage_id=doc, defaults={"grade": random.randint(1, 4)}
                )
            from evaluation.models import DirtyTurn

            DirtyTurn.objects.get_or_create(version=version, turn_id=pk_of[q])
            t = time.perf_counter()
            services.dirty_turns_drain(version_id=version.pk)
            lat.append((time.perf_counter() - t) * 1000)
        lat.sort()
        p95 = lat[min(len(lat) - 1, int(round(0.95 * len(lat))) - 1)]
        print(
            f"[turn] one judgment → recompute its turn for {len(runs)} runs + snapshot: "
            f"median {statistics.median(lat):.1f} ms, p95 {p95:.1f} ms (n={len(lat)})"
        )

        # 3. end to end through a worker on Redis
        redis_url = os.environ.get("REDIS_URL")
        if not redis_url:
            print("[e2e] skipped: REDIS_URL not set")
            return
        from ecast.celery import app

        app.control.purge()
        env = dict(
            os.environ, DATABASE_URL=worker_db_url, DJANGO_SETTINGS_MODULE="ecast.settings", ECAST_RECOMPUTE_PARTS="2"
        )
        # Two single-process workers (what a 2-core host runs): a full recompute's two parts run side by side.
        workers = [
            subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "ecast.celery", "worker", "-c", "1", "-P", "solo"]
                + ["-n", f"benchEval{i}@%h"],
                cwd=REPO,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            for i in range(2)
        ]
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and len(app.control.ping(timeout=0.5) or []) < 2:
            time.sleep(0.5)

        # 1b. the full recompute as a job fanned out to the two workers, interleaved with the raw baseline
        from evaluation.models import EvaluationJob

        fan_times, raw_times, fan_cpu, fan_machine = [], [], [], []
        raw_cpu.clear()
        db_name = urlsplit(worker_db_url).path.lstrip("/")
        job_open = (
            f"SELECT 1 FROM {connection.ops.quote_name(EvaluationJob._meta.db_table)}"
            " WHERE id = %s AND status IN ('pending', 'running')"
        )
        for _ in range(3):
            raw_times.append(raw_pytrec_eval())
            cpu0 = [cpu_seconds(w.pid) for w in workers]
            (busy0, steal0), pg0, own0 = machine_cpu(), postgres_cpu(db_name), time.process_time()
            t = time.perf_counter()
            job = services.evaluation_job_create(collection=coll, kind=EvaluationJob.Kind.FULL)
            # Asked every 20 ms in plain SQL: each question costs this process and the server CPU the workers need
            # (through the ORM, every 10 ms, it was a tenth of the machine's CPU while the parts ran).
            with connection.cursor() as cursor:
                while True:
                    cursor.execute(job_open, [job.pk])
                    if cursor.fetchone() is None:
                        break
                    time.sleep(0.02)
            fan_times.append(time.perf_counter() - t)
            own1 = time.process_time()
            (busy1, steal1), pg1 = machine_cpu(), postgres_cpu(db_name)
            fan_cpu.append([cpu_seconds(w.pid) - c for w, c in zip(workers, cpu0, strict=True)])
            fan_machine.append((busy1 - busy0, steal1 - steal0, pg1 - pg0, own1 - own0))
            job.refresh_from_db()
            assert job.status == job.Status.SUCCEEDED, job.error
        fan_s, evaluator_s = min(fan_times), min(raw_times)
        print(f"[fan-out] {load_average()}")
        print(f"[fan-out] full recompute job, 2 parts on 2 Celery workers (queue to done): {fan_s:.2f} s (best of 3)")
        print(f"[fan-out] baseline: raw single-process pytrec_eval, same run: {evaluator_s:.2f} s (best of 3)")
        print(f"[fan-out] ratio 2 workers / raw pytrec_eval: {fan_s / evaluator_s:.2f}x (goal < 1x)")
        split = min(fan_cpu, key=max)
        print(
            f"[fan-out] CPU: workers {' + '.join(f'{c:.2f}' for c in split)} s, raw pytrec_eval {min(raw_cpu):.2f} s; "
            f"busier worker / raw pytrec_eval: {max(split) / min(raw_cpu):.2f}x (its length on two idle cores)"
        )
        # Why the wall time exceeds the busier worker's CPU: what else the two cores did meanwhile.
        best = fan_times.index(fan_s)
        busy, stolen, pg, own = fan_machine[best]
        cores = os.cpu_count() or 1
        print(
            f"[fan-out] the machine in the best run's {fan_s:.2f} s: {busy:.2f} CPU-s busy of {cores * fan_s:.2f} "
            f"({cores} cores), of which workers {sum(fan_cpu[best]):.2f}, PostgreSQL {pg:.2f}, this process's polling "
            f"{own:.2f}, the rest {max(0.0, busy - sum(fan_cpu[best]) - pg - own):.2f}; {stolen:.2f} s stolen by the "
            "hypervisor"
        )
        row(
            "full recompute, 2 workers",
            f"{fan_s:.2f} s",
            f"raw pytrec_eval {evaluator_s:.2f} s",
            f"{fan_s / evaluator_s:.2f}x",
            "< 1x",
            cpu=f"{max(split) / min(raw_cpu):.2f}x (busier worker)",
        )
        admin = User.objects.create_user("bench-admin", is_staff=True)
        client = APIClient()
        client.force_authenticate(admin)
        url = f"/api/evaluation/runs/{run_rows[0].pk}/scores/"
        delay = services.recompute_delay_s()
        e2e = []
        random.seed(3)
        for _ in range(5):
            q = random.choice(qids)
            before = client.get(url, {"version": version.pk, "measure": "nDCG@3"}).json()["turns"][q]
            top = runs[0][q][0]
            current = Qrel.objects.filter(version=version, turn_id=pk_of[q], passage_id=top).first()
            new_grade = 0 if current is not None and current.grade == 4 else 4
            t = time.perf_counter()
            with transaction.atomic():
                Qrel.objects.update_or_create(
                    version=version, turn_id=pk_of[q], passage_id=top, defaults={"grade": new_grade}
                )
                events.qrels_changed(version_id=version.pk, turn_ids=[pk_of[q]])
            shown = before
            while time.perf_counter() - t < 60:
                shown = client.get(url, {"version": version.pk, "measure": "nDCG@3"}).json()["turns"][q]
                if abs(shown - before) > 1e-12:
                    break
                time.sleep(0.02)
            e2e.append(time.perf_counter() - t)
            time.sleep(0.5)
        print(
            f"[e2e] judgment saved → API shows the new score (worker on Redis): median {statistics.median(e2e):.2f} s, "
            f"max {max(e2e):.2f} s (n={len(e2e)}); includes the {delay:.1f} s debounce window → "
            f"{statistics.median(e2e) - delay:.2f} s beyond it"
        )
        # The leaderboard page hears of new scores by server-sent events: the stream looks at the version's score
        # stamp every EVENTS_TICK_S, so the page learns of a commit on average half a tick later, at worst a tick,
        # then fetches the leaderboard JSON (timed here through the same API client).
        from evaluation.views import EVENTS_TICK_S

        t = time.perf_counter()
        client.get(f"/api/evaluation/versions/{version.pk}/leaderboard/", {"measure": "nDCG@3"})
        fetch_s = time.perf_counter() - t
        screen_median = statistics.median(e2e) + EVENTS_TICK_S / 2 + fetch_s
        print(
            f"[screen] judgment saved → leaderboard page shows it: "
            f"median ≈ {screen_median:.2f} s, "
            f"worst ≈ {max(e2e) + EVENTS_TICK_S + fetch_s:.2f} s (API time + the event stream's {EVENTS_TICK_S:.1f} s "
            f"tick + {fetch_s * 1000:.0f} ms leaderboard fetch); goal ≤ 0.5 s"
        )
        row(
            "judgment → new score on screen",
            f"median ≈ {screen_median:.2f} s",
            f"one leaderboard API request {fetch_s:.2f} s",
            f"{screen_median / fetch_s:.1f}x",
            "≤ 0.5 s",
        )
    finally:
        for worker in workers:
            worker.terminate()
        for worker in workers:
            try:
                worker.wait(timeout=20)
            except subprocess.TimeoutExpired:
                worker.kill()
        if USING_PG:
            connection.creation.destroy_test_db(old_name, verbosity=0)


if __name__ == "__main__":
    main()
