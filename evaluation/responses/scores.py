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
from dataclasses import dataclass

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
    """A label the definitions do not know."""


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
