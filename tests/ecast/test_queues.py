"""Long jobs run on their own queue and worker, so they never starve short ones (a score recompute, an import)."""

from __future__ import annotations

import pytest
from celery import current_app
from django.conf import settings

from ecast.imports.tasks import RUN_TASK as IMPORT_TASK
from ecast.management.commands.rundev import worker_command
from evaluation import services as eval_services
from evaluation.analyses.services.toolkit import COMPUTE_TASK
from evaluation.permutations import services as perm_services
from judging.llm.services import RUN_TASK as LLM_TASK
from judging.relevance.pools import BUILD_TASK

LONG = [
    LLM_TASK,
    "ecast.generation.dispatch",
    "ecast.generation.chunk",
    perm_services.CHUNK_TASK,
    perm_services.SCORE_TASK,
    COMPUTE_TASK,  # analyses, budget simulations among them
]
SHORT = [
    IMPORT_TASK,
    eval_services.JOB_TASK,
    eval_services.PART_TASK,
    eval_services.DRAIN_TASK,
    BUILD_TASK,
    "ecast.jobs_sweep",
    "judging.rating.leases_expire",
]


def _queue(task_name: str) -> str:
    """The queue a message for ``task_name`` is published to, as Celery's router decides it."""
    return current_app.amqp.router.route({}, task_name, (), {})["queue"].name


@pytest.mark.parametrize("name", LONG)
def test_long_jobs_go_to_the_long_queue(name):
    assert name in current_app.tasks  # a renamed task would silently fall back to the default queue
    assert _queue(name) == settings.ECAST_LONG_QUEUE == "long"


@pytest.mark.parametrize("name", SHORT)
def test_short_jobs_stay_on_the_default_queue(name):
    assert name in current_app.tasks
    assert _queue(name) == settings.CELERY_TASK_DEFAULT_QUEUE == "celery"


def test_every_routed_task_exists():
    assert set(settings.ECAST_LONG_TASKS) <= set(current_app.tasks)


def test_make_run_starts_one_worker_per_queue_and_a_plain_worker_serves_both():
    for redis in (False, True):
        short = worker_command(redis=redis, queue="celery")
        long = worker_command(redis=redis, queue="long")
        assert short[short.index("-Q") + 1] == "celery" and long[long.index("-Q") + 1] == "long"
        assert short[short.index("-n") + 1] != long[long.index("-n") + 1]  # two node names on one host
    assert set(current_app.amqp.queues) == {"celery", "long"}


def test_each_queue_has_its_own_routing_key():
    # One key for both would make the direct exchange deliver every message to both queues: every job twice.
    assert {name: q.routing_key for name, q in current_app.amqp.queues.items()} == {"celery": "celery", "long": "long"}


@pytest.fixture
def broker():
    """A write connection to the Redis broker and its client, with both queues empty before and after."""
    with current_app.connection_for_write() as conn:
        client = conn.default_channel.client
        client.delete("celery", "long")
        try:
            yield conn, client
        finally:
            client.delete("celery", "long")


@pytest.mark.filterwarnings("ignore::celery.exceptions.AlwaysEagerIgnored")  # send_task publishes even in eager mode
@pytest.mark.skipif(not settings.REDIS_URL, reason="reads the queues' lists in Redis")
def test_a_long_job_reaches_only_the_long_queue_on_the_broker(broker):
    conn, client = broker
    current_app.send_task(LLM_TASK, args=[0], connection=conn)
    current_app.send_task(IMPORT_TASK, args=[0], connection=conn)
    assert (client.llen("long"), client.llen("celery")) == (1, 1)
    assert b"judging.llm.run" in client.lindex("long", 0)


@pytest.mark.filterwarnings("ignore::celery.exceptions.AlwaysEagerIgnored")
@pytest.mark.skipif(not settings.REDIS_URL, reason="reads the queues' lists in Redis")
def test_the_sweeper_counts_a_job_waiting_on_the_long_queue_as_a_backlog(broker):
    # A job that waits on the long queue behind another long job is not silent: queued again, it would run twice.
    from ecast.core import jobs

    conn, _ = broker
    assert jobs.broker_backlog() == 0
    current_app.send_task(LLM_TASK, args=[0], connection=conn)
    assert jobs.broker_backlog() == 1
    current_app.send_task(IMPORT_TASK, args=[0], connection=conn)
    assert jobs.broker_backlog() == 2
