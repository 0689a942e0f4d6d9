"""Benchmark of the pivot analysis (González Sáez et al. 2021) on the CLEF eHealth 2018 runs.

50 random 50/50 topic splits × 9 pivots × 6 metrics (AP, Rprec, Bpref, RR, nDCG@10, P@10): consistency and
correctness, vectorised (evaluation.analyses.pivots) against a straightforward nested-loop version written here
(per metric, split, pivot: Python means, scipy.stats.pearsonr and kendalltau) in the same run. Both must agree.
Prints figures and the ratio; asserts nothing about time.

Usage: python bench/bench_pivots.py
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ecast.settings")
SHARED = Path(os.environ.get("ECAST_SHARED_DATA", REPO.parent / "shared" / "data"))

from evaluation.analyses import pivots  # noqa: E402
from tests.evaluation.analyses.clef_helpers import clef_matrices  # noqa: E402


def nested_loop(scores: np.ndarray, masks: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The obvious implementation: loops over splits and pivots, Python means, scipy per correlation."""
    n_splits, n_top = masks.shape
    n_sys = scores.shape[0]
    cons = np.empty((n_splits, n_sys))
    corr = np.empty((n_splits, n_sys))
    reference = [sum(scores[s]) / n_top for s in range(n_sys)]
    assign = {p: pivots.system_assignments(n_sys, p, n_splits=n_splits, seed=seed) for p in range(n_sys)}
    for k in range(n_splits):
        ee1_topics = [t for t in range(n_top) if masks[k, t]]
        ee2_topics = [t for t in range(n_top) if not masks[k, t]]
        m1 = [sum(scores[s, t] for t in ee1_topics) / len(ee1_topics) for s in range(n_sys)]
        m2 = [sum(scores[s, t] for t in ee2_topics) / len(ee2_topics) for s in range(n_sys)]
        for p in range(n_sys):
            d1 = [m1[s] - m1[p] for s in range(n_sys) if s != p]
            d2 = [m2[s] - m2[p] for s in range(n_sys) if s != p]
            cons[k, p] = stats.pearsonr(d1, d2).statistic
            est = [0.0 if s == p else (m1[s] - m1[p] if assign[p][k, s] else m2[s] - m2[p]) for s in range(n_sys)]
            # rounded like the product, so equal means stay tied whatever the summation order
            corr[k, p] = stats.kendalltau(np.round(est, 12), np.round(reference, 12)).statistic
    return cons, corr


def main() -> None:
    t0 = time.perf_counter()
    systems, topics, mats, _ = clef_matrices(SHARED, pivots.DEFAULT_METRICS)
    load = time.perf_counter() - t0
    print(f"CLEF eHealth 2018: {len(systems)} runs × {len(topics)} topics, 6 metrics evaluated in {load:.2f} s")

    t0 = time.perf_counter()
    res = pivots.pivot_analysis(mats, systems, n_splits=50, seed=0)
    fast = time.perf_counter() - t0
    print(f"vectorised pivot analysis, 50 splits × {len(systems)} pivots × 6 metrics: {fast:.3f} s")

    masks = pivots.random_splits(len(topics), n_splits=50, seed=0)
    t0 = time.perf_counter()
    worst = 0.0
    for m in pivots.DEFAULT_METRICS:
        cons, corr = nested_loop(mats[m], masks, seed=0)
        worst = max(
            worst,
            float(np.nanmax(np.abs(cons - np.array(res.consistency_splits[m], dtype=float)))),
            float(np.nanmax(np.abs(corr - np.array(res.correctness_splits[m], dtype=float)))),
        )
    slow = time.perf_counter() - t0
    print(f"nested-loop baseline (same splits): {slow:.3f} s; max |difference| {worst:.2e}")
    print(f"ratio baseline / vectorised: {slow / fast:.1f}×")
    print("mean consistency per metric (over pivots):")
    for m in pivots.DEFAULT_METRICS:
        print(
            f"  {m:8s} consistency {np.nanmean(res.consistency_mean[m]):.3f}"
            f"  correctness τ {np.nanmean(res.correctness_mean[m]):.3f}"
        )


if __name__ == "__main__":
    main()
