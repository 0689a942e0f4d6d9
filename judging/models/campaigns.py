"""Judging domain: rating and relevance campaigns, items, assignments and labels."""
