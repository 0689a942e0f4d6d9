"""Shared by the job health tests of every job kind: a job that lost its worker once, and what its API and page show.

``recovered(kind, id)`` records a fresh heartbeat and two recoveries (a retry after worker loss, then a re-queue);
the ``fresh_cache`` fixture keeps those heartbeats from leaking into other tests.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext

from ecast.core import jobs
from ecast.models import JobRecovery

LOST_DETAIL = "no heartbeat for 640 s; re-queued 2 chunk(s)"


@pytest.fixture
def fresh_cache():
    cache.clear()
    yield
    cache.clear()


def recovered(kind: str, job_id: int) -> datetime:
    """Give the job a retry after worker loss, a later re-queue, and a heartbeat now; returns the heartbeat."""
    earlier = datetime.now(tz=UTC) - timedelta(minutes=11)
    JobRecovery.objects.create(
        kind=kind, job_id=job_id, reason=JobRecovery.Reason.WORKER_LOST, detail=LOST_DETAIL, last_heartbeat=earlier
    )
    JobRecovery.objects.create(kind=kind, job_id=job_id, reason=JobRecovery.Reason.REQUEUED, detail="queue was empty")
    jobs.heartbeat_beat(kind, job_id)
    beat = jobs.last_heartbeat(kind, job_id)
    assert beat is not None
    return beat


def parse(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value.replace("Z", "+00:00")) if value else None


def assert_api_health(data: dict[str, Any], beat: datetime) -> None:
    """The job's JSON carries its heartbeat and both recoveries, in order, with ISO datetimes."""
    assert parse(data["last_heartbeat"]) == beat
    assert data["worker_loss_retries"] == 1
    lost, requeued = data["recoveries"]
    assert (lost["reason"], lost["label"], lost["detail"]) == ("worker_lost", "Retried after worker loss", LOST_DETAIL)
    assert parse(lost["at"]) is not None and parse(lost["last_heartbeat"]) is not None
    assert (requeued["reason"], requeued["label"]) == ("requeued", "Re-queued (no worker had started it)")
    assert requeued["last_heartbeat"] is None


def assert_no_health(data: dict[str, Any]) -> None:
    assert (data["last_heartbeat"], data["worker_loss_retries"], data["recoveries"]) == (None, 0, [])


def assert_page_health(html: str) -> None:
    """The page shows the heartbeat and a visible retry note with the recovery details."""
    assert "Last heartbeat:" in html and "s ago" in html
    assert "Retried after worker loss (1×)" in html
    assert LOST_DETAIL in html and "Re-queued (no worker had started it)" in html


def recovery_queries(run) -> int:
    """How many queries ``run()`` makes on the recoveries table."""
    with CaptureQueriesContext(connection) as ctx:
        run()
    return sum("ecast_jobrecovery" in q["sql"] for q in ctx.captured_queries)
