"""LLM pre-judgments: a local model labels (turn, passage) pairs into their own qrels version."""
