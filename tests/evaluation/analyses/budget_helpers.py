"""A deliberately plain budget simulation (pytrec_eval and scipy called directly, nothing cached or vectorised):
the reference that ``evaluation.analyses.budget.simulate`` must equal, in tests and in bench/bench_judging_order.py."""

from __future__ import annotations

import math

import pytrec_eval
from scipy import stats as scipy_stats

from ecast.trees import natural_key
from evaluation import adjudication

TREC_EVAL = {"AP": "map", "nDCG@3": "ndcg_cut_3", "Bpref": "bpref", "infAP": "infAP"}


def plain_loop(runs, qrels, *, depth, threshold, strategies, fractions):
    """The simulation written as plainly as possible: pytrec_eval and scipy called directly, nothing cached."""
    topics = sorted((t for t in qrels if any(t in r for r in runs.values())), key=natural_key)  # 68_2 before 68_10
    out = {}
    for name in strategies:
        orders = {}
        for t in topics:
            lists = {}
            for run_name, run in runs.items():
                if t in run:
                    ranked = sorted(run[t].items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
                    lists[run_name] = [d for d, _ in ranked[:depth]]
            relevant = {d for d, g in qrels[t].items() if g >= threshold}
            orders[t] = adjudication.judging_order(name, lists, relevant)
        curve = []
        for b in range(max(len(o) for o in orders.values()) + 1):
            spent = 0
            found = 0
            for t in topics:
                for d in orders[t][:b]:
                    spent += 1
                    if qrels[t].get(d, 0) >= threshold:
                        found += 1
            curve.append((b, spent, found))
        total_rel = sum(1 for t in topics for d in orders[t] if qrels[t].get(d, 0) >= threshold)
        sequence = []  # one judgment at a time, the b-th of every topic before any (b+1)-th
        for b in range(max(len(o) for o in orders.values())):
            for t in topics:
                if b < len(orders[t]):
                    sequence.append(qrels[t].get(orders[t][b], 0) >= threshold)
        cost = {}
        for p in (0.5, 0.8):
            hits = 0
            for i, rel in enumerate(sequence, start=1):
                hits += rel
                if hits >= math.ceil(p * total_rel):
                    cost[str(p)] = i
                    break
        taus = []
        for f in fractions:
            partial = {}
            sampled = {}
            for t in topics:
                k = math.ceil(f * len(orders[t]))
                partial[t] = {d: qrels[t].get(d, 0) for d in orders[t][:k]}
                sampled[t] = {d: -1 for d in orders[t][k:]}
                sampled[t].update(partial[t])
            row = {"fraction": f}
            for measure, trec in TREC_EVAL.items():
                judged = sampled if measure == "infAP" else partial
                partial_eval = pytrec_eval.RelevanceEvaluator(judged, {trec}, relevance_level=threshold)
                full_eval = pytrec_eval.RelevanceEvaluator(
                    {t: qrels[t] for t in topics}, {trec}, relevance_level=threshold
                )
                names = sorted(runs)
                under_partial = []
                under_full = []
                for run_name in names:
                    run = {t: runs[run_name][t] for t in topics}
                    under_partial.append(sum(v[trec] for v in partial_eval.evaluate(run).values()) / len(topics))
                    under_full.append(sum(v[trec] for v in full_eval.evaluate(run).values()) / len(topics))
                row[measure] = scipy_stats.kendalltau(under_partial, under_full).statistic
            taus.append(row)
        out[name] = {"curve": curve, "cost": cost, "tau": taus}
    return out
