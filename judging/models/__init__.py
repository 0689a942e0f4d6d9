"""Judging models: rating campaigns (crowd ratings of paraphrases) and relevance assessment (pools, judgments)."""

from judging.models.adjudication import *  # noqa: F403
from judging.models.campaigns import *  # noqa: F403
from judging.models.llm import *  # noqa: F403
from judging.models.relevance import *  # noqa: F403
