"""Response-judging tasks: queues of answers that assessors judge by nugget assignment or citation support, each
writing into a label set of its own, and the item leases that hand out one answer to one assessor at a time.

The label stores are ``evaluation.models.responses``; a task only says which answers are judged, how (blind, or
post-editing an LLM label set), by whom, and who holds which answer now.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from ecast.models import Collection
from evaluation.models import LabelCondition, NuggetBank, Response, ResponseLabelSet, ResponseRun

__all__ = ["ResponseTask", "ResponseLease"]


class ResponseTask(models.Model):
    """A queue of answers (the responses of chosen runs, optionally on chosen turns) judged one kind of way."""

    class Status(models.TextChoices):
        OPEN = "open", "Open"
        CLOSED = "closed", "Closed"

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="response_tasks")
    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=10, choices=ResponseLabelSet.Kind.choices)
    runs = models.ManyToManyField(ResponseRun, related_name="tasks")
    turn_filter = models.JSONField(default=list, blank=True, help_text="Turn ids the task was restricted to.")
    # The assessed set this task writes into, made with the task.
    label_set = models.OneToOneField(ResponseLabelSet, on_delete=models.PROTECT, related_name="task")
    # Nugget tasks: the bank whose nuggets are assigned (the label set's bank too).
    bank = models.ForeignKey(NuggetBank, on_delete=models.PROTECT, null=True, blank=True, related_name="tasks")
    condition = models.CharField(max_length=10, choices=LabelCondition.choices, default=LabelCondition.BLIND)
    # Post-edit tasks: the LLM set whose labels the assessor sees preselected and confirms or changes.
    llm_label_set = models.ForeignKey(
        ResponseLabelSet, on_delete=models.PROTECT, null=True, blank=True, related_name="post_edit_tasks"
    )
    # Assessors allowed to judge; empty = every assessor.
    assessors = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="response_tasks")
    lease_seconds = models.PositiveIntegerField(default=1800)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.name


class ResponseLease(models.Model):
    """One answer of a task, held by one assessor until ``expires_at`` or done (``completed_at``).

    One row per (task, response): a lease that ran out unfinished is handed to the next assessor who asks by
    rewriting the row, so two assessors never hold one answer at once.
    """

    task = models.ForeignKey(ResponseTask, on_delete=models.CASCADE, related_name="leases")
    response = models.ForeignKey(Response, on_delete=models.CASCADE, related_name="task_leases")
    assessor = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="response_leases")
    leased_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["task", "response"], name="uniq_response_lease")]
        indexes = [models.Index(fields=["task", "assessor", "completed_at"])]
