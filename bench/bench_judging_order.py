"""Benchmark of the judging-budget simulation (evaluation.analyses.budget) against a plain loop, same run.

Four adjudication orders (depth-first, move-to-front, MM, MM-NS) replayed on CAsT 2019 (16 DECAF runs, 2019 qrels,
threshold 1) — or CAsT 2020 (8 DECAF runs, 2020 qrels, threshold 2) with ``--year 2020`` — at pool depth 10:
relevant found per judgment and Kendall τ (AP, nDCG@3, bpref, infAP) at 13 shares of the pool judged. The plain loop
(tests/evaluation/analyses/budget_helpers.py: pytrec_eval and scipy called directly, nothing cached) runs on the
same data; both must agree. Prints the closing-note figures (judgments to find 50 % / 80 % of the pooled relevant
passages; τ at 10 % / 25 % of the pool judged), both timings and their ratio; asserts nothing about time.

``--prior-qrels FILE`` (repeatable) measures the bandits' prior option (``evaluation.adjudication``, "Prior"): MM-NS
and MM are replayed again with the arms seeded from FILE's grades of the pooled documents (e.g. LLM labels, or the
official grades of the same pairs as an upper bound), and their rows are printed beside the unseeded ones, with how
many pooled pairs the file grades. The truth the orders are replayed against stays the full qrels.

Usage: python bench/bench_judging_order.py [--year 2019|2020] [--depth 10] [--prior-qrels FILE ...]
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

from bench.common import load_average  # noqa: E402
from ecast.imports.formats.qrels import read_qrels  # noqa: E402
from ecast.imports.formats.runs import read_run  # noqa: E402
from evaluation import adjudication  # noqa: E402
from evaluation.analyses import budget  # noqa: E402
from tests.evaluation.analyses.budget_helpers import TREC_EVAL, plain_loop  # noqa: E402

COLLECTIONS = {
    "2019": ("runs/cast2019_decaf", 16, "cast/2019/2019qrels.txt", 1),
    "2020": ("runs/cast2020_decaf", 8, "cast/2020/2020qrels.txt", 2),
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--year", choices=sorted(COLLECTIONS), default="2019")
    parser.add_argument("--depth", type=int, default=10)
    parser.add_argument("--prior-qrels", type=Path, action="append", default=[], metavar="FILE")
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
    print(f"{'strategy':<22} {'50% rel':>8} {'80% rel':>8}   {tau_heads()}")
    for s in strategies:
        print(row(s, res["strategies"][s]))
    for path in args.prior_qrels:
        prior = read_qrels(path)
        covered = prior_coverage(res, prior, runs, threshold)
        print(f"prior {path.name}: grades {covered[0]} pooled pairs ({covered[1]} of them relevant at ≥ {threshold})")
        bandits = {**common, "strategies": adjudication.BANDITS}
        seeded = budget.simulate(runs=runs, qrels=qrels, measures=list(TREC_EVAL), prior=prior, **bandits)
        for s in adjudication.BANDITS:
            print(row(f"{s} + {path.stem}", seeded["strategies"][s]))
    print(f"simulation {fast:.2f} s · plain loop {slow:.2f} s · ratio {slow / fast:.1f}× · results agree: {agree}")
    print(load_average())


def tau_heads() -> str:
    return "  ".join(f"τ{m}@10%/25%".rjust(18) for m in TREC_EVAL)


def row(label: str, r: dict) -> str:
    """One strategy's line: judgments to find 50 % / 80 % of the pooled relevant passages, τ at 10 % / 25 % judged."""
    at = {p["fraction"]: p for p in r["tau"]}
    taus = "  ".join(f"{at[0.1][m]:8.3f}/{at[0.25][m]:<8.3f}".rjust(18) for m in TREC_EVAL)
    return f"{label:<22} {r['cost']['0.5']:>8} {r['cost']['0.8']:>8}   {taus}"


def prior_coverage(res: dict, prior: dict, runs: dict, threshold: int) -> tuple[int, int]:
    """(pooled pairs the prior grades, those it calls relevant) over the simulated topics."""
    ranked = {name: budget.ranked_lists(run) for name, run in runs.items()}
    topics = [t for t in sorted(prior) if any(t in lists for lists in ranked.values())]
    pools = budget.topic_pools(ranked, topics, res["depth"])
    pooled = {(t, d) for t in topics for docs in pools[t].values() for d in docs if d in prior[t]}
    return len(pooled), sum(prior[t][d] >= threshold for t, d in pooled)


if __name__ == "__main__":
    main()
