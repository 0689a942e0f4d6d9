"""What the admin dashboard lists as in progress: every feature registers a source (ecast never imports the apps above
it, so judging and evaluation register theirs from their ``AppConfig.ready()``).

Three sections: ``jobs`` (background work of every kind that is queued or running), ``campaigns`` (open rating
campaigns) and ``pools`` (relevance pools being built or judged). A source returns :class:`ActivityRow` s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count, Q
from django.urls import reverse

from ecast.core.models import ACTIVE_STATUSES
from ecast.models import GenerationJob, GenerationTurn, ImportJob

SECTIONS = ("jobs", "campaigns", "pools")
# A dashboard is a summary: each source shows at most this many rows, newest first.
SOURCE_LIMIT = 10


@dataclass(frozen=True)
class ActivityRow:
    """One thing in progress, with the page that shows it."""

    kind: str
    name: str
    url: str
    status: str
    collection: str = ""
    progress: str = ""
    since: datetime | None = None


Source = Callable[[], list[ActivityRow]]
_SOURCES: dict[str, dict[str, Source]] = {section: {} for section in SECTIONS}


def activity_source_register(*, section: str, name: str, source: Source) -> None:
    """Add (or replace, by ``name``) a source of rows for a dashboard section."""
    if section not in _SOURCES:
        raise ValueError(f"section: must be one of {', '.join(SECTIONS)}, got {section!r}")
    _SOURCES[section][name] = source


def activity_rows(*, section: str) -> list[ActivityRow]:
    """Every registered source's rows for the section, newest first."""
    rows = [row for source in _SOURCES[section].values() for row in source()]
    return sorted(rows, key=lambda r: r.since.timestamp() if r.since else 0.0, reverse=True)


def progress_text(done: int | None, total: int | None) -> str:
    """Progress as "3/10", never more done than the total."""
    if not total:
        return ""
    return f"{min(done or 0, total)}/{total}"


def import_jobs_in_progress() -> list[ActivityRow]:
    """Imports queued or running."""
    jobs = ImportJob.objects.filter(status__in=ACTIVE_STATUSES)
    return [
        ActivityRow(
            kind=f"Import ({job.kind})",
            name=job.file_name,
            url=reverse("import-job", args=[job.pk]),
            status=job.status_label,
            collection=job.collection.name if job.collection else "",
            progress=progress_text(job.progress_done, job.progress_total),
            since=job.queued_at or job.created_at,
        )
        for job in jobs.select_related("collection").order_by("-created_at")[:SOURCE_LIMIT]
    ]


def generation_jobs_in_progress() -> list[ActivityRow]:
    """Paraphrase-generation jobs queued or running, with turns finished of the total."""
    jobs = (
        GenerationJob.objects.filter(status__in=ACTIVE_STATUSES)
        .select_related("collection")
        .annotate(
            n_finished=Count(
                "turns", filter=Q(turns__status__in=[GenerationTurn.Status.DONE, GenerationTurn.Status.FAILED])
            )
        )
        .order_by("-created_at")[:SOURCE_LIMIT]
    )
    return [
        ActivityRow(
            kind="Generation",
            name=str(job),
            url=reverse("generation-job-detail", args=[job.pk]),
            status=job.status_label,
            collection=job.collection.name,
            progress=progress_text(job.n_finished, job.progress_total),  # type: ignore[attr-defined]
            since=job.queued_at or job.created_at,
        )
        for job in jobs
    ]


def register_ecast_sources() -> None:
    """The dataset domain's own sources: imports and generation jobs."""
    activity_source_register(section="jobs", name="imports", source=import_jobs_in_progress)
    activity_source_register(section="jobs", name="generation", source=generation_jobs_in_progress)
