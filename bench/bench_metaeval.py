"""Benchmark of the meta-evaluation (Albahem et al. 2019) on the shared TREC DD 2016 per-topic table.

1. Intuitiveness Test for all 21 pairs of the 7 complex metrics + Metric Unanimity of each, simple metrics
   p + strec + ttime, all 10 iterations pooled (21 runs → 210 run pairs × 530 topic-iterations): vectorised
   (evaluation.analyses.metaeval) against a straightforward nested-loop version written here (loops over run pairs and
   topics, like the authors' reference code) in the same run; the two must give identical counts.
2. The full default analysis (5 dimension sets × iteration groups 1, 3, 10, All) — vectorised only.
3. A synthetic 30 runs × 200 topics × 10 metrics table (5 complex, 5 simple) — vectorised only.
Prints figures and the ratio; asserts nothing about time.

Usage: python bench/bench_metaeval.py
"""

from __future__ import annotations

import itertools
import math
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
SHARED = Path(os.environ.get("ECAST_SHARED_DATA", REPO.parent / "shared" / "data"))

from evaluation.analyses import metaeval as me  # noqa: E402

SIMPLE = ["p", "strec", "ttime"]


def nested_loop(df: pd.DataFrame, complex_metrics: list[str], simple: list[str]) -> tuple[dict, dict]:
    """Algorithms 1 and 2 as loops over run pairs × (iteration, topic), reading a nested dict."""
    data: dict = {}
    for rec in df.to_dict("records"):
        data.setdefault(rec["run"], {})[(rec["iteration"], rec["topic"])] = rec
    runs = sorted(data)
    cases = sorted({c for r in runs for c in data[r]})
    intuit = {}
    for c1, c2 in itertools.combinations(complex_metrics, 2):
        dis = ok1 = ok2 = 0
        for r1, r2 in itertools.combinations(runs, 2):
            for case in cases:
                if case not in data[r1] or case not in data[r2]:
                    continue
                a, b = data[r1][case], data[r2][case]
                d1, d2 = a[c1] - b[c1], a[c2] - b[c2]
                ds = [a[s] - b[s] for s in simple]
                if d1 * d2 < 0:
                    dis += 1
                    ok1 += all(d1 * x > 0 for x in ds)
                    ok2 += all(d2 * x > 0 for x in ds)
        intuit[(c1, c2)] = (dis, ok1, ok2)
    mu = {}
    for c in complex_metrics:
        n = dm = dms = dmms = 0.0
        for r1, r2 in itertools.combinations(runs, 2):
            for case in cases:
                if case not in data[r1] or case not in data[r2]:
                    continue
                a, b = data[r1][case], data[r2][case]
                n += 1
                dm += 0.5 if a[c] == b[c] else 1
                ge = all(a[s] >= b[s] for s in simple)
                le = all(a[s] <= b[s] for s in simple)
                dms += ge or le
                dmms += (ge and a[c] >= b[c]) or (le and a[c] <= b[c])
        mu[c] = math.log((dmms / n) / ((dm / n) * (dms / n)))
    return intuit, mu


def vectorised(df: pd.DataFrame, complex_metrics: list[str], simple: list[str]) -> tuple[dict, dict]:
    pa = me.pair_deltas(df, complex_metrics + simple)
    intuit = {}
    for c1, c2 in itertools.combinations(complex_metrics, 2):
        r = me.intuitiveness(pa, c1, c2, simple)
        intuit[(c1, c2)] = (r["disagreements"], r["correct1"], r["correct2"])
    return intuit, {c: me.unanimity(pa, c, simple) for c in complex_metrics}


def main() -> None:
    df = me.load_table(SHARED / "trec_dd_meta" / "trec-all-2016-evals.csv.gz")
    n_runs, n_topics, n_its = df["run"].nunique(), df["topic"].nunique(), df["iteration"].nunique()
    print(f"TREC DD 2016: {n_runs} runs, {n_topics} topics, {n_its} iterations")

    t0 = time.perf_counter()
    fast_it, fast_mu = vectorised(df, me.DD_COMPLEX, SIMPLE)
    fast = time.perf_counter() - t0
    print(f"1. vectorised: 21 intuitiveness pairs + 7 unanimity values, all iterations pooled: {fast:.3f} s")
    t0 = time.perf_counter()
    slow_it, slow_mu = nested_loop(df, me.DD_COMPLEX, SIMPLE)
    slow = time.perf_counter() - t0
    same = slow_it == fast_it and all(abs(slow_mu[c] - fast_mu[c]) < 1e-12 for c in fast_mu)
    print(f"   nested-loop baseline: {slow:.3f} s; identical results: {same}")
    print(f"   ratio baseline / vectorised: {slow / fast:.1f}×")

    t0 = time.perf_counter()
    res = me.meta_evaluate(df, me.DD_COMPLEX, me.DEFAULT_DIMENSIONS)
    full = time.perf_counter() - t0
    n_set, n_groups = len(res["settings"]), len(res["iteration_groups"])
    print(f"2. full analysis, {n_set} settings (5 dimension sets × {n_groups} iteration groups): {full:.3f} s")
    for s in res["settings"]:
        if s["dimension"] == "Rel+Div+Eff":
            it, rank, rho = s["iterations"], s["intuitiveness_rank"], s["spearman"]
            print(f"   Rel+Div+Eff it {it:>3}: intuitiveness rank {rank}, Spearman ρ vs unanimity {rho}")

    rng = np.random.default_rng(0)
    rows = 30 * 200
    synth = pd.DataFrame(
        {
            "run": np.repeat([f"r{i}" for i in range(30)], 200),
            "iteration": 1,
            "topic": np.tile([str(t) for t in range(200)], 30),
        }
    )
    for k in range(10):
        synth[f"m{k}"] = np.round(rng.random(rows), 3)
    t0 = time.perf_counter()
    me.meta_evaluate(synth, [f"m{k}" for k in range(5)], {"all simple": [f"m{k}" for k in range(5, 10)]})
    took = time.perf_counter() - t0
    print(f"3. synthetic 30 runs × 200 topics × 10 metrics (10 complex pairs, 435 run pairs): {took:.3f} s")


if __name__ == "__main__":
    main()
