"""Celery application: Redis when REDIS_URL is set, otherwise a broker in a local SQLite file.

Start a worker with ``celery -A ecast.celery worker``. Tasks live in each feature package's ``tasks`` module.
"""

import os
from typing import Any

from celery import Celery
from celery.signals import task_postrun, task_prerun
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
