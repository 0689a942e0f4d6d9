"""Response scores as the tracks define them; plain Python, no Django.

**Nuggets** (castorini/nuggetizer, ``core/metrics.py``; Pradeep et al., "Initial Nugget Evaluation Results for the
TREC 2024 RAG Track with the AutoNuggetizer Framework", 2024). For one response and its turn's nuggets, each nugget
assigned support / partial_support / not_support:

- V_strict = #vital supported / #vital
- A_strict = #supported / #nuggets
- V = (#vital supported + 0.5 · #vital partially supported) / #vital
- A = (#supported + 0.5 · #partially supported) / #nuggets

A ratio over no nuggets (a turn without vital nuggets) is 0, as nuggetizer has it. A run's score is the mean over
its scored responses. A response is scored only when every nugget of its turn has a label (a queue still in
progress leaves the others out, and the coverage says how many).

**Citation support** (TREC 2024 RAG support evaluation; Thakur et al., "Support Evaluation for the TREC 2024 RAG
Track", 2025). Only the first citation of each answer sentence is read; its label weighs full 1, partial 0.5,
none 0. Per (topic, run):

- precision = Σ weights / #sentences whose first citation was judged;
- recall = Σ weights / #answer sentences, leaving out the sentences whose first citation was not judged (a
  sentence without any citation stays in, with weight 0).

A sentence an assessor marked "needs no citation" is left out of both denominators (a product choice: the track
has no such label). A ratio over no sentences is 0. A run's figure is the sum over the judged topics (those with at
least one label in the set) divided by their number; a judged topic the run did not answer counts 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ecast.core.errors import DomainError

NUGGET_MEASURES = ("V_strict", "A_strict", "V", "A")
CITATION_MEASURES = ("precision", "recall")

SUPPORT, PARTIAL, NOT_SUPPORT = "support", "partial_support", "not_support"
NUGGET_LABELS = (SUPPORT, PARTIAL, NOT_SUPPORT)
VITAL, OKAY = "vital", "okay"

FULL, PARTIAL_CITATION, NONE, NOT_NEEDED = "full", "partial", "none", "not_needed"
CITATION_WEIGHTS = {FULL: 1.0, PARTIAL_CITATION: 0.5, NONE: 0.0}
CITATION_LABELS = (FULL, PARTIAL_CITATION, NONE, NOT_NEEDED)


class ScoreError(DomainError, ValueError):
    """A label the scores do not know (a nugget assignment or citation-support value outside the definitions)."""


def _ratio(numerator: float, denominator: int) -> float:
    return numerator / denominator if denominator else 0.0


def nugget_scores(nuggets: Iterable[tuple[str, str]]) -> dict[str, float]:
    """V_strict, A_strict, V and A of one response from its turn's (importance, assignment) pairs."""
    vital = vital_support = vital_partial = total = support = partial = 0
    for importance, label in nuggets:
        if label not in NUGGET_LABELS:
            raise ScoreError(f"unknown nugget assignment {label!r}")
        total += 1
        support += label == SUPPORT
        partial += label == PARTIAL
        if importance == VITAL:
            vital += 1
            vital_support += label == SUPPORT
            vital_partial += label == PARTIAL
    return {
        "V_strict": _ratio(vital_support, vital),
        "A_strict": _ratio(support, total),
        "V": _ratio(vital_support + 0.5 * vital_partial, vital),
        "A": _ratio(support + 0.5 * partial, total),
    }


@dataclass(frozen=True)
class SentenceSupport:
    """One answer sentence as citation support reads it: its first citation's label, if any."""

    cited: bool
    # The label of the first citation ("full" / "partial" / "none" / "not_needed"), None when it was not judged.
    label: str | None


def citation_support(sentences: Sequence[SentenceSupport]) -> dict[str, float]:
    """Precision and recall of one (topic, run) answer."""
    weight = 0.0
    judged = counted = 0
    for s in sentences:
        if not s.cited:
            counted += 1  # no citation: in recall's denominator, weight 0
            continue
        if s.label is None or s.label == NOT_NEEDED:
            continue
        if s.label not in CITATION_WEIGHTS:
            raise ScoreError(f"unknown citation-support label {s.label!r}")
        judged += 1
        counted += 1
        weight += CITATION_WEIGHTS[s.label]
    return {"precision": _ratio(weight, judged), "recall": _ratio(weight, counted)}


def run_citation_support(
    per_topic: Mapping[str, Mapping[str, float]], judged_topics: Iterable[str]
) -> dict[str, float]:
    """A run's figure: each measure summed over the judged topics and divided by their number (unanswered = 0)."""
    topics = list(dict.fromkeys(judged_topics))
    return {m: _ratio(sum(per_topic[t][m] for t in topics if t in per_topic), len(topics)) for m in CITATION_MEASURES}


def run_nugget_scores(per_response: Iterable[Mapping[str, float]]) -> dict[str, float]:
    """A run's nugget scores: the mean of each measure over its scored responses (0 when it has none)."""
    rows = list(per_response)
    return {m: _ratio(sum(r[m] for r in rows), len(rows)) for m in NUGGET_MEASURES}


# --- whole label sets: the plain rows a label set's selectors read, scored in one pass -----------------------------


@dataclass
class NuggetTable:
    """A nugget label set scored: per response (only the fully labelled ones) and per run."""

    per_response: dict[int, dict[str, float]]
    # Responses with at least one label: the coverage's denominator.
    labelled: dict[int, int]  # response id → labels it has
    per_run: dict[int, dict[str, float]]
    # run id → (responses scored, responses with any label, responses in all)
    run_coverage: dict[int, tuple[int, int, int]]
    response_run: dict[int, int] = field(default_factory=dict)  # response id → its run id


def nugget_table(
    responses: Iterable[tuple[int, int, int]],
    nuggets: Iterable[tuple[int, int, str]],
    labels: Iterable[tuple[int, int, str]],
) -> NuggetTable:
    """Score a nugget label set from ``responses`` (id, run id, turn id), the bank's ``nuggets`` (id, turn id,
    importance; merged ones left out by the caller) and ``labels`` (response id, nugget id, assignment).

    A response is scored when every nugget of its turn has a label; labels of nuggets the bank no longer holds, or
    of another turn's nuggets, are ignored."""
    turn_nuggets: dict[int, dict[int, str]] = {}
    for nid, turn, importance in nuggets:
        turn_nuggets.setdefault(turn, {})[nid] = importance
    response_turn: dict[int, int] = {}
    run_of: dict[int, int] = {}
    for rid, run, turn in responses:
        response_turn[rid] = turn
        run_of[rid] = run
    got: dict[int, dict[int, str]] = {}
    for rid, nid, label in labels:
        of = response_turn.get(rid)
        if of is None or nid not in turn_nuggets.get(of, ()):
            continue
        got.setdefault(rid, {})[nid] = label
    per_response: dict[int, dict[str, float]] = {}
    for rid, have in got.items():
        wanted = turn_nuggets[response_turn[rid]]
        if len(have) == len(wanted):
            per_response[rid] = nugget_scores((wanted[nid], label) for nid, label in have.items())
    by_run: dict[int, list[dict[str, float]]] = {}
    counts: dict[int, list[int]] = {}
    for rid, run in run_of.items():
        c = counts.setdefault(run, [0, 0, 0])
        c[2] += 1
        if rid in got:
            c[1] += 1
        if rid in per_response:
            c[0] += 1
            by_run.setdefault(run, []).append(per_response[rid])
    return NuggetTable(
        per_response=per_response,
        labelled={rid: len(have) for rid, have in got.items()},
        per_run={run: run_nugget_scores(by_run.get(run, ())) for run in counts},
        run_coverage={run: (c[0], c[1], c[2]) for run, c in counts.items()},
        response_run=run_of,
    )


@dataclass
class CitationTable:
    """A citation label set scored: per response to a judged topic, per run over the judged topics."""

    judged_turns: set[int]
    # response id → {"precision", "recall", "sentences", "cited", "judged"}
    per_response: dict[int, dict[str, float]]
    per_run: dict[int, dict[str, float]]
    # run id → (judged topics it answered, judged topics)
    run_coverage: dict[int, tuple[int, int]]
    response_run: dict[int, int] = field(default_factory=dict)  # response id → its run id
    response_turn: dict[int, int] = field(default_factory=dict)  # response id → its turn id


def citation_table(
    responses: Iterable[tuple[int, int, int]],
    sentences: Iterable[tuple[int, int, str | None]],
    labels: Iterable[tuple[int, str, str]],
    judged_turns: Iterable[int],
) -> CitationTable:
    """Score a citation label set from ``responses`` (id, run id, turn id), the answers' ``sentences`` (response
    id, sentence id, first cited passage or None, in sentence order), ``labels`` (sentence id, passage id,
    support) and the turns with at least one label (``judged_turns``)."""
    judged = set(judged_turns)
    label_of = {(sid, passage): support for sid, passage, support in labels}
    run_of: dict[int, int] = {}
    turn_of: dict[int, int] = {}
    for rid, run, turn in responses:
        run_of[rid] = run
        turn_of[rid] = turn
    read: dict[int, list[SentenceSupport]] = {rid: [] for rid, turn in turn_of.items() if turn in judged}
    for rid, sid, first in sentences:
        if rid in read:
            if first:
                read[rid].append(SentenceSupport(cited=True, label=label_of.get((sid, first))))
            else:
                read[rid].append(SentenceSupport(cited=False, label=None))
    per_response: dict[int, dict[str, float]] = {}
    per_topic: dict[int, dict[int, dict[str, float]]] = {}
    for rid, rows in read.items():
        figures: dict[str, float] = dict(citation_support(rows))
        figures["sentences"] = len(rows)
        figures["cited"] = sum(s.cited for s in rows)
        figures["judged"] = sum(s.label is not None for s in rows)
        per_response[rid] = figures
        per_topic.setdefault(run_of[rid], {})[turn_of[rid]] = figures
    runs = set(run_of.values())
    per_run = {
        run: run_citation_support({str(t): v for t, v in per_topic.get(run, {}).items()}, [str(t) for t in judged])
        for run in runs
    }
    coverage = {run: (len(per_topic.get(run, {})), len(judged)) for run in runs}
    return CitationTable(
        judged_turns=judged,
        per_response=per_response,
        per_run=per_run,
        run_coverage=coverage,
        response_run=run_of,
        response_turn=turn_of,
    )


def shared_run_scores(
    a: NuggetTable | CitationTable, b: NuggetTable | CitationTable
) -> tuple[dict[int, dict[str, float]], dict[int, dict[str, float]]]:
    """Per run, A's and B's scores over what both scored: the responses both fully labelled (nuggets), or the topics
    both judged (citations), so a ranking difference between two label sets is disagreement, not coverage."""
    if isinstance(a, NuggetTable) and isinstance(b, NuggetTable):
        shared = a.per_response.keys() & b.per_response.keys()

        def nugget_runs(t: NuggetTable) -> dict[int, dict[str, float]]:
            by_run: dict[int, list[dict[str, float]]] = {}
            for rid in shared:
                by_run.setdefault(t.response_run[rid], []).append(t.per_response[rid])
            return {run: run_nugget_scores(rows) for run, rows in by_run.items()}

        return nugget_runs(a), nugget_runs(b)
    if isinstance(a, CitationTable) and isinstance(b, CitationTable):
        judged = sorted(a.judged_turns & b.judged_turns)

        def citation_runs(t: CitationTable) -> dict[int, dict[str, float]]:
            per_topic: dict[int, dict[str, dict[str, float]]] = {run: {} for run in t.response_run.values()}
            for rid, figures in t.per_response.items():
                if t.response_turn[rid] in judged:
                    per_topic[t.response_run[rid]][str(t.response_turn[rid])] = figures
            return {run: run_citation_support(topics, map(str, judged)) for run, topics in per_topic.items()}

        return (citation_runs(a), citation_runs(b)) if judged else ({}, {})
    raise ScoreError("two label sets of different kinds have no shared items")
