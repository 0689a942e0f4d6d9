"""Celery discovers judging tasks here; each feature module's tasks are imported below."""
from judging import relevance_tasks  # noqa: F401
from judging import rating_tasks  # noqa: F401
