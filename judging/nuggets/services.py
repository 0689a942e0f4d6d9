"""Writes for response judging: tasks (with the label set each writes into), assessors' labels, finished answers.

Nugget banks edited by hand are in :mod:`judging.nuggets.banks`; leases in :mod:`judging.nuggets.leasing`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.db import transaction
from django.utils import timezone

from ecast.models import Collection, Passage
from evaluation.models import (
    CitationLabel,
    LabelCondition,
    Nugget,
    NuggetAssignment,
    NuggetBank,
    ResponseLabelSet,
    ResponseRun,
    ResponseSentence,
)
from evaluation.responses.services import label_set_touch
from judging.models import ResponseLease, ResponseTask
from judging.nuggets.leasing import TaskError, lease_hold

NUGGET_LABELS = tuple(NuggetAssignment.Label.values)
SUPPORT_LABELS = tuple(CitationLabel.Support.values)


def _any_cited_text(runs: Sequence[ResponseRun], turn_ids: Sequence[str]) -> bool:
    """Whether some sentence of the runs' answers (in the chosen turns) cites a passage whose text ecast holds."""
    sentences = ResponseSentence.objects.filter(response__run__in=runs)
    if turn_ids:
        sentences = sentences.filter(response__turn__turn_id__in=list(turn_ids))
    cited = {c[0] for c in sentences.values_list("citations", flat=True).iterator() if c}
    return Passage.objects.filter(passage_id__in=cited).exclude(text="").exists()


@transaction.atomic
def task_create(
    *,
    collection: Collection,
    kind: str,
    runs: Sequence[ResponseRun],
    name: str = "",
    turn_ids: Sequence[str] = (),
    bank: NuggetBank | None = None,
    llm_label_set: ResponseLabelSet | None = None,
    assessors: Sequence[Any] = (),
    lease_seconds: int = 1800,
    created_by: Any = None,
) -> ResponseTask:
    """A judging task over the runs' answers and the assessed label set it writes into ("<name>", made here).

    ``llm_label_set`` makes it a post-edit task: the assessor sees that set's label preselected."""
    if kind not in ResponseLabelSet.Kind.values:
        raise TaskError(f"kind: one of {', '.join(ResponseLabelSet.Kind.values)}, got {kind!r}")
    if not runs:
        raise TaskError("runs: choose at least one response run")
    if any(r.collection_id != collection.pk for r in runs):
        raise TaskError("runs: every run must be of the task's collection")
    nuggets = kind == ResponseLabelSet.Kind.NUGGETS
    if nuggets and bank is None:
        raise TaskError("bank: a nugget-assignment task needs the nugget bank to assign")
    if bank is not None and bank.collection_id != collection.pk:
        raise TaskError("bank: not a bank of the task's collection")
    if llm_label_set is not None:
        if llm_label_set.collection_id != collection.pk or llm_label_set.kind != kind:
            raise TaskError("llm_label_set: choose an LLM label set of this collection and kind")
        if llm_label_set.source != ResponseLabelSet.Source.LLM:
            raise TaskError("llm_label_set: post-editing shows an LLM's labels; this set is not an LLM's")
        if nuggets and llm_label_set.bank_id != bank.pk:  # type: ignore[union-attr]
            raise TaskError("llm_label_set: it assigns the nuggets of another bank")
    if lease_seconds < 60:
        raise TaskError("lease_seconds: at least 60")
    if not nuggets and not _any_cited_text(runs, turn_ids):
        # An assessor could mark every sentence "needs no citation" and nothing else: refuse, as the LLM form does.
        raise TaskError(
            "runs: no answer sentence cites a passage with text; import the cited passages' texts (passages import) "
            "first"
        )
    condition = LabelCondition.POST_EDIT if llm_label_set else LabelCondition.BLIND
    how = "post-edit" if llm_label_set else "blind"
    name = name.strip() or f"{ResponseLabelSet.Kind(kind).label} ({how})"
    base, n = name, 2
    while ResponseLabelSet.objects.filter(collection=collection, name=name).exists():
        name, n = f"{base} {n}", n + 1
    label_set = ResponseLabelSet.objects.create(
        collection=collection,
        name=name,
        kind=kind,
        source=ResponseLabelSet.Source.ASSESSED,
        bank=bank if nuggets else None,
        description=f"Judged in ecast, {condition.label.lower()}.",
        created_by=created_by,
    )
    task = ResponseTask.objects.create(
        collection=collection,
        name=name,
        kind=kind,
        turn_filter=list(turn_ids),
        label_set=label_set,
        bank=bank if nuggets else None,
        condition=condition,
        llm_label_set=llm_label_set,
        lease_seconds=lease_seconds,
        created_by=created_by,
    )
    task.runs.set(runs)
    task.assessors.set(assessors)
    return task


def task_set_status(*, task: ResponseTask, status: str) -> None:
    if status not in ResponseTask.Status.values:
        raise TaskError(f"status: open or closed, got {status!r}")
    task.status = status
    task.save(update_fields=["status"])


# ---------------------------------------------------------------- labels


def _lease_nuggets(lease: ResponseLease) -> dict[int, Nugget]:
    qs = Nugget.objects.filter(bank_id=lease.task.bank_id, turn_id=lease.response.turn_id, merged_into__isnull=True)
    return {n.pk: n for n in qs}


def _lease_sentences(lease: ResponseLease) -> dict[int, ResponseSentence]:
    return {s.pk: s for s in ResponseSentence.objects.filter(response_id=lease.response_id).exclude(citations=[])}


def _store(model: Any, field: str, lease: ResponseLease, items: list[tuple[dict[str, Any], str, Any]]) -> int:
    """Create or relabel rows of the task's set — ``items``: (the row's key, its label, its current row, locked, or
    None) — in one insert and one update whatever their number; an earlier label goes to ``history``. Returns how
    many changed (a repeat changes nothing)."""
    task = lease.task
    fields = {"condition": task.condition, "assessor_id": lease.assessor_id}
    now = timezone.now()
    new, relabelled = [], []
    for key, value, row in items:
        if row is None:
            new.append(model(label_set=task.label_set, **key, **{field: value}, **fields))
            continue
        if getattr(row, field) == value and row.assessor_id == lease.assessor_id:
            continue
        by = row.assessor.username if row.assessor else ""
        row.history = [*row.history, {field: getattr(row, field), "at": row.updated_at.isoformat(), "by": by}]
        setattr(row, field, value)
        for name, v in fields.items():
            setattr(row, name, v)
        row.updated_at = now  # bulk_update does not stamp auto_now fields
        relabelled.append(row)
    if new:
        model.objects.bulk_create(new)
    if relabelled:
        model.objects.bulk_update(relabelled, [field, "history", "updated_at", *fields])
    return len(new) + len(relabelled)


@transaction.atomic
def labels_submit(*, lease: ResponseLease, labels: Mapping[str, str]) -> int:
    """Store labels of the leased answer: nugget id → support / partial_support / not_support (nugget tasks) or
    sentence id → full / partial / none / not_needed (citation tasks, the sentence's first citation). Every label is
    checked before any is stored. Returns how many changed."""
    lease_hold(lease=lease)
    nuggets = lease.task.kind == ResponseLabelSet.Kind.NUGGETS
    targets: dict[int, Any] = _lease_nuggets(lease) if nuggets else _lease_sentences(lease)
    allowed = NUGGET_LABELS if nuggets else SUPPORT_LABELS
    checked = []
    for key, value in labels.items():
        pk = int(key) if str(key).isdigit() and len(str(key)) < 18 else None
        if pk not in targets:
            what = "nugget" if nuggets else "sentence with a citation"
            raise TaskError(f"{key}: not a {what} of this answer")
        if value not in allowed:
            raise TaskError(f"{key}: the label is one of {', '.join(allowed)}, got {value!r}")
        checked.append((targets[pk], value))
    # The answer's current labels, locked and read once (an answer's "done" sends every label again).
    items: list[tuple[dict[str, Any], str, Any]]
    if nuggets:
        assigned = NuggetAssignment.objects.filter(label_set=lease.task.label_set, response_id=lease.response_id)
        rows = {r.nugget_id: r for r in assigned.select_for_update(of=("self",)).select_related("assessor")}
        items = [({"response_id": lease.response_id, "nugget": t}, v, rows.get(t.pk)) for t, v in checked]
        changed = _store(NuggetAssignment, "label", lease, items)
    else:
        existing = CitationLabel.objects.filter(label_set=lease.task.label_set, sentence_id__in=list(targets))
        cites = {
            (r.sentence_id, r.passage_id): r
            for r in existing.select_for_update(of=("self",)).select_related("assessor")
        }
        items = [
            ({"sentence": t, "passage_id": t.citations[0]}, v, cites.get((t.pk, t.citations[0]))) for t, v in checked
        ]
        changed = _store(CitationLabel, "support", lease, items)
    if changed:
        label_set_touch(label_set=lease.task.label_set)
    return changed


def lease_missing(lease: ResponseLease) -> list[int]:
    """Ids of the answer's nuggets (sentences) still without a label in the task's set. A citation whose passage
    has no text cannot be judged, so such a sentence is never missing."""
    task = lease.task
    if task.kind == ResponseLabelSet.Kind.NUGGETS:
        done = set(
            NuggetAssignment.objects.filter(label_set=task.label_set, response_id=lease.response_id).values_list(
                "nugget_id", flat=True
            )
        )
        return [pk for pk in _lease_nuggets(lease) if pk not in done]
    sentences = _lease_sentences(lease)
    with_text = set(
        Passage.objects.filter(passage_id__in={s.citations[0] for s in sentences.values()})
        .exclude(text="")
        .values_list("passage_id", flat=True)
    )
    done = set(
        CitationLabel.objects.filter(label_set=task.label_set, sentence_id__in=sentences).values_list(
            "sentence_id", flat=True
        )
    )
    return [pk for pk, s in sentences.items() if pk not in done and s.citations[0] in with_text]


@transaction.atomic
def lease_complete(*, lease: ResponseLease, labels: Mapping[str, str]) -> ResponseLease:
    """Store the answer's last labels and mark it done; refused while a nugget (a judgeable sentence) has none.
    Finishing an answer again (after going back to it) keeps its first finishing time, so "back" stays in order."""
    labels_submit(lease=lease, labels=labels)
    missing = lease_missing(lease)
    if missing:
        what = "nugget" if lease.task.kind == ResponseLabelSet.Kind.NUGGETS else "sentence"
        raise TaskError(f"{len(missing)} {what}(s) still without a label: label every one before going on.")
    row = ResponseLease.objects.get(pk=lease.pk)
    if row.completed_at is None:
        row.completed_at = timezone.now()
        row.save(update_fields=["completed_at"])
    return row
