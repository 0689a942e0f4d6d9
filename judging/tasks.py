"""Celery discovers judging tasks here; each feature module's tasks are imported below."""
