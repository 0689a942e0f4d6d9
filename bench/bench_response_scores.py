"""Benchmark of response scores: a full rescore of the TREC RAG 2024 nugget judgments (45 runs × 21 topics, 927
responses, 13,158 labels) through the app against a plain Python loop over the same file.

The real file ``rag/trec_rag_2024/nugget_assignment.20241108.jl.gz`` is loaded once into a scratch database
(PostgreSQL ``test_<name>`` through Django's test-database machinery when DATABASE_URL is set, else a fresh SQLite
file under /tmp). Then, interleaved so both see the same load, best of ``--repeat`` each:

* app: ``evaluation.responses.selectors.nugget_table_compute`` — three ``values_list`` reads (responses, the bank's
  nuggets, the set's labels) and the plain scoring (``scores.nugget_table``): every response's V_strict / A_strict
  / V / A, coverage, each run's means — what a leaderboard read does after a label arrives (cache missed);
* app, live path: ``label_set_touch`` then ``label_set_scores`` (stamps read, table computed, cache written), and a
  cached read after it;
* baseline: a plain loop over the same file — gunzip, ``json.loads`` each line, nuggetizer's formulas per row, the
  mean per run; and the formulas alone over the rows already parsed.

Wall and CPU seconds (this process; the PostgreSQL backend's CPU beside it when it runs here), ratios, and the load
average. ``--profile`` prints a cProfile of one app rescore. The two results are checked equal before timing.

Usage: DATABASE_URL=postgres://postgres@127.0.0.1:5432/NAME python bench/bench_response_scores.py [--repeat 5]
       [--data ../shared/data] [--profile]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

VAR = Path(tempfile.mkdtemp(prefix="bench-responses-"))
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

from bench.common import backend_cpu, load_average, row  # noqa: E402

FILE = "rag/trec_rag_2024/nugget_assignment.20241108.jl.gz"
MEASURES = ("V_strict", "A_strict", "V", "A")


def formulas(nuggets: list[dict]) -> tuple[float, float, float, float]:
    """castorini/nuggetizer's scores of one response, written out."""
    vital = vs = vp = total = s = p = 0
    for n in nuggets:
        a = n["assignment"]
        total += 1
        s += a == "support"
        p += a == "partial_support"
        if n["importance"] == "vital":
            vital += 1
            vs += a == "support"
            vp += a == "partial_support"
    return (
        vs / vital if vital else 0.0,
        s / total if total else 0.0,
        (vs + 0.5 * vp) / vital if vital else 0.0,
        (s + 0.5 * p) / total if total else 0.0,
    )


def plain_run_means(rows) -> dict[str, tuple[float, ...]]:
    sums: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0.0, 0.0])
    for r in rows:
        acc = sums[r["run_id"]]
        for i, v in enumerate(formulas(r["nuggets"])):
            acc[i] += v
        acc[4] += 1
    return {run: tuple(a[i] / a[4] for i in range(4)) for run, a in sums.items()}


def plain_from_file(path: Path) -> dict[str, tuple[float, ...]]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return plain_run_means(json.loads(line) for line in handle if line.strip())


def timed(fn, *args, **kwargs):
    """(result, wall s, this process's CPU s, database backend CPU s)."""
    b = backend_cpu()
    t, c = time.perf_counter(), time.process_time()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t, time.process_time() - c, backend_cpu() - b


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    path = args.data / FILE

    old_name = connection.settings_dict["NAME"]
    if USING_PG:
        connection.creation.create_test_db(verbosity=0, autoclobber=True)
    else:
        call_command("migrate", run_syncdb=True, verbosity=0)
    try:
        from evaluation.models import ResponseRun
        from evaluation.responses import selectors as sel
        from evaluation.responses import services
        from tests.evaluation.responses.helpers import load_nugget_assignments, read_jsonl

        t0 = time.perf_counter()
        rows = list(read_jsonl(path))
        label_set = load_nugget_assignments(rows, name="RAG 2024 bench")
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("ANALYZE")
        db = f"{connection.vendor} ({connection.settings_dict['NAME']})"
        print(f"database: {db}; load {time.perf_counter() - t0:.1f} s; {load_average()}")
        labels = sum(len(r["nuggets"]) for r in rows)
        runs = len({r["run_id"] for r in rows})
        print(f"data: {len(rows)} responses, {runs} runs, {len({r['qid'] for r in rows})} topics, {labels:,} labels")

        # The same figures, or the timing means nothing.
        names = dict(ResponseRun.objects.filter(collection=label_set.collection).values_list("pk", "name"))
        table = sel.nugget_table_compute(label_set=label_set)
        plain = plain_from_file(path)
        worst = max(abs(table.per_run[pk][m] - plain[names[pk]][i]) for pk in names for i, m in enumerate(MEASURES))
        if worst > 1e-12:
            raise SystemExit(f"app and plain loop disagree by {worst}")

        app, live, cached, base, base_mem = [], [], [], [], []
        for _ in range(args.repeat):
            app.append(timed(sel.nugget_table_compute, label_set=label_set)[1:])
            base.append(timed(plain_from_file, path)[1:])
            base_mem.append(timed(plain_run_means, rows)[1:])

            def live_read():
                services.label_set_touch(label_set=label_set)
                return sel.label_set_scores(label_set=label_set)

            live.append(timed(live_read)[1:])
            cached.append(timed(sel.label_set_scores, label_set=label_set)[1:])

        def best(samples):
            return min(samples, key=lambda s: s[0])

        (aw, ac, ad), (lw, lc, ld), (cw, cc, cd) = best(app), best(live), best(cached)
        (bw, bc, _), (mw, mc, _) = best(base), best(base_mem)
        print(f"[rescore] {load_average()}")

        def line(what: str, wall: float, cpu: float, db: float | None = None) -> None:
            extra = "" if db is None else f"  DB backend CPU {db * 1000:6.1f} ms"
            print(f"[rescore] {what:<58} wall {wall * 1000:7.1f} ms  CPU {cpu * 1000:7.1f} ms{extra}")

        line(f"app, 3 reads + scoring (best of {args.repeat})", aw, ac, ad)
        line("app, live path (touch + stamps + compute + cache write)", lw, lc, ld)
        line("app, cached read (stamps + cache read)", cw, cc, cd)
        line("baseline: plain loop over the file (gunzip, json, formulas)", bw, bc)
        line("baseline: formulas alone over the parsed rows", mw, mc)
        print(
            f"[rescore] ratio app / plain loop over the file: wall {aw / bw:.2f}x, CPU {ac / bc:.2f}x "
            f"(app + DB backend CPU: {(ac + ad) / bc:.2f}x)"
        )
        print(f"[rescore] ratio live path / plain loop: wall {lw / bw:.2f}x; cached read / plain loop: {cw / bw:.3f}x")
        row(
            "full rescore, 45 runs × 21 topics",
            f"{aw * 1000:.1f} ms",
            f"plain loop {bw * 1000:.1f} ms",
            f"{aw / bw:.2f}x",
            "report",
        )
        if args.profile:
            import cProfile
            import pstats

            prof = cProfile.Profile()
            prof.runcall(sel.nugget_table_compute, label_set=label_set)
            pstats.Stats(prof).sort_stats("cumulative").print_stats(15)
    finally:
        if USING_PG:
            connection.creation.destroy_test_db(old_name, verbosity=0)


if __name__ == "__main__":
    main()
