"""Lookups the dataset domain needs from the apps above it, which register them (ecast never imports those apps).

Preprocessing replaces an unreliable canonical response with a passage graded 4 (else 3) in the turn's "original"
qrels. Qrels are evaluation's rows, so evaluation registers the lookup from ``EvaluationConfig.ready()``.
"""

from __future__ import annotations

from collections.abc import Callable

from ecast.models import Turn

# (turn, qrels version name, minimum grade) → {passage_id: grade}
QrelsLookup = Callable[[Turn, str, int], dict[str, int]]

_qrels_lookup: QrelsLookup | None = None


def qrels_lookup_register(lookup: QrelsLookup) -> None:
    """Set the function that reads a turn's qrels (called by the app that stores them)."""
    global _qrels_lookup
    _qrels_lookup = lookup


def turn_qrels(*, turn: Turn, version_name: str, min_grade: int = 0) -> dict[str, int]:
    """{passage_id: grade} of the turn's passages graded at least ``min_grade`` in the named qrels version."""
    if _qrels_lookup is None:
        raise RuntimeError("no qrels lookup registered; the evaluation app registers it in its AppConfig.ready()")
    return _qrels_lookup(turn, version_name, min_grade)
