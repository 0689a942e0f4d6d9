"""Celery discovers evaluation tasks here; each feature module's tasks are imported below."""

import evaluation.analysis_tasks  # noqa: F401
import evaluation.score_tasks  # noqa: F401
from evaluation import permutation_tasks  # noqa: F401
