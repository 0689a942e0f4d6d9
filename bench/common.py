"""Helpers the benchmarks share (not a benchmark itself: ``make bench`` runs ``bench/bench_*.py``)."""

from __future__ import annotations

import os
from pathlib import Path


def load_average() -> str:
    """The machine's 1/5/15-minute load averages and its CPU count, printed beside every figure: on a shared
    machine a ratio means little without the load it was measured under."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.1f}, {five:.1f}, {fifteen:.1f} on {os.cpu_count()} CPUs"


def row(work: str, figure: str, baseline: str, ratio: str, goal: str) -> None:
    """One line of the issue's table: the work, its figure, the baseline measured in the same run, the ratio, the
    goal, and the load right now."""
    print(f"[row] {work}: {figure} | baseline {baseline} | {ratio} | goal {goal} | {load_average()}")


def cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) a worker and its pool processes have used, from /proc (0 where there is none):
    on a shared machine the wall time says how much CPU others left us, the CPU time what the work cost."""
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    total = 0.0
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(entry.name) == pid or int(fields[1]) == pid:
            total += (int(fields[11]) + int(fields[12])) / tick
    return total
