"""Celery discovers tasks here; each feature area's tasks module is imported below."""

from ecast.generation import tasks as generation_tasks  # noqa: F401,E402
from ecast.imports import tasks as imports_tasks  # noqa: F401,E402
