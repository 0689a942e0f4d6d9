"""Models of permutation experiments (utterance orders, per-permutation rankings and scores)."""
