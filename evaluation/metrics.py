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
from collections.abc import Callable, Iterable, Mapping, Sequence
from operator import itemgetter
from typing import Any

import ir_measures

from ecast.core.errors import DomainError

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


class MeasureError(DomainError, ValueError):
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


# --- pytrec_eval called directly ------------------------------------------------------------------------------
#
# ir_measures wraps every per-query value in Metric/measure objects whose hashing is repr-based; on a full
# recompute that costs more than trec_eval's C code itself. The product therefore asks pytrec_eval directly for
# the measures it can compute, naming them here and nowhere else; measures names stay ir_measures strings, and
# anything this table does not cover goes through ir_measures as before.


def pytrec_eval_name(parsed: Any) -> tuple[tuple[int, bool], str] | None:
    """(pytrec_eval run settings (relevance level, judged docs only), its measure name) for a parsed ir_measures
    measure, mirroring ir_measures' own pytrec_eval provider; None when pytrec_eval cannot compute it."""
    name, params = parsed.NAME, parsed.params
    cutoff = params.get("cutoff")
    rel = int(params.get("rel", 1))
    judged_only = bool(params.get("judged_only", False))
    if name == "nDCG":
        if "gains" in params or params.get("dcg", "log2") != "log2":
            return None
        # Graded gains: trec_eval's relevance level does not enter nDCG, so it shares the first evaluator.
        return (0, judged_only), f"ndcg_cut_{cutoff}" if cutoff else "ndcg"
    simple = {"RR": "recip_rank", "Rprec": "Rprec", "infAP": "infAP", "Bpref": "bpref"}
    if name in simple and not cutoff:
        return (rel, judged_only and name in ("RR", "Rprec")), simple[name]
    if name == "AP":
        return (rel, judged_only), f"map_cut_{cutoff}" if cutoff else "map"
    if name in ("P", "R", "Success") and cutoff:
        return (rel, judged_only), f"{ {'P': 'P', 'R': 'recall', 'Success': 'success'}[name] }_{cutoff}"
    return None


def _judged_depth(parsed: Any) -> int | None:
    """k of a Judged@k measure (0 for Judged over the whole ranking), None for any other measure."""
    if parsed.NAME != "Judged":
        return None
    cutoff = parsed.params.get("cutoff")
    return int(cutoff) if isinstance(cutoff, int) else 0


def _deepest(depths: list[int]) -> int | None:
    return None if not depths else 0 if 0 in depths else max(depths)


def judged_depth(measures: Iterable[str]) -> int | None:
    """How deep a ranking's top is read for the Judged@k measures among ``measures`` (``RankingEvaluator``'s
    ``judged_depth``, known before there are qrels): the deepest k, 0 when one reads the whole ranking (Judged without
    a cutoff), None when there is no Judged measure."""
    return _deepest([d for d in (_judged_depth(_parse_raw(m)) for m in measures) if d is not None])


def top_slice(doc_ids: Sequence[str], scores: Sequence[float], k: int, *, descending: bool = False) -> list[str] | None:
    """The top ``k`` of a ranking stored in descending score order, ties at the k-th score broken by doc id
    ascending (ir_measures' Judged order), without building a dict of the whole ranking; None when the stored
    scores are not in descending order (``descending``: the caller has already checked that they are)."""
    n = len(doc_ids)
    if k == 0 or n <= k:  # Judged without a cutoff reads the whole ranking
        head = list(zip(scores, doc_ids, strict=True))
    else:
        kth = scores[k - 1]
        end = k
        while end < n and scores[end] == kth:
            end += 1
        head = list(zip(scores[:end], doc_ids[:end], strict=True))
        if not descending and end < n and max(scores[end:]) > kth:  # the rest must rank below the slice
            return None
    if not descending and any(a < b for (a, _), (b, _) in zip(head, head[1:], strict=False)):
        return None
    head.sort(key=lambda sd: (-sd[0], sd[1]))
    return [d for _, d in head[:k]] if k else [d for _, d in head]


def _top_sorted(docs: Mapping[str, float], k: int) -> list[str]:
    cut = _top(docs, k) if k else docs
    ranked = sorted(cut.items(), key=lambda sd: (-sd[1], sd[0]))
    return [d for d, _ in (ranked[:k] if k else ranked)]


class RankingEvaluator:
    """Per-query values of a fixed list of measures against fixed qrels, trec_eval -c semantics.

    Built once per qrels version; ``values`` evaluates one run and returns {qid: [value per measure]} for every
    judged query (0 where the run ranks nothing). pytrec_eval computes what it can directly; Judged@k comes from
    each ranking's top-k slice (the rankings arrive in rank order); anything else goes through ir_measures.
    """

    def __init__(
        self, qrels: Qrels, measures: Sequence[str], *, rel_threshold: int = 1, judged_qids: Iterable[str] | None = None
    ) -> None:
        import pytrec_eval

        self.measures = list(measures)
        parsed = [parse_measure(m, rel_threshold=rel_threshold) for m in self.measures]
        self.qids = sorted(set(judged_qids) if judged_qids is not None else set(qrels))
        qid_set = set(self.qids)
        # Grades as plain ints (pytrec_eval rejects others); the database's are already, and are not copied.
        self.qrels = {
            q: docs
            if type(docs) is dict and set(map(type, docs.values())) <= {int}
            else {d: int(g) for d, g in docs.items()}
            for q, docs in qrels.items()
            if q in qid_set
        }
        self._pte: list[tuple[Any, list[tuple[str, int]]]] = []  # (evaluator, [(pytrec_eval name, slot)])
        self._judged: list[tuple[int, int]] = []  # (k, slot)
        fallback: dict[Any, list[int]] = {}
        groups: dict[tuple[int, bool], list[tuple[str, int]]] = {}
        for slot, m in enumerate(parsed):
            named = pytrec_eval_name(m)
            depth = _judged_depth(m)
            if named is not None:
                groups.setdefault(named[0], []).append((named[1], slot))
            elif depth is not None:
                self._judged.append((depth, slot))
            else:
                fallback.setdefault(m, []).append(slot)
        if 0 in {key[0] for key in groups}:  # nDCG rides along with the first binary group (or level 1)
            for key in [k for k in groups if k[0] == 0]:
                target = next((k for k in groups if k[0] != 0 and k[1] == key[1]), (1, key[1]))
                groups.setdefault(target, []).extend(groups.pop(key))
        if self.qrels:
            for (level, judged_only), names in groups.items():
                ev = pytrec_eval.RelevanceEvaluator(
                    self.qrels, {n for n, _ in names}, relevance_level=level, judged_docs_only_flag=judged_only
                )
                self._pte.append((ev, names))
        # How ``values_ranked`` copies each evaluator's values into a query's row, decided once: one C-level lookup
        # of all its names (in slot order), and where their slots run without a gap (the defaults: nDCG … RR
        # fill slots 0–14) one slice assignment instead of a Python loop over the values.
        self._picks: list[tuple[Any, Callable[[Any], Any], slice | None, list[int]]] = []
        for ev, names in self._pte:
            ordered = sorted(names, key=itemgetter(1))
            slots = [slot for _, slot in ordered]
            getter = itemgetter(*(name for name, _ in ordered))
            pick = getter if len(ordered) > 1 else lambda res, get=getter: (get(res),)
            run = slice(slots[0], slots[-1] + 1) if slots == list(range(slots[0], slots[-1] + 1)) else None
            self._picks.append((ev, pick, run, slots))
        self._fallback = ir_measures.evaluator(list(fallback), self.qrels) if fallback and self.qrels else None
        self._fallback_slots = fallback
        self.judged_depth = _deepest([k for k, _ in self._judged])

    def values(
        self,
        run: Mapping[str, Mapping[str, float]],
        tops: Mapping[str, list[str]] | None = None,
        *,
        floats: bool = False,
    ) -> dict[str, list[float]]:
        """{qid: values in measure order} for every judged qid. ``tops`` may give each query's ranking cut at the
        deepest Judged@k in Judged order (see ``top_slice``); queries missing from it are cut from ``run``.
        ``floats``: the caller guarantees float scores (pytrec_eval rejects ints), so they are not checked."""
        width = len(self.measures)
        out = {q: [0.0] * width for q in self.qids}
        out.update(self.values_ranked(run, tops, floats=floats))
        return out

    def values_ranked(
        self,
        run: Mapping[str, Mapping[str, float]],
        tops: Mapping[str, list[str]] | None = None,
        *,
        floats: bool = False,
    ) -> dict[str, list[float]]:
        """Like ``values``, but only for the judged queries ``run`` ranks something for: a caller that feeds a
        run a few queries at a time (``evaluation.scoring``) adds the zeros of the unranked ones once at the end."""
        width = len(self.measures)
        sub = {q: docs for q, docs in run.items() if q in self.qrels and docs}
        for q, docs in sub.items():
            if not floats and set(map(type, docs.values())) != {float}:
                sub[q] = {d: float(s) for d, s in docs.items()}
        out = {q: [0.0] * width for q in sub}
        if not sub:
            return out
        for ev, pick, span, targets in self._picks:
            # A full recompute reads hundreds of thousands of values here. NaN (trec_eval's 0/0), the only value
            # unequal to itself, reads as 0; their sum is NaN when one of them is, so one test covers them all.
            for q, res in ev.evaluate(sub).items():
                picked: tuple[float, ...] = pick(res)
                total = sum(picked)
                if total != total:
                    picked = tuple(value if value == value else 0.0 for value in picked)
                if span is not None:
                    out[q][span] = picked
                else:
                    row = out[q]
                    for slot, value in zip(targets, picked, strict=True):
                        row[slot] = value
        if self._judged:
            tops = tops or {}
            depth = self.judged_depth or 0
            for q, docs in sub.items():
                ranked = tops.get(q)
                if ranked is None:
                    ranked = _top_sorted(docs, depth)
                judged = self.qrels[q].keys()
                row = out[q]
                for k, slot in self._judged:
                    cut = ranked[:k] if k else ranked
                    row[slot] = len(judged & cut) / min(k or len(docs), len(docs))  # a ranking holds no doc twice
        if self._fallback is not None:
            names_by_id: dict[int, list[int]] = {}  # hashing ir_measures objects is slow (repr-based): by id
            for metric in self._fallback.iter_calc(sub):
                slots = names_by_id.get(id(metric.measure))
                if slots is None:
                    slots = names_by_id[id(metric.measure)] = self._fallback_slots.get(metric.measure, [])
                if metric.query_id not in out:  # a query-level count (NumRel) of a judged query this batch skips
                    continue
                value = float(metric.value)
                for slot in slots:
                    out[metric.query_id][slot] = 0.0 if math.isnan(value) else value
        return out


def make_evaluator(
    qrels: Qrels,
    measures: list[str],
    *,
    rel_threshold: int = 1,
    judged_qids: Iterable[str] | None = None,
) -> Callable[[Run], dict[str, dict[str, float]]]:
    """Build once, evaluate many runs against the same qrels (the qrels are indexed a single time)."""
    ev = RankingEvaluator(qrels, measures, rel_threshold=rel_threshold, judged_qids=judged_qids)

    def run_eval(run: Run) -> dict[str, dict[str, float]]:
        per_q = ev.values(run)
        return {name: {q: per_q[q][slot] for q in ev.qids} for slot, name in enumerate(ev.measures)}

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
