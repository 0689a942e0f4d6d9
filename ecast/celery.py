"""Celery application: Redis when REDIS_URL is set, otherwise a broker in a local SQLite file."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ecast.settings")

app = Celery("ecast")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
