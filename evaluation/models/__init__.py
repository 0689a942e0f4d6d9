"""Evaluation models, one module per feature area; all are re-exported here for Django and for imports."""

from evaluation.models.analyses import *  # noqa: F403
from evaluation.models.core import *  # noqa: F403
from evaluation.models.permutations import *  # noqa: F403
from evaluation.models.responses import *  # noqa: F403
