"""Writes of the response pages and API: the touch every label writer calls, and deleting runs, banks, label sets.

**Every service that writes labels or nuggets calls a touch in the same transaction** (the judging queues, the LLM
judge, the importers): :func:`label_set_touch` after writing ``NuggetAssignment`` or ``CitationLabel`` rows (bulk
writes included: ``bulk_create`` and ``update`` do not run ``auto_now``), :func:`nugget_bank_touch` after adding,
editing, merging or deleting nuggets. A touch is one ``UPDATE`` of ``updated_at`` and queues nothing: the scores
are cached under the stamps (``selectors.label_set_scores``), so the next read recomputes them and leaderboards are
live without a job.
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import ProtectedError
from django.utils import timezone

from ecast.core.errors import DomainError
from evaluation.models import NuggetBank, ResponseLabelSet, ResponseRun


def label_set_touch(*, label_set: ResponseLabelSet | int) -> None:
    """Mark a label set's labels as changed (its cached scores are then stale); writes nothing else."""
    pk = label_set if isinstance(label_set, int) else label_set.pk
    now = timezone.now()
    ResponseLabelSet.objects.filter(pk=pk).update(updated_at=now)
    if isinstance(label_set, ResponseLabelSet):
        label_set.updated_at = now


def nugget_bank_touch(*, bank: NuggetBank | int) -> None:
    """Mark a bank's nuggets as changed (scores of the label sets that assign them are then stale)."""
    pk = bank if isinstance(bank, int) else bank.pk
    now = timezone.now()
    NuggetBank.objects.filter(pk=pk).update(updated_at=now)
    if isinstance(bank, NuggetBank):
        bank.updated_at = now


def _delete(obj: ResponseRun | NuggetBank | ResponseLabelSet, what: str) -> None:
    try:
        obj.delete()
    except ProtectedError as exc:
        users = sorted({str(o) for o in exc.protected_objects})[:5]
        raise DomainError(f"This {what} is still used by: {', '.join(users)}. Delete those first.", "conflict") from exc


@transaction.atomic
def response_run_delete(*, run: ResponseRun) -> None:
    """Delete a run with its responses and every label given to them (scores notice: the run stamp changes)."""
    _delete(run, "run")


@transaction.atomic
def nugget_bank_delete(*, bank: NuggetBank) -> None:
    """Delete a bank and its nuggets; refused while a label set assigns them or a bank was derived from it."""
    _delete(bank, "nugget bank")


@transaction.atomic
def label_set_delete(*, label_set: ResponseLabelSet) -> None:
    """Delete a label set and its labels."""
    _delete(label_set, "label set")
