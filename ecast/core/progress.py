"""The one progress JSON of every job kind, at one URL pattern: ``/jobs/<kind>/<id>/progress/``.

Every job page polls it with ``static/ecast/poll.js``. The shape is the same for every kind (status in the one
vocabulary, done/total/percent, message, error, timestamps, the worker-loss health); what only one kind's page shows
is under ``detail``, from the ``detail`` function the kind registered with ``ecast.core.jobs.register_kind``.
"""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, JsonResponse
from django.shortcuts import get_object_or_404

from ecast.core import jobs
from ecast.core.models import Job
from ecast.core.permissions import admin_required
from ecast.core.rest import job_health_data


def job_progress(job: Job) -> dict[str, Any]:
    """The progress JSON of ``job`` (any registered kind)."""
    kind = jobs.KINDS[type(job).job_kind]
    stamps = {name: getattr(job, name) for name in ("created_at", "started_at", "finished_at")}
    return {
        "kind": kind.name,
        "id": job.pk,
        "status": job.status,
        "status_label": job.status_label,
        "active": job.is_active,
        "done": job.progress_done,
        "total": job.progress_total,
        "percent": job.percent,
        "message": job.message,
        "error": job.error,
        **{name: value.isoformat() if value else None for name, value in stamps.items()},
        **job_health_data(kind.name, job.pk),
        "detail": kind.detail(job) if kind.detail else {},
    }


def eta_text(seconds: float | None) -> str:
    """An ETA as a person reads it ("about 1 min 16 s", "12 s"); "–" while there is no estimate."""
    if seconds is None:
        return "–"
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    minutes, rest = divmod(whole, 60)
    if minutes < 60:
        return f"about {minutes} min {rest} s" if rest else f"about {minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"about {hours} h {minutes} min"


def job_kind_model(kind: str) -> type[Job]:
    """The job model registered as ``kind``; 404 for a kind that has none."""
    registered = jobs.KINDS.get(kind)
    if registered is None or registered.model is None:
        raise Http404(f"no job kind {kind!r}")
    return registered.model


@admin_required
def job_progress_view(request: HttpRequest, kind: str, pk: int) -> JsonResponse:
    """Progress and health of one job, for its page's poller (session auth; scripts use the token API)."""
    return JsonResponse(job_progress(get_object_or_404(job_kind_model(kind), pk=pk)))
