"""Relevance assessment: pools of (turn, passage) pairs, assessor judgments, derived qrels versions."""
