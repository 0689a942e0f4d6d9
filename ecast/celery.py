"""Celery application: Redis when REDIS_URL is set, otherwise a broker in a local SQLite file.

Start a worker with ``celery -A ecast.celery worker``. Tasks live in each feature package's ``tasks`` module.
"""

import os
from typing import Any

from celery import Celery
from celery.signals import task_postrun, task_prerun, worker_ready, worker_shutdown
from django.db import close_old_connections

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ecast.settings")

# Every package with a ``tasks`` module; the worker imports them at start, the web process in EcastConfig.ready().
TASK_PACKAGES = [
    "ecast",
    "ecast.imports",
    "ecast.generation",
    "judging.rating",
    "judging.relevance",
    "judging.llm",
    "evaluation",
    "evaluation.permutations",
    "evaluation.analyses",
    "evaluation.robustness",
]

app = Celery("ecast")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.imports = [f"{package}.tasks" for package in TASK_PACKAGES]


@task_prerun.connect
@task_postrun.connect
def connections_tidy(task: Any = None, **_: Any) -> None:
    """Between tasks, close a connection only when it is past its age or broken (CELERY_DB_REUSE_MAX keeps
    Celery from closing every connection), the rule a web request follows. Not inside an eager task: that runs in
    its caller's transaction."""
    if task is not None and getattr(task.request, "is_eager", False):
        return
    close_old_connections()


LIVENESS: list[Any] = []


@worker_ready.connect
def liveness_start(sender: Any = None, **_: Any) -> None:
    """The worker master beats its liveness key from now on (ecast.core.jobs.WorkerLiveness): the sweeper re-queues
    the jobs of a master that goes silent without waiting out a long job's quiet spell."""
    from ecast.core.jobs import WorkerLiveness

    beat = WorkerLiveness(str(getattr(sender, "hostname", "") or "celery"))
    beat.start()
    LIVENESS.append(beat)


@worker_shutdown.connect
def liveness_stop(**_: Any) -> None:
    while LIVENESS:
        LIVENESS.pop().close()
