"""IR metrics over plain dicts, through ir_measures (pytrec_eval provider = trec_eval's own C code).

No Django here: callers pass ``qrels = {qid: {docid: grade}}`` and ``run = {qid: {docid: score}}`` and get
per-query values back. Semantics follow ``trec_eval -c``: every judged query gets a value, 0 for queries the run
has no ranking for, so means are taken over the judged queries (the CAsT/DECAF convention).

Measures are named by ir_measures strings ("nDCG@3", "AP", "R@1000", "P@10", "Bpref", "RR", "Rprec", "infAP",
"Judged@3"). Binary measures (those with a ``rel`` parameter) get the collection's relevance threshold unless the
string sets one itself (``AP(rel=2)``); nDCG uses the raw grades as gains, exactly like trec_eval's ``ndcg_cut``.
Ties in score are broken by docid descending because pytrec_eval sorts exactly as trec_eval does; ranks in the
run file are ignored (trec_eval ignores them too), so runs ranked from 0 evaluate identically.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import ir_measures

Qrels = Mapping[str, Mapping[str, int]]
Run = Mapping[str, Mapping[str, float]]

HEADLINE = "nDCG@3"
# The measures stored for every run × turn × qrels version (ECAsT Tables 11/14 plus the usual trec_eval set).
DEFAULT_MEASURES: list[str] = [
    "nDCG@3",
    "nDCG@5",
    "nDCG@10",
    "AP",
    "R@100",
    "R@500",
    "R@1000",
    "Bpref",
    "infAP",
    "P@1",
    "P@3",
    "P@5",
    "P@10",
    "Rprec",
    "RR",
    "Judged@3",
    "Judged@10",
]

# Spellings people type (trec_eval names, lower case) → ir_measures names.
_ALIASES = {
    "bpref": "Bpref",
    "map": "AP",
    "MAP": "AP",
    "recip_rank": "RR",
    "MRR": "RR",
    "rprec": "Rprec",
    "infap": "infAP",
    "ndcg": "nDCG",
}

# ir_measures measure → trec_eval summary name, for pages that cite trec_eval and for the oracle tests.
_TREC_EVAL_NAMES = {"AP": "map", "Bpref": "bpref", "RR": "recip_rank", "Rprec": "Rprec", "infAP": "infAP"}


class MeasureError(ValueError):
    """A measure string that ir_measures cannot parse."""


def _parse_raw(measure: str) -> Any:
    text = measure.strip()
    head = text.split("@", 1)[0].split("(", 1)[0]
    if head in _ALIASES:
        text = _ALIASES[head] + text[len(head) :]
    try:
        parsed = ir_measures.parse_measure(text)
    except (NameError, ValueError, SyntaxError) as exc:
        raise MeasureError(f"unknown measure {measure!r}: {exc}") from exc
    return parsed


def parse_measure(measure: str, *, rel_threshold: int = 1) -> Any:
    """Parse an ir_measures string and apply the relevance threshold to binary measures that do not set one."""
    parsed = _parse_raw(measure)
    if "rel" in parsed.SUPPORTED_PARAMS and "rel" not in parsed.params:
        parsed = parsed(rel=int(rel_threshold))
    return parsed


def canonical_name(measure: str) -> str:
    """The ir_measures spelling of a measure string as typed (``bpref`` → ``Bpref``), threshold not included."""
    return str(_parse_raw(measure))


def is_binary(measure: str) -> bool:
    """True when the measure depends on the relevance threshold (has a ``rel`` parameter)."""
    return "rel" in parse_measure(measure).SUPPORTED_PARAMS


def trec_eval_name(measure: str) -> str | None:
    """trec_eval's summary name for a measure (``nDCG@3`` → ``ndcg_cut_3``), or None when it has none."""
    parsed = parse_measure(measure)
    name = parsed.NAME
    cutoff = parsed.params.get("cutoff")
    if name == "nDCG":
        return f"ndcg_cut_{cutoff}" if cutoff else "ndcg"
    if name == "P" and cutoff:
        return f"P_{cutoff}"
    if name == "R" and cutoff:
        return f"recall_{cutoff}"
    if name == "AP":
        return f"map_cut_{cutoff}" if cutoff else "map"
    if name == "Success" and cutoff:
        return f"success_{cutoff}"
    if cutoff:
        return None
    return _TREC_EVAL_NAMES.get(name)


def _top(docs: Mapping[str, float], k: int) -> Mapping[str, float]:
    """Documents scoring at least the k-th best score (all tied documents kept)."""
    if len(docs) <= k:
        return docs
    kth = sorted(docs.values(), reverse=True)[k - 1]
    return {d: s for d, s in docs.items() if s >= kth}


def make_evaluator(
    qrels: Qrels,
    measures: list[str],
    *,
    rel_threshold: int = 1,
    judged_qids: Iterable[str] | None = None,
) -> Callable[[Run], dict[str, dict[str, float]]]:
    """Build once, evaluate many runs against the same qrels (the qrels are indexed a single time)."""
    parsed: dict[str, Any] = {m: parse_measure(m, rel_threshold=rel_threshold) for m in measures}
    qids = sorted(set(judged_qids) if judged_qids is not None else set(qrels))
    qid_set = set(qids)
    plain_qrels = {q: {d: int(g) for d, g in docs.items()} for q, docs in qrels.items() if q in qid_set}
    by_parsed: dict[Any, list[str]] = {}
    for name, m in parsed.items():
        by_parsed.setdefault(m, []).append(name)
    # Judged@k is computed by ir_measures' own provider, which sorts every full ranking in Python; it only needs
    # the top k, so it gets a run cut at the k-th best score (ties kept, so its own tie order still decides).
    judged = [m for m in by_parsed if m.NAME == "Judged"]
    others = [m for m in by_parsed if m.NAME != "Judged"]
    cutoffs = [m.params.get("cutoff") for m in judged]
    judged_depth = max(cutoffs) if judged and all(isinstance(c, int) for c in cutoffs) else None
    evaluators = []
    if plain_qrels:
        if others:
            evaluators.append((ir_measures.evaluator(others, plain_qrels), None))
        if judged:
            evaluators.append((ir_measures.evaluator(judged, plain_qrels), judged_depth))

    def run_eval(run: Run) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {name: dict.fromkeys(qids, 0.0) for name in measures}
        # Only judged queries with at least one ranked document reach pytrec_eval; the rest keep 0 (-c).
        sub = {q: docs for q, docs in run.items() if q in plain_qrels and docs}
        for q, docs in sub.items():
            if set(map(type, docs.values())) != {float}:  # pytrec_eval rejects int scores
                sub[q] = {d: float(s) for d, s in docs.items()}
        if not sub:
            return out
        names_by_id: dict[int, list[str]] = {}  # hashing ir_measures objects is slow (repr-based): cache by id
        for evaluator, depth in evaluators:
            feed = sub if depth is None else {q: _top(docs, depth) for q, docs in sub.items()}
            for metric in evaluator.iter_calc(feed):
                value = float(metric.value)
                if math.isnan(value):
                    value = 0.0
                key = id(metric.measure)
                names = names_by_id.get(key)
                if names is None:
                    names = names_by_id[key] = by_parsed.get(metric.measure, [])
                for name in names:
                    out[name][metric.query_id] = value
        return out

    return run_eval


def evaluate(
    qrels: Qrels,
    run: Run,
    measures: list[str],
    *,
    rel_threshold: int = 1,
    judged_qids: Iterable[str] | None = None,
) -> dict[str, dict[str, float]]:
    """Per-query values {measure string: {qid: value}} with trec_eval -c semantics (0 for unranked judged qids)."""
    return make_evaluator(qrels, measures, rel_threshold=rel_threshold, judged_qids=judged_qids)(run)


def mean(per_turn: Mapping[str, float]) -> float:
    """Arithmetic mean over the given queries (0.0 when there are none)."""
    if not per_turn:
        return 0.0
    return float(math.fsum(per_turn.values()) / len(per_turn))
