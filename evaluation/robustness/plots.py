"""Server-side SVG figures of the ECAsT robustness reports (matplotlib Agg, inlined in the page)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ecast.plots import figure_svg, stored_figure, subplots
from evaluation.robustness.selectors import RobustnessParams


@stored_figure
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


@stored_figure
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


def robustness_figures(p: RobustnessParams, report: dict[str, Any]) -> dict[str, str]:
    """The report page's figures: Table 11's means beside the baselines (fig11), Table 13's judged share (fig13a) and
    grades of the formerly unjudged passages once assessed (fig13b), Table 14's before and after (fig14)."""
    t11, t13, t14 = report["table11"], report["table13"], report["table14"]
    plain = [r for r in t11["rows"] if not r["average"]]
    fig11 = grouped_bars_svg(
        [r["label"] for r in plain] + [f"baseline {k}" for k in t11["baselines"]],
        {
            m: [r["values"][m]["value"] for r in plain] + [b["means"].get(m) for b in t11["baselines"].values()]
            for m in p.measures
        },
        ylabel=f"mean ({p.base.name})",
    )
    labels13 = t13["labels"]
    fig13a = stacked_share_svg(
        labels13,
        {
            "judged": [t13["runs"][x]["judged_pct"] or 0.0 for x in labels13],
            "unjudged": [t13["runs"][x]["unjudged_pct"] or 0.0 for x in labels13],
        },
        ylabel=f"% of top-{p.depth}",
    )
    fig13b = ""
    if p.extended is not None and any(t13["runs"][x]["assessed"] for x in labels13):
        fig13b = stacked_share_svg(
            labels13,
            {f"grade {g}": [t13["runs"][x]["grades_pct"][g] or 0.0 for x in labels13] for g in range(5)},
            ylabel="% of formerly unjudged (assessed)",
        )
    fig14 = ""
    if t14:
        fig14 = grouped_bars_svg(
            [r["label"] for r in t14["rows"]],
            {
                f"{p.measures[0]} {p.base.name}": [r["values"][p.measures[0]]["before"] for r in t14["rows"]],
                f"{p.measures[0]} {p.extended.name if p.extended else ''}": [
                    r["values"][p.measures[0]]["after"] for r in t14["rows"]
                ],
            },
            ylabel=p.measures[0],
        )
    return {"fig11": fig11, "fig13a": fig13a, "fig13b": fig13b, "fig14": fig14}
