"""ecast: the project package and the dataset domain.

Importing it loads neither Django nor Celery, so the plain-Python pipeline modules (``ecast.pipeline``) stay light;
the Celery application lives in ``ecast.celery`` and is loaded by ``EcastConfig.ready()``.
"""
