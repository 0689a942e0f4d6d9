"""Celery discovers evaluation tasks here; each feature module's tasks are imported below."""
