"""Server-side SVG figures of the ECAsT robustness reports (matplotlib Agg, inlined in the page)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ecast.plots import figure_svg, subplots


def grouped_bars_svg(groups: Sequence[str], series: Mapping[str, Sequence[float | None]], *, ylabel: str) -> str:
    """Grouped bars: one group per label (e.g. test set), one bar per series (e.g. measure or before/after)."""
    if not groups or not series:
        return ""
    n = len(series)
    width = 0.8 / n
    fig, ax = subplots(figsize=(max(5.0, 0.7 * len(groups) * max(1, n / 2) + 2), 3.4))
    for i, (name, vals) in enumerate(series.items()):
        xs = [g + (i - (n - 1) / 2) * width for g in range(len(groups))]
        ax.bar(xs, [v if v is not None else 0.0 for v in vals], width=width, label=name)
    ax.set_xticks(list(range(len(groups))), list(groups), rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=7, ncol=min(4, n))
    ax.grid(axis="y", alpha=0.3)
    return figure_svg(fig)


def stacked_share_svg(labels: Sequence[str], parts: Mapping[str, Sequence[float]], *, ylabel: str) -> str:
    """Stacked percentage bars (Table 13: judged/unjudged, or grade distribution of the formerly unjudged)."""
    if not labels or not parts:
        return ""
    fig, ax = subplots(figsize=(max(5.0, 0.6 * len(labels) + 2.5), 3.4))
    bottom = [0.0] * len(labels)
    for name, vals in parts.items():
        ax.bar(range(len(labels)), vals, bottom=bottom, label=name)
        bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
    ax.set_xticks(range(len(labels)), list(labels), rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    return figure_svg(fig)
