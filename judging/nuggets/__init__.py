"""Nugget banks, the nugget-assignment and citation-support queues, and LLM response judging."""
