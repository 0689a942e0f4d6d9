"""Server-side SVG figures of the rating report (matplotlib Agg): ECAsT Fig. 7A box plots and Fig. 7B by source."""

from __future__ import annotations

import numpy as np

from ecast.plots import figure_svg, stored_figure, subplots

SOURCE_NAMES = {"r": "from reformulated r_i", "m": "from manual m_i", "unknown": "source unknown"}
GROUP_COLORS = {"poor": "#d9534f", "undecided": "#f0ad4e", "good": "#5cb85c"}


@stored_figure
def label_boxplot_svg(labels: dict[str, list[int]], names: dict[str, str]) -> str:
    """One box per measure over item labels, mean marked (ECAsT Fig. 7A); "" when no labels yet."""
    keys = [k for k in labels if labels[k]]
    if not keys:
        return ""
    fig, ax = subplots(figsize=(1.5 * len(keys) + 2, 3.4))
    ax.boxplot([labels[k] for k in keys], showmeans=True, widths=0.5)
    ax.set_xticks(range(1, len(keys) + 1), [f"{names[k]}\n(n={len(labels[k])})" for k in keys], fontsize=8)
    ax.set_ylim(0.5, 5.5)
    ax.set_yticks([1, 2, 3, 4, 5])
    ax.set_ylabel("label (≥3 raters agree)")
    for i, k in enumerate(keys, start=1):
        ax.text(i + 0.28, float(np.mean(labels[k])), f"{np.mean(labels[k]):.1f}", fontsize=7, va="center")
    ax.grid(axis="y", alpha=0.3)
    return figure_svg(fig)


@stored_figure
def source_bars_svg(groups: dict[str, dict[str, dict[str, int]]], names: dict[str, str]) -> str:
    """Stacked poor/undecided/good shares per measure, one bar per paraphrase source (ECAsT Fig. 7B)."""
    keys = [k for k in groups if any(sum(v.values()) for v in groups[k].values())]
    if not keys:
        return ""
    sources = sorted({s for k in keys for s in groups[k]})
    fig, ax = subplots(figsize=(1.7 * len(keys) * max(1, len(sources) / 2) + 2, 3.6))
    width = 0.8 / len(sources)
    for j, src in enumerate(sources):
        xs = np.arange(len(keys)) + j * width
        bottom = np.zeros(len(keys))
        for g, color in GROUP_COLORS.items():
            totals = np.array([max(sum(groups[k].get(src, {}).values()), 1) for k in keys])
            share = np.array([groups[k].get(src, {}).get(g, 0) for k in keys]) / totals
            ax.bar(xs, share, width * 0.95, bottom=bottom, color=color, label=g if j == 0 else None)
            bottom += share
        for x in xs:
            ax.text(x, 1.02, src, ha="center", fontsize=7)
    ax.set_xticks(np.arange(len(keys)) + width * (len(sources) - 1) / 2, [names[k] for k in keys], fontsize=8)
    ax.set_ylim(0, 1.12)
    ax.set_ylabel("share of labelled items")
    ax.legend(fontsize=7, loc="lower right")
    ax.set_title(", ".join(f"{s} = {SOURCE_NAMES.get(s, s)}" for s in sources), fontsize=8)
    return figure_svg(fig)
