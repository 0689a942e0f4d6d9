"""Judging models: rating campaigns (crowd ratings of paraphrases), relevance assessment (pools, judgments) and
response-judging tasks (nugget assignment, citation support)."""

from judging.models.adjudication import *  # noqa: F403
from judging.models.campaigns import *  # noqa: F403
from judging.models.llm import *  # noqa: F403
from judging.models.nuggets import *  # noqa: F403
from judging.models.relevance import *  # noqa: F403
