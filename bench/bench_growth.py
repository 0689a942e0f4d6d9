"""Benchmark: how costs grow with the size of a researcher's data — run import, pool build, budget simulation.

Each size runs in a fresh child process (so its peak RSS, ``ru_maxrss``, is its own) and prints wall and CPU
seconds; the parent fits the log–log slope of CPU seconds against size (``numpy.polyfit``: 1.0 is linear) and
prints the load average. Linear growth is slope ≤ 1.1.

- **runs**: TREC run files of 1 M / 5 M / 20 M lines (``--run-lines``; 1,000 ranked passages per turn, so 1,000 /
  5,000 / 20,000 turns, like MS MARCO dev's 7 M-line runs), imported through ``import_file`` (parse, validate,
  write the rankings) into a collection that holds the turns. Baseline in the same child: a plain streaming read
  that splits every line (the floor of any reader). Memory: the child's peak RSS after the baseline and after the
  import (the import streams the file twice, checking it whole and then writing turn by turn: flat).
- **pool**: a depth-10 pool over 20 runs of 100 passages per turn, for 200 and 2,000 turns (today's demo-size and
  10×): ``pool_create`` (walk the rankings, drop judged pairs, store the pairs, a chunk of turns at a time). Memory:
  the peak during the build, beside the RSS before it.
- **budget**: the judging-budget simulation (``evaluation.analyses.budget.simulate``: four adjudication orders, τ at
  13 shares of the pool) over 16 runs at depth 10, 100 judged passages per turn, for 200 and 2,000 turns.

Scratch database: a throw-away PostgreSQL database per child when DATABASE_URL is set, else a SQLite file.
Asserts nothing about time.

Usage: python bench/bench_growth.py [--only runs,pool,budget] [--run-lines 1000000,5000000,20000000]
       [--pool-turns 200,2000] [--budget-turns 200,2000] [--tmp /tmp/ecast-bench-growth]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.common import (  # noqa: E402
    cpu_model,
    load_average,
    loglog_slope,
    process_cpu,
    rss_mb,
    rss_peak_mb,
    rss_peak_reset,
)

DEPTH = 1000


def cpu_now() -> float:
    return process_cpu(os.getpid())


def database_cpu() -> float:
    """CPU seconds the PostgreSQL server spent for this child's scratch database (0 on SQLite: it is in-process)."""
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith("postgres"):
        return 0.0
    from bench.common import postgres_cpu

    return postgres_cpu(url.rsplit("/", 1)[-1])


def write_run(path: Path, lines: int) -> int:
    """A synthetic run of ``lines`` lines, 1,000 passages per turn; returns the number of turns."""
    turns = lines // DEPTH
    if path.is_file() and path.stat().st_size > 0:
        return turns
    tmp = path.with_suffix(".part")
    with tmp.open("w") as f:
        for t in range(turns):
            qid = f"{1000 + t // 10}_{t % 10 + 1}"
            f.writelines(
                f"{qid} Q0 MARCO_{(t * 7919 + r * 104729) % 8_841_823} {r + 1} {DEPTH - r:.4f} growth\n"
                for r in range(DEPTH)
            )
    tmp.rename(path)
    return turns


def django_setup(prefix: str) -> str | None:
    """Django on a scratch database (PostgreSQL when DATABASE_URL is set); returns the URL to drop at the end."""
    scratch = None
    if os.environ.get("DATABASE_URL"):
        from bench.common import make_database

        scratch = make_database(os.environ["DATABASE_URL"], prefix)
        os.environ["DATABASE_URL"] = scratch
    else:
        os.environ["DATABASE_URL"] = f"sqlite:///{tempfile.mkdtemp(prefix='bench-growth-')}/db.sqlite3"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")  # tasks eager: no broker needed
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    return scratch


def child_runs(lines: int, tmp: Path) -> dict:
    path = tmp / f"run-{lines}.txt"
    turns = write_run(path, lines)
    w0, c0 = time.perf_counter(), cpu_now()
    n = 0
    with path.open() as f:
        for line in f:
            line.split()
            n += 1
    base_wall, base_cpu = time.perf_counter() - w0, cpu_now() - c0
    rss_base = rss_peak_mb()
    # A 20 M-line run is 875 MB plain (about 150 MB gzipped, as one would upload it): the limit is lifted here.
    os.environ.setdefault("ECAST_MAX_UPLOAD_BYTES", str(4 << 30))
    scratch = django_setup("bench_growth_runs")
    try:
        from django.db import transaction

        from bench.common import synthetic_store
        from ecast.imports.services import import_file
        from evaluation import events

        qids = [f"{1000 + t // 10}_{t % 10 + 1}" for t in range(turns)]
        coll, _v, _r, _pk = synthetic_store(qids, {q: {} for q in qids}, [], DEPTH)
        # The import announces the run after its commit and, with eager tasks, the run's evaluation runs inside
        # import_file: marked here so that the import's figures stop where the evaluation (a worker's job) starts.
        marks: list[tuple[float, float, float, float]] = []
        announce = events.run_imported

        def mark() -> None:
            marks.append((time.perf_counter(), cpu_now(), database_cpu(), rss_peak_mb()))
            rss_peak_reset()

        def run_imported(*, run_id: int) -> None:
            transaction.on_commit(mark)  # runs before the announcement's own callback, registered next
            announce(run_id=run_id)

        events.run_imported = run_imported
        gc.collect()
        rss_peak_reset()  # the import's own peak, not Django's start or the turns' creation
        rss_start = rss_mb()
        w0, c0, d0 = time.perf_counter(), cpu_now(), database_cpu()
        job = import_file(kind="run", path=path, collection=coll, options={"name": "growth"})
        w1, c1, d1, rss_eval = time.perf_counter(), cpu_now(), database_cpu(), rss_peak_mb()
        assert job.status == job.Status.SUCCEEDED, job.errors[:3]
        wm, cm, dm, rss_import = marks[0] if marks else (w1, c1, d1, rss_eval)
        wall, cpu, db_cpu = wm - w0, cm - c0, dm - d0
        evaluation = {"eval_wall": w1 - wm, "eval_cpu": c1 - cm, "eval_db_cpu": d1 - dm, "rss_eval_mb": rss_eval}
    finally:
        if scratch:
            from django.db import connections

            connections.close_all()
            from bench.common import drop_database

            drop_database(scratch)
    return {
        "size": lines,
        "turns": turns,
        "wall": wall,
        "cpu": cpu,
        "base_wall": base_wall,
        "base_cpu": base_cpu,
        "db_cpu": db_cpu if scratch else None,
        "rss_base_mb": rss_base,
        "rss_start_mb": rss_start,
        "rss_mb": rss_import,
        "lines_read": n,
        **evaluation,
    }


def child_pool(turns: int) -> dict:
    scratch = django_setup("bench_growth_pool")
    try:
        from bench.common import synthetic_data, synthetic_store
        from judging.relevance.pools import pool_create

        qids, qrels, runs = synthetic_data(turns, 20, 100, 50)
        coll, version, run_rows, _pk = synthetic_store(qids, qrels, runs, 100)
        del qids, qrels, runs
        gc.collect()
        rss_peak_reset()  # the build's own peak, not the synthetic runs' creation
        rss_start = rss_mb()
        w0, c0, d0 = time.perf_counter(), cpu_now(), database_cpu()
        pool = pool_create(collection=coll, qrels_version=version, runs=run_rows, depth=10, name="growth")
        wall, cpu, db_cpu = time.perf_counter() - w0, cpu_now() - c0, database_cpu() - d0
        rss_build = rss_peak_mb()
        pairs = pool.pairs.count()
    finally:
        if scratch:
            from django.db import connections

            connections.close_all()
            from bench.common import drop_database

            drop_database(scratch)
    db = db_cpu if scratch else None
    return {
        "size": turns,
        "pairs": pairs,
        "wall": wall,
        "cpu": cpu,
        "db_cpu": db,
        "rss_start_mb": rss_start,
        "rss_mb": rss_build,
    }


def child_budget(turns: int) -> dict:
    from bench.common import synthetic_data, synthetic_scores
    from evaluation.analyses import budget

    qids, qrels, rankings = synthetic_data(turns, 16, 10, 100)
    scores = synthetic_scores(10)
    runs = {f"run{i:02d}": {q: dict(zip(r[q], scores, strict=True)) for q in qids} for i, r in enumerate(rankings)}
    w0, c0 = time.perf_counter(), cpu_now()
    res = budget.simulate(runs=runs, qrels=qrels, depth=10, threshold=1)
    wall, cpu = time.perf_counter() - w0, cpu_now() - c0
    return {"size": turns, "topics": res["topics"], "wall": wall, "cpu": cpu, "rss_mb": rss_peak_mb()}


def slope(rows: list[dict], key: str = "cpu") -> float:
    return loglog_slope([r["size"] for r in rows], [r[key] for r in rows]) if len(rows) > 1 else float("nan")


def run_child(kind: str, size: int, tmp: Path) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child", kind, str(size), "--tmp", str(tmp)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="runs,pool,budget")
    ap.add_argument("--run-lines", default="1000000,5000000,20000000")
    ap.add_argument("--pool-turns", default="200,2000")
    ap.add_argument("--budget-turns", default="200,2000")
    ap.add_argument("--tmp", type=Path, default=Path(tempfile.gettempdir()) / "ecast-bench-growth")
    ap.add_argument("--child", nargs=2, metavar=("KIND", "SIZE"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.tmp.mkdir(parents=True, exist_ok=True)
    if args.child:
        kind, size = args.child[0], int(args.child[1])
        result = {"runs": lambda: child_runs(size, args.tmp), "pool": lambda: child_pool(size)}.get(
            kind, lambda: child_budget(size)
        )()
        print(json.dumps(result))
        return

    database = "PostgreSQL" if os.environ.get("DATABASE_URL") else "SQLite"
    print(f"# bench_growth — {cpu_model()}; {load_average()}; database {database}")
    kinds = args.only.split(",")
    sizes = {"runs": args.run_lines, "pool": args.pool_turns, "budget": args.budget_turns}
    for kind in kinds:
        rows = []
        for size in (int(s) for s in sizes[kind].split(",")):
            r = run_child(kind, size, args.tmp)
            rows.append(r)
            extra = ""
            if kind == "runs":
                extra = (
                    f" | plain read {r['base_wall']:.1f} s wall, {r['base_cpu']:.1f} s CPU → "
                    f"{r['cpu'] / r['base_cpu']:.1f}× CPU | peak RSS {r['rss_base_mb']:.0f} MB after the read; "
                    f"{r['rss_start_mb']:.0f} MB before the import, peak {r['rss_mb']:.0f} MB during it "
                    f"(+{r['rss_mb'] - r['rss_start_mb']:.0f} MB) | then the run's evaluation (eager here): "
                    f"{r['eval_cpu']:.2f} s CPU + {r['eval_db_cpu']:.2f} s database, peak {r['rss_eval_mb']:.0f} MB"
                )
            else:
                extra = f" | {r.get('pairs', r.get('topics'))} {'pairs' if kind == 'pool' else 'topics'}"
                extra += f" | peak RSS {r['rss_mb']:.0f} MB"
                if "rss_start_mb" in r:
                    grew = r["rss_mb"] - r["rss_start_mb"]
                    extra += f" ({r['rss_start_mb']:.0f} MB before the build: +{grew:.0f} MB)"
            figures = f"{r['wall']:8.2f} s wall, {r['cpu']:8.2f} s CPU"
            if r.get("db_cpu") is not None:
                figures += f" + {r['db_cpu']:.2f} s database CPU"
            print(f"{kind:7s} {size:>10,}: {figures}{extra}  ({load_average()})")
        print(
            f"{kind:7s} log–log slope of CPU seconds vs size: {slope(rows):.2f} (wall {slope(rows, 'wall'):.2f}); "
            f"linear ≤ 1.1"
        )


if __name__ == "__main__":
    main()
