"""Server-side SVG figures for scores and robustness reports (matplotlib Agg, inlined in pages)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ecast.plots import figure_svg, stored_figure, subplots


@stored_figure
def bars_svg(labels: Sequence[str], values: Sequence[float], errors: Sequence[float], *, ylabel: str) -> str:
    """Per-run bars with ±1 standard-error whiskers, best first as given."""
    if not labels:
        return ""
    fig, ax = subplots(figsize=(max(5.0, 0.42 * len(labels) + 2), 3.4))
    xs = range(len(labels))
    ax.bar(xs, values, yerr=errors, capsize=3, color="#4c78a8", ecolor="#333")
    ax.set_xticks(list(xs), list(labels), rotation=60, ha="right", fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, max(1e-9, max(v + e for v, e in zip(values, errors, strict=True))) * 1.15)
    ax.grid(axis="y", alpha=0.3)
    return figure_svg(fig)


@stored_figure
def deltas_svg(turn_ids: Sequence[str], deltas: Sequence[float], *, ylabel: str) -> str:
    """Per-turn differences sorted by size (a run pair, or a run under two qrels versions)."""
    if not turn_ids:
        return ""
    pairs = sorted(zip(turn_ids, deltas, strict=True), key=lambda p: p[1])
    fig, ax = subplots(figsize=(max(7.5, 0.06 * len(pairs) + 3), 3.2))
    colors = ["#e45756" if d < 0 else "#54a24b" for _, d in pairs]
    ax.bar(range(len(pairs)), [d for _, d in pairs], color=colors, width=0.9)
    ax.axhline(0, color="#333", lw=0.8)
    if len(pairs) <= 60:
        ax.set_xticks(range(len(pairs)), [t for t, _ in pairs], rotation=90, fontsize=6)
    else:
        ax.set_xticks([])
        ax.set_xlabel(f"{len(pairs)} turns, sorted by difference")
    ax.set_ylabel(ylabel)
    ax.grid(axis="y", alpha=0.3)
    return figure_svg(fig)


@stored_figure
def history_svg(series: Mapping[str, Sequence[tuple[int, float]]], *, ylabel: str, invert: bool = False) -> str:
    """Lines over snapshots (x = snapshot index): nDCG@3 or rank of each run as judgments grew."""
    if not series:
        return ""
    from matplotlib.ticker import MaxNLocator

    fig, ax = subplots(figsize=(7.5, 3.6))
    for name, points in series.items():
        if points:
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", ms=3, lw=1.2, label=name)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    if invert:
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.invert_yaxis()
    ax.set_xlabel("snapshot (each recompute after judgments or runs changed)")
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    if len(series) <= 20:
        ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    return figure_svg(fig)


def leaderboard_svg(data: dict[str, Any]) -> str:
    """The leaderboard's bars: each evaluated run's mean of the sorted-by measure, ± its standard error."""
    evaluated = [r for r in data["rows"] if r["headline"] is not None]
    return bars_svg(
        [r["run"] for r in evaluated],
        [r["headline"] for r in evaluated],
        [r["stderr"] for r in evaluated],
        ylabel=f"mean {data['measure']} ± s.e. ({data['version']['name']})",
    )


def turn_deltas_svg(a: Mapping[str, float], b: Mapping[str, float], *, ylabel: str) -> str:
    """Per-turn differences a − b over the turns both score, in turn id order."""
    common = sorted(set(a) & set(b))
    return deltas_svg(common, [a[t] - b[t] for t in common], ylabel=ylabel)


def history_figures(snapshots: list[dict[str, Any]], *, measure: str) -> tuple[str, str]:
    """The history page's two figures, one line per run across the snapshots: its mean, and its rank."""
    score_series: dict[str, list[tuple[int, float]]] = {}
    rank_series: dict[str, list[tuple[int, float]]] = {}
    for i, snap in enumerate(snapshots):
        for e in snap["entries"]:
            score_series.setdefault(e["run"], []).append((i, e["mean"]))
            rank_series.setdefault(e["run"], []).append((i, e["rank"]))
    return (
        history_svg(score_series, ylabel=f"mean {measure}"),
        history_svg(rank_series, ylabel="rank", invert=True),
    )
