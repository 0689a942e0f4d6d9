"""Budget simulation of adjudication orders (Django-free): replay each strategy against a complete qrels.

For every topic (a judged turn), the pool is the union of the runs' top-``depth`` documents; a strategy
(``evaluation.adjudication``) orders that pool, answered by the known judgments (grade ≥ threshold = relevant; a
pooled document the qrels lack is non-relevant, as it would be judged). Two reports, as in Losada, Parapar &
Barreiro (IP&M 2017, §5: relevant documents found per number of judgments; Kendall τ of system rankings):

- *relevant found*: with a budget of b judgments per topic, every topic judges the first b documents of its order;
  the curve gives, per b, the judgments spent Σ_t min(b, |pool_t|) and the relevant documents found.
- *ranking agreement*: at a fraction f of each topic's pool judged (its first ⌈f·|pool_t|⌉ documents), every run
  is scored with qrels holding only those judgments (unjudged = non-relevant for AP/nDCG; bpref ignores unjudged
  documents, infAP estimates from the judged ones, as trec_eval does) and the system ranking by mean score is
  compared with the ranking under the full qrels by Kendall's τ (``evaluation.stats.kendall_tau``, scipy).

A prior (another qrels version, e.g. earlier or automatic labels) seeds the bandit arms: per topic, each run's
top-``depth`` documents that the prior grades, in rank order (``evaluation.adjudication``, "Prior").

Order, so that a simulation is reproducible: topics (turns) are taken in natural order, digit runs compared as
numbers (68_2 before 68_10: ``ecast.trees.natural_key``), and so are runs where a strategy breaks ties between them
(exp2 before exp10; ``evaluation.adjudication``, "Ties"). Because move-to-front and the bandits depend on that
tie order, each of them is replayed under ``ORDER_SEEDS`` seeded shuffles of the runs as well, and the report gives
the lowest and highest cost over those orders and the name order beside the cost in name order (``cost_spread``).

Metrics come from ``evaluation.metrics`` (ir_measures / pytrec_eval, trec_eval -c semantics).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ecast.core.errors import DomainError
from ecast.trees import natural_key
from evaluation import adjudication, metrics, stats


class BudgetError(DomainError, ValueError):
    """A judging-budget simulation that cannot run on the data given."""


DEFAULT_STRATEGIES = ("depth_first", "mtf", "mm_ns", "mm")
DEFAULT_MEASURES = ("AP", "nDCG@3", "Bpref", "infAP")
DEFAULT_FRACTIONS = (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
TARGETS = (0.5, 0.8)  # share of the pool's relevant documents whose cost is reported
INFERRED = {"infAP"}  # measures scored with the pooled-but-unjudged documents marked −1
ORDER_SEEDS = (1, 2, 3, 4, 5)  # seeded shuffles of the runs, for the spread of the tie-dependent strategies' costs

Ranked = Mapping[str, Mapping[str, Sequence[str]]]  # run → topic → ranked documents
Qrels = Mapping[str, Mapping[str, int]]


def ranked_lists(run: Mapping[str, Mapping[str, float]]) -> dict[str, list[str]]:
    """A run {topic: {doc: score}} as ranked lists: score descending, then document id descending (trec_eval)."""
    return {
        q: [d for d, _ in sorted(docs.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)] for q, docs in run.items()
    }


def topic_pools(ranked: Ranked, topics: Sequence[str], depth: int) -> dict[str, dict[str, list[str]]]:
    """Per topic: {run: its top-``depth`` documents} (runs that did not rank the topic are left out)."""
    return {t: {r: list(lists[t][:depth]) for r, lists in ranked.items() if lists.get(t)} for t in topics}


def topic_prior(lists: Mapping[str, Sequence[str]], graded: Mapping[str, int], threshold: int) -> dict[str, list[bool]]:
    """Per run: relevance of its listed documents that the prior grades, in rank order."""
    out = {r: [graded[d] >= threshold for d in docs if d in graded] for r, docs in lists.items()}
    return {r: seen for r, seen in out.items() if seen}


def budget_costs(orders: Mapping[str, list[str]], rel_of: Mapping[str, set[str]], targets: Mapping[str, int]) -> dict:
    """Judgments needed to find each target number of relevant documents (None: never reached).

    The budget grows one judgment at a time, spread evenly: the b-th document of every topic (in natural topic
    order: 68_2 before 68_10) before any topic's (b+1)-th, so the count is exact rather than a multiple of the number
    of topics.
    """
    out: dict[str, int | None] = dict.fromkeys(targets)
    if not targets:
        return out
    longest = max((len(o) for o in orders.values()), default=0)
    spent = found = 0
    for b in range(longest):
        for t in sorted(orders, key=natural_key):
            if b < len(orders[t]):
                spent += 1
                found += orders[t][b] in rel_of[t]
                for key, target in targets.items():
                    if out[key] is None and found >= target:
                        out[key] = spent
    for key, target in targets.items():
        if out[key] is None and target <= 0:
            out[key] = 0
    return out


def simulate(
    *,
    runs: Mapping[str, Mapping[str, Mapping[str, float]]],
    qrels: Qrels,
    depth: int,
    threshold: int,
    strategies: Sequence[str] = DEFAULT_STRATEGIES,
    measures: Sequence[str] = DEFAULT_MEASURES,
    fractions: Sequence[float] = DEFAULT_FRACTIONS,
    prior: Qrels | None = None,
    progress: Callable[[int, int], None] | None = None,
    order_seeds: Sequence[int] = ORDER_SEEDS,
) -> dict[str, Any]:
    """Relevant found per judgment budget and τ per pool fraction, for every strategy (see the module docstring)."""
    if len(runs) < 2:
        raise BudgetError("the simulation needs at least two runs to rank")
    topics = sorted((t for t in qrels if any(run.get(t) for run in runs.values())), key=natural_key)
    if not topics:
        raise BudgetError("no judged topic is ranked by the runs")
    ranked = {name: ranked_lists(run) for name, run in runs.items()}
    pools = topic_pools(ranked, topics, depth)
    sizes = {t: len({d for docs in pools[t].values() for d in docs}) for t in topics}
    rel_of = {t: {d for d, g in qrels[t].items() if g >= threshold} for t in topics}
    total_rel = sum(len(rel_of[t] & {d for docs in pools[t].values() for d in docs}) for t in topics)
    seeds = {t: topic_prior(pools[t], (prior or {}).get(t, {}), threshold) for t in topics} if prior else {}
    targets = {str(p): math.ceil(p * total_rel) for p in TARGETS}
    total = len(strategies) * (len(topics) + len(fractions))
    done = 0

    full_means = _system_means(runs, qrels, topics, measures, threshold)
    out: dict[str, Any] = {
        "topics": len(topics),
        "runs": sorted(runs, key=natural_key),
        "depth": depth,
        "threshold": threshold,
        "pool_size": sum(sizes.values()),
        "relevant_in_pool": total_rel,
        "measures": list(measures),
        "fractions": list(fractions),
        "prior": bool(prior),
        "order_seeds": list(order_seeds),
        "full_means": full_means,
        "strategies": {},
    }
    for name in strategies:
        orders: dict[str, list[str]] = {}
        for t in topics:
            orders[t] = adjudication.judging_order(name, pools[t], rel_of[t], prior=seeds.get(t))
            done += 1
            if progress:
                progress(done, total)
        curve = _found_curve(orders, rel_of)
        taus: list[dict[str, Any]] = []
        for f in fractions:
            judged = {t: orders[t][: math.ceil(f * len(orders[t]))] for t in topics}
            partial = {t: {d: int(qrels[t].get(d, 0)) for d in docs} for t, docs in judged.items()}
            # infAP tells "pooled but not judged yet" (grade −1 in trec_eval's qrels) from "never pooled".
            sampled = {t: {**dict.fromkeys(orders[t], -1), **partial[t]} for t in topics}
            means = _system_means(runs, partial, topics, [m for m in measures if m not in INFERRED], threshold)
            means.update(_system_means(runs, sampled, topics, [m for m in measures if m in INFERRED], threshold))
            row: dict[str, Any] = {"fraction": f, "judgments": sum(len(v) for v in judged.values())}
            for m in measures:
                row[m] = stats.kendall_tau(means[m], full_means[m])["tau"]
            taus.append(row)
            done += 1
            if progress:
                progress(done, total)
        out["strategies"][name] = {
            "label": adjudication.STRATEGIES[name],
            "curve": curve,
            "cost": (cost := budget_costs(orders, rel_of, targets)),
            "cost_spread": _cost_spread(name, pools, rel_of, targets, seeds, order_seeds, cost),
            "tau": taus,
        }
    return out


def _cost_spread(
    name: str,
    pools: Mapping[str, Mapping[str, Sequence[str]]],
    rel_of: Mapping[str, set[str]],
    targets: Mapping[str, int],
    prior: Mapping[str, Any],
    order_seeds: Sequence[int],
    name_order_cost: Mapping[str, int | None],
) -> dict[str, dict[str, Any]]:
    """Per target: the costs under each seeded shuffle of the runs, and the lowest and highest over those and the
    name order, so the cost shown always lies within its own bracket (None where the strategy does not depend on the
    run order, or no seed is given)."""
    if name == "depth_first" or not order_seeds:
        return {}
    names = sorted({r for lists in pools.values() for r in lists}, key=natural_key)
    costs: list[dict[str, int | None]] = []
    for seed in order_seeds:
        shuffled = list(names)
        random.Random(seed).shuffle(shuffled)
        orders = {
            t: adjudication.judging_order(
                name, lists, rel_of[t], prior=prior.get(t), order=[r for r in shuffled if r in lists]
            )
            for t, lists in pools.items()
        }
        costs.append(budget_costs(orders, rel_of, targets))
    out: dict[str, dict[str, Any]] = {}
    for key in targets:
        values = [c[key] for c in costs]
        reached = [v for v in [*values, name_order_cost.get(key)] if v is not None]
        out[key] = {"values": values, "min": min(reached, default=None), "max": max(reached, default=None)}
    return out


def strategy_results(res: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """A stored simulation's strategies in the product's order (depth-first, MTF, MM-NS, MM): the stored mapping's own
    key order does not survive PostgreSQL's jsonb, which sorts keys by length."""
    order = {name: i for i, name in enumerate(adjudication.STRATEGIES)}
    items = res.get("strategies", {}).items()
    return sorted(items, key=lambda kv: (order.get(kv[0], len(order)), kv[0]))


def _found_curve(orders: Mapping[str, list[str]], rel_of: Mapping[str, set[str]]) -> list[dict[str, int]]:
    """(budget per topic, judgments spent, relevant found) for b = 0 … the largest pool."""
    longest = max((len(o) for o in orders.values()), default=0)
    spent = [0] * (longest + 1)
    found = [0] * (longest + 1)
    for t, order in orders.items():
        hits = 0
        for b in range(1, longest + 1):
            if b <= len(order):
                hits += order[b - 1] in rel_of[t]
                spent[b] += b
            else:
                spent[b] += len(order)
            found[b] += hits
    return [{"budget": b, "judgments": spent[b], "found": found[b]} for b in range(longest + 1)]


def _system_means(
    runs: Mapping[str, Mapping[str, Mapping[str, float]]],
    qrels: Qrels,
    topics: Sequence[str],
    measures: Sequence[str],
    threshold: int,
) -> dict[str, dict[str, float]]:
    """{measure: {run: mean over ``topics``}} (a topic the qrels or run lacks scores 0, trec_eval -c)."""
    out: dict[str, dict[str, float]] = {m: {} for m in measures}
    if not measures:
        return out
    evaluate = metrics.make_evaluator(qrels, list(measures), rel_threshold=threshold, judged_qids=topics)
    for name, run in runs.items():
        per = evaluate({t: dict(run[t]) for t in topics if t in run})
        for m in measures:
            out[m][name] = math.fsum(per[m].get(t, 0.0) for t in topics) / len(topics)
    return out
