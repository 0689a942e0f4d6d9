"""Downloads of runs, qrels and per-query scores in the formats other IR tools read (TREC, PyTerrier CSV, ranx JSON)."""
