"""Helpers the benchmarks share (not a benchmark itself: ``make bench`` runs ``bench/bench_*.py``)."""

from __future__ import annotations

import os


def load_average() -> str:
    """The machine's 1/5/15-minute load averages and its CPU count, printed beside every figure: on a shared
    machine a ratio means little without the load it was measured under."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.1f}, {five:.1f}, {fifteen:.1f} on {os.cpu_count()} CPUs"


def row(work: str, figure: str, baseline: str, ratio: str, goal: str) -> None:
    """One line of the issue's table: the work, its figure, the baseline measured in the same run, the ratio, the
    goal, and the load right now."""
    print(f"[row] {work}: {figure} | baseline {baseline} | {ratio} | goal {goal} | {load_average()}")
