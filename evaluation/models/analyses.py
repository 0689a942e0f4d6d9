"""Models of pivot, meta-evaluation and calibration analyses."""
