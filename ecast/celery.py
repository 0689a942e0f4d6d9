"""Celery application: Redis when REDIS_URL is set, otherwise a broker in a local SQLite file.

Start a worker with ``celery -A ecast.celery worker``. Tasks live in each feature package's ``tasks`` module.
"""

import os

from celery import Celery

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
