"""Celery wrappers for relevance judging: take ids, call one service."""

from __future__ import annotations

from celery import shared_task

from ecast.core import jobs
from judging.models import Pool, PoolBuild
from judging.relevance import pools, texts, versions


@shared_task(name="judging.relevance.pool_sync")
def pool_sync_task(pool_id: int) -> int:
    """Re-aggregate a pool's judgments into its target qrels version."""
    return versions.pool_sync_to_version(pool=Pool.objects.get(pk=pool_id))


@shared_task(name=pools.BUILD_TASK)
def pool_build_task(pool_id: int) -> None:
    """Compute a new pool's pairs; record the reason if it cannot be built."""
    try:
        jobs.job_unit(pools.KIND, pool_id, lambda: pools.pool_build(pool_id=pool_id))
    except Exception as exc:  # noqa: BLE001 - any failure is shown on the pool page instead of lost in a log
        pools.pool_build_failed(pool_id=pool_id, error=f"{type(exc).__name__}: {exc}")
        raise


jobs.register_kind(
    jobs.JobKind(
        name=pools.KIND,
        active=pools.pools_building,
        resume=lambda pool_id: pools.pool_build_requeue(pool_id=pool_id),
        fail=lambda pool_id, reason: pools.pool_build_failed(pool_id=pool_id, error=reason),
        model=PoolBuild,
        detail=lambda build: {"pool_status": build.pool.status},
    )
)

# Every process loads this module at start (ecast's AppConfig imports each app's tasks), so the corpus import knows
# the needed passage ids and pools learn of new texts in the web process, the worker and commands alike.
texts.register()
