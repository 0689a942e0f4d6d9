"""The one job contract: every background job kind is a subclass of :class:`Job`.

One status vocabulary, progress as done/total, what the job is doing now (``message``), why it failed (``error``)
and its timestamps. Heartbeats live in the shared cache and worker-loss recoveries in ``ecast.models.JobRecovery``
(both keyed by the job's registered kind, :attr:`Job.job_kind`); ``ecast.core.jobs.job_progress`` joins them into
the one progress JSON every job page polls.
"""

from __future__ import annotations

from typing import ClassVar

from django.conf import settings
from django.db import models


class JobStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


ACTIVE_STATUSES = (JobStatus.QUEUED, JobStatus.RUNNING)


class Job(models.Model):
    """Bookkeeping shared by every background job: status, progress, message, error, who and when."""

    Status = JobStatus

    # The name the heartbeat, the sweeper and the progress URL know this kind of job by (``ecast.core.jobs``).
    job_kind: ClassVar[str] = ""

    status = models.CharField(max_length=10, choices=JobStatus.choices, default=JobStatus.QUEUED)
    progress_done = models.PositiveIntegerField(default=0)
    progress_total = models.PositiveIntegerField(default=0)
    message = models.CharField(max_length=300, blank=True, help_text="What the job is doing now, in words.")
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # When it was last queued again (empty: at its creation). A job queued again starts a fresh heartbeat epoch: the
    # sweeper does not read a heartbeat from before it as a worker lost, only as a job waiting its turn.
    queued_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True

    @property
    def is_active(self) -> bool:
        """Queued or running: its page keeps polling."""
        return self.status in ACTIVE_STATUSES

    @property
    def percent(self) -> float:
        return round(100.0 * self.progress_done / self.progress_total, 1) if self.progress_total else 0.0

    @property
    def status_label(self) -> str:
        """The status in the page's words: what a running job is doing when it says so, else the status."""
        if self.status == JobStatus.RUNNING and self.message:
            return self.message
        return self.get_status_display()  # type: ignore[attr-defined]
