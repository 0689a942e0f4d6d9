"""Celery discovers judging tasks here; each feature module's tasks are imported below."""

from judging import (  # noqa: F401
    rating_tasks,
    relevance_tasks,
)
