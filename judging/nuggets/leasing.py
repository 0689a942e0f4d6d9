"""Item leases of response-judging tasks: one answer to one assessor at a time, with an expiry.

Why item leases and not the topic leases of relevance pools: an answer is judged on its own (its text against its
turn's nuggets, or its sentences against their cited passages), and a topic of TREC RAG 2024 has 45 answers, so a
topic lease would keep one slow assessor's 45 answers from everyone else. An item lease hands out one answer, runs
out after ``task.lease_seconds`` and returns the answer to the queue. What a topic lease is good for, one assessor
meeting the same nuggets answer after answer, is kept by the order: an assessor gets the next free answer of the
turn they judged last before any other turn's.

Concurrency: candidates are locked with ``SKIP LOCKED`` (PostgreSQL) and a lease row is unique per (task, response),
so two assessors asking at once never get the same answer; an expired row is taken over under its row lock.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Count, Exists, OuterRef, Q, QuerySet, Value
from django.utils import timezone

from ecast.core.errors import DomainError
from ecast.core.permissions import is_admin, is_assessor
from evaluation.models import Nugget, Response, ResponseLabelSet, ResponseSentence
from judging.models import ResponseLease, ResponseTask


class TaskError(DomainError):
    """A refused judging-task operation (code: invalid, not_found, conflict, gone)."""


def task_responses(task: ResponseTask) -> QuerySet[Response]:
    """The answers a task judges: the chosen runs' responses (on the chosen turns), those with something to judge
    (nugget tasks: a turn with nuggets in the bank; citation tasks: a sentence with a citation)."""
    qs = Response.objects.filter(run__in=task.runs.all())
    if task.turn_filter:
        qs = qs.filter(turn__turn_id__in=task.turn_filter)
    if task.kind == ResponseLabelSet.Kind.NUGGETS:
        nuggets = Nugget.objects.filter(bank_id=task.bank_id, turn_id=OuterRef("turn_id"), merged_into__isnull=True)
        qs = qs.filter(Exists(nuggets))
    else:
        cited = ResponseSentence.objects.filter(response=OuterRef("pk")).exclude(citations=[])
        qs = qs.filter(Exists(cited))
    return qs


def tasks_judgeable_by(user: Any) -> QuerySet[ResponseTask]:
    """The tasks ``user`` may judge, whatever their status: assessors and admins, where the task names no assessors
    or names them (the one statement of this rule: queues, the page, the API and bank editing read it)."""
    if not (is_assessor(user) or is_admin(user)):
        return ResponseTask.objects.none()
    named = ResponseTask.assessors.through.objects.filter(responsetask_id=OuterRef("pk"))
    return ResponseTask.objects.filter(~Exists(named) | Exists(named.filter(user_id=user.pk)))


def may_judge(task: ResponseTask, user: Any) -> bool:
    return tasks_judgeable_by(user).filter(pk=task.pk).exists()


def check_may_judge(task: ResponseTask, user: Any) -> None:
    if not may_judge(task, user):
        raise TaskError(f"You are not an assessor of task {task.name!r}.", code="not_found")
    if task.status != ResponseTask.Status.OPEN:
        raise TaskError(f"Task {task.name!r} is closed.", code="gone")


def _free(task: ResponseTask, now: datetime) -> QuerySet[Response]:
    """Answers nobody holds: never leased, or leased, unfinished and run out."""
    held = ResponseLease.objects.filter(response=OuterRef("pk"), task=task).filter(
        Q(completed_at__isnull=False) | Q(expires_at__gt=now)
    )
    return task_responses(task).exclude(Exists(held))


def _last_turn(task: ResponseTask, assessor: Any) -> int | None:
    last = ResponseLease.objects.filter(task=task, assessor=assessor).order_by("-leased_at", "-id").first()
    return last.response.turn_id if last else None


def _claim(task: ResponseTask, assessor: Any, response: Response, now: datetime) -> ResponseLease | None:
    """Lease ``response`` to ``assessor``: a new row, or an expired unfinished one taken over; None when another
    assessor got there first."""
    expires = now + timedelta(seconds=task.lease_seconds)
    row = ResponseLease.objects.select_for_update().filter(task=task, response=response).first()
    if row is None:
        try:
            with transaction.atomic():
                return ResponseLease.objects.create(
                    task=task, response=response, assessor=assessor, leased_at=now, expires_at=expires
                )
        except IntegrityError:
            return None
    if row.completed_at is not None or row.expires_at > now:
        return None
    row.assessor, row.leased_at, row.expires_at = assessor, now, expires
    row.save(update_fields=["assessor", "leased_at", "expires_at"])
    return row


@transaction.atomic
def lease_next(*, task: ResponseTask, assessor: Any, now: datetime | None = None) -> ResponseLease | None:
    """The assessor's unfinished lease (renewed), else a new lease on the next free answer (the turn they judged
    last first, then turn and run order); None when every answer is done or held by someone else."""
    check_may_judge(task, assessor)
    now = now or timezone.now()
    mine = (
        ResponseLease.objects.select_for_update()
        .filter(task=task, assessor=assessor, completed_at__isnull=True, expires_at__gt=now)
        .order_by("leased_at", "id")
        .first()
    )
    if mine is not None:
        mine.expires_at = now + timedelta(seconds=task.lease_seconds)
        mine.save(update_fields=["expires_at"])
        return mine
    last_turn = _last_turn(task, assessor)
    for _attempt in range(4):
        free = _free(task, now)
        ordered = [free.filter(turn_id=last_turn), free] if last_turn else [free]
        for qs in ordered:
            for response in qs.order_by("turn__conversation__topic_id", "turn__number", "run__name")[:8]:
                lease = _claim(task, assessor, response, now)
                if lease is not None:
                    return lease
        if not free.exists():
            return None
    return None


def lease_for(*, user: Any, pk: int) -> ResponseLease:
    """One of the user's own leases (finished or not), or a refusal that reads as not found."""
    lease = ResponseLease.objects.select_related("task", "response", "response__turn").filter(pk=pk).first()
    if lease is None or lease.assessor_id != user.pk or not may_judge(lease.task, user):
        raise TaskError("No such answer in your queue.", code="not_found")
    return lease


def lease_hold(*, lease: ResponseLease, now: datetime | None = None) -> ResponseLease:
    """Check the user still holds the lease before a write; an expired one nobody took is renewed."""
    now = now or timezone.now()
    if lease.task.status != ResponseTask.Status.OPEN:
        raise TaskError(f"Task {lease.task.name!r} is closed.", code="gone")
    row = ResponseLease.objects.select_for_update().get(pk=lease.pk)
    if row.assessor_id != lease.assessor_id:
        raise TaskError("Your time on this answer ran out and another assessor has it now.", code="gone")
    if row.completed_at is None:
        row.expires_at = max(row.expires_at, now + timedelta(seconds=lease.task.lease_seconds))
        row.save(update_fields=["expires_at"])
    return row


def lease_previous(*, task: ResponseTask, assessor: Any, before: ResponseLease | None) -> ResponseLease | None:
    """The assessor's answer finished just before ``before`` (their last finished one when ``before`` is open)."""
    done = ResponseLease.objects.filter(task=task, assessor=assessor, completed_at__isnull=False)
    if before is not None and before.completed_at is not None:
        at = before.completed_at
        done = done.filter(Q(completed_at__lt=at) | Q(completed_at=at, pk__lt=before.pk))
    return done.order_by("-completed_at", "-id").first()


def task_progress(task: ResponseTask, assessor: Any | None = None) -> dict[str, int]:
    """Answers done of all the task's answers ("k of N"), and how many the assessor did."""
    return tasks_progress([task], assessor)[task.pk]


def tasks_progress(tasks: Sequence[ResponseTask], assessor: Any | None = None) -> dict[int, dict[str, int]]:
    """``task_progress`` of several tasks: the leases done counted in one query (the totals take one a task)."""
    done = ResponseLease.objects.filter(task__in=tasks, completed_at__isnull=False).values("task_id")
    mine = Count("pk", filter=Q(assessor=assessor)) if assessor is not None else Value(0)
    counts = {r["task_id"]: r for r in done.annotate(done=Count("pk"), mine=mine)}
    out: dict[int, dict[str, int]] = {}
    for t in tasks:
        row = counts.get(t.pk, {"done": 0, "mine": 0})
        out[t.pk] = {"done": row["done"], "total": task_responses(t).count()}
        if assessor is not None:
            out[t.pk]["mine"] = row["mine"]
    return out
