"""Benchmark of the judging-budget simulation (evaluation.analyses.budget) against a plain loop, same run.

Four adjudication orders (depth-first, move-to-front, MM, MM-NS) replayed on CAsT 2019 (16 DECAF runs, 2019 qrels,
threshold 1) — or CAsT 2020 (8 DECAF runs, 2020 qrels, threshold 2) with ``--year 2020`` — at pool depth 10:
relevant found per judgment and Kendall τ (AP, nDCG@3, bpref, infAP) at 13 shares of the pool judged. The plain loop
(tests/evaluation/analyses/budget_reference.py: pytrec_eval and scipy called directly, nothing cached) runs on the
same data; both must agree. Prints the closing-note figures (judgments to find 50 % / 80 % of the pooled relevant
passages; τ at 10 % / 25 % of the pool judged), both timings and their ratio; asserts nothing about time.

Usage: python bench/bench_judging_order.py [--year 2019|2020] [--depth 10]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ecast.settings")
SHARED = Path(os.environ.get("ECAST_SHARED_DATA", REPO.parent / "shared" / "data"))

from ecast.imports.parsers import read_qrels, read_run  # noqa: E402
from evaluation.analyses import budget  # noqa: E402
from tests.evaluation.analyses.budget_reference import TREC_EVAL, plain_loop  # noqa: E402

COLLECTIONS = {
    "2019": ("runs/cast2019_decaf", 16, "cast/2019/2019qrels.txt", 1),
    "2020": ("runs/cast2020_decaf", 8, "cast/2020/2020qrels.txt", 2),
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--year", choices=sorted(COLLECTIONS), default="2019")
    parser.add_argument("--depth", type=int, default=10)
    args = parser.parse_args()
    folder, n_runs, qrels_file, threshold = COLLECTIONS[args.year]
    runs = {f"exp{i}": read_run(SHARED / folder / f"exp{i}.run.gz") for i in range(1, n_runs + 1)}
    qrels = read_qrels(SHARED / qrels_file)
    strategies = budget.DEFAULT_STRATEGIES
    fractions = budget.DEFAULT_FRACTIONS
    common = {"depth": args.depth, "threshold": threshold, "strategies": strategies, "fractions": fractions}

    t0 = time.perf_counter()
    res = budget.simulate(runs=runs, qrels=qrels, measures=list(TREC_EVAL), **common)
    fast = time.perf_counter() - t0
    t0 = time.perf_counter()
    ref = plain_loop(runs, qrels, **common)
    slow = time.perf_counter() - t0

    agree = all(
        [(p["budget"], p["judgments"], p["found"]) for p in res["strategies"][s]["curve"]] == ref[s]["curve"]
        and res["strategies"][s]["cost"] == ref[s]["cost"]
        and all(
            abs(a[m] - b[m]) < 1e-9
            for a, b in zip(res["strategies"][s]["tau"], ref[s]["tau"], strict=True)
            for m in TREC_EVAL
        )
        for s in strategies
    )
    print(
        f"CAsT {args.year}: {len(runs)} runs, {res['topics']} judged turns, depth {args.depth}, threshold {threshold}: "
        f"{res['pool_size']} pooled pairs, {res['relevant_in_pool']} relevant"
    )
    heads = "  ".join(f"τ{m}@10%/25%".rjust(18) for m in TREC_EVAL)
    print(f"{'strategy':<12} {'50% rel':>8} {'80% rel':>8}   {heads}")
    for s in strategies:
        r = res["strategies"][s]
        at = {row["fraction"]: row for row in r["tau"]}
        taus = "  ".join(f"{at[0.1][m]:8.3f}/{at[0.25][m]:<8.3f}".rjust(18) for m in TREC_EVAL)
        print(f"{s:<12} {r['cost']['0.5']:>8} {r['cost']['0.8']:>8}   {taus}")
    print(f"simulation {fast:.2f} s · plain loop {slow:.2f} s · ratio {slow / fast:.1f}× · results agree: {agree}")


if __name__ == "__main__":
    main()
