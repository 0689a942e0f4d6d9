"""Domain events that connect judging, imports and evaluation without import cycles.

Senders call the helper functions; the receivers (stored scores, permutation rescore, analyses) are all connected in
``evaluation/recompute.py`` by ``EvaluationConfig.ready()`` and schedule debounced background work.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db import transaction
from django.dispatch import Signal

# kwargs: version_id: int, turn_ids: list[int] (Turn primary keys whose judgments changed)
qrels_version_changed = Signal()
# kwargs: run_id: int
run_created = Signal()


def qrels_changed(*, version_id: int, turn_ids: Iterable[int]) -> None:
    """Announce, after the current transaction commits, that judgments of these turns changed."""
    ids = sorted(set(turn_ids))
    transaction.on_commit(lambda: qrels_version_changed.send(sender=None, version_id=version_id, turn_ids=ids))


def run_imported(*, run_id: int) -> None:
    """Announce, after commit, that a run was created or replaced."""
    transaction.on_commit(lambda: run_created.send(sender=None, run_id=run_id))
