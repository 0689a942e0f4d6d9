"""Celery discovers tasks here; each feature area's tasks module is imported below."""
