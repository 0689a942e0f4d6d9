"""Server-side SVG figures (matplotlib Agg) of the pivot, meta-evaluation and calibration reports."""

from __future__ import annotations

from typing import Any

import numpy as np

from ecast.plots import HEATMAP_FONT_PT, annotate_cells, figure_svg, heatmap_cmap, number, stored_figure, subplots
from evaluation.analyses import budget


@stored_figure
def pivot_heatmap_svg(res: dict, which: str) -> str:
    """Metric × pivot heatmap of mean ± std (the paper's Fig. 5 for consistency, Fig. 8 for correctness)."""
    metrics = res.get("metrics") or []
    systems = res.get("systems") or []
    if not metrics or not systems:
        return ""
    order = res.get("pivot_order") or list(range(len(systems)))
    mean = np.array([[_num(res[f"{which}_mean"][m][i]) for i in order] for m in metrics])
    std = np.array([[_num(res[f"{which}_std"][m][i]) for i in order] for m in metrics])
    fig, ax = subplots(figsize=(max(5, 0.7 * len(order) + 2.4), 0.7 * len(metrics) + 1.8))
    # cividis: readable to every kind of colour vision, and light to dark in one hue run (unlike red–yellow–green)
    image = ax.imshow(np.ma.masked_invalid(mean), vmin=-1, vmax=1, cmap=heatmap_cmap("cividis"), aspect="auto")
    labels = [
        [
            "n/a" if np.isnan(mean[r, c]) else f"{number(mean[r, c], 2)}\n±{number(std[r, c], 2)}"
            for c in range(len(order))
        ]
        for r in range(len(metrics))
    ]
    annotate_cells(ax, image, labels)
    ax.set_xticks(range(len(order)), [systems[i] for i in order], rotation=45, ha="right", fontsize=HEATMAP_FONT_PT)
    ax.set_yticks(range(len(metrics)), metrics, fontsize=HEATMAP_FONT_PT)
    ax.set_xlabel("pivot system (decreasing full-set score on " + metrics[0] + ")", fontsize=HEATMAP_FONT_PT)
    label = "Pearson r of result deltas (EE1 vs EE2)" if which == "consistency" else "Kendall τ vs full-set ranking"
    bar = fig.colorbar(image, ax=ax, fraction=0.03)
    bar.set_label(label, fontsize=HEATMAP_FONT_PT)
    bar.ax.tick_params(labelsize=HEATMAP_FONT_PT)
    return figure_svg(fig)


@stored_figure
def split_distribution_svg(consistency: list, correctness: list, title: str) -> str:
    """Histograms of one pivot × metric's per-split values (the paper's Fig. 4b and 7b)."""
    # Constrained layout puts the figure title above the panel titles instead of on top of them.
    fig, axes = subplots(1, 2, figsize=(8.4, 3.1), layout="constrained")
    for ax, values, label in [(axes[0], consistency, "Pearson r of deltas"), (axes[1], correctness, "Kendall τ")]:
        vals = [v for v in values if v is not None]
        ax.hist(vals, bins=20, range=(-1, 1), color="#2457c5")
        if vals:
            ax.axvline(float(np.mean(vals)), color="black", linestyle="--", lw=1)
            ax.set_title(f"{label}: mean {number(np.mean(vals), 2)} ± {number(np.std(vals), 2)}", fontsize=9)
        ax.set_xlabel(label)
        ax.set_ylabel("splits")
    fig.suptitle(title, fontsize=10)
    return figure_svg(fig)


@stored_figure
def reliability_svg(conditions: list[dict]) -> str:
    """Reliability diagram, one curve per candidate-set condition (the paper's Fig. 2)."""
    fig, ax = subplots(figsize=(5.2, 4.4))
    ax.plot([0, 1], [0, 1], linestyle=":", color="grey", label="perfectly calibrated")
    for cond in conditions:
        pts = [(b["confidence"], b["accuracy"]) for b in cond["buckets"] if b["count"]]
        if not pts:
            continue
        xs, ys = zip(*pts, strict=True)
        ece = cond.get("ece")
        ax.plot(
            xs,
            ys,
            marker="o",
            ms=3,
            label=f"{cond['label']} (ECE {number(ece, 3)})" if ece is not None else cond["label"],
        )
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("mean predicted probability of relevance (bucket)")
    ax.set_ylabel("fraction relevant (bucket)")
    # Beside the axes, not over them: inside, the legend hid the curves' upper-left points.
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
    ax.grid(alpha=0.3)
    return figure_svg(fig)


@stored_figure
def gain_curve_svg(curve: list[dict], measure: str) -> str:
    """Gain of the headline measure of the risk-aware ranking vs risk aversion b (the paper's Fig. 3)."""
    if not curve:
        return ""
    fig, ax = subplots(figsize=(5.6, 3.4))
    ax.axhline(0, color="grey", lw=0.8)
    ax.plot([c["b"] for c in curve], [c["gain"] for c in curve], marker="o")
    ax.set_xlabel("risk aversion b")
    ax.set_ylabel(f"{measure} gain over b = 0 (mean run)")
    ax.grid(alpha=0.3)
    return figure_svg(fig)


@stored_figure
def rank_table_svg(settings: list[dict], key: str, metrics: list[str]) -> str:
    """Complex metric × (dimension, iteration) heatmap of ranks (1 = best), like the paper's Tables 2–3."""
    if not settings:
        return ""
    cols = [f"{s['dimension']}\nit {s['iterations']}" for s in settings]
    mat = np.array([[s[key].get(m, np.nan) for s in settings] for m in metrics], dtype=float)
    fig, ax = subplots(figsize=(max(6, 0.6 * len(cols) + 2.4), 0.5 * len(metrics) + 1.6))
    image = ax.imshow(mat, cmap=heatmap_cmap("viridis_r"), aspect="auto", vmin=1, vmax=max(2, np.nanmax(mat)))
    annotate_cells(ax, image, [[None if np.isnan(v) else f"{int(v)}" for v in row] for row in mat])
    ax.set_xticks(range(len(cols)), cols, fontsize=HEATMAP_FONT_PT, rotation=60, ha="right")
    ax.set_yticks(range(len(metrics)), metrics, fontsize=HEATMAP_FONT_PT)
    return figure_svg(fig)


@stored_figure
def stability_svg(rows: list[dict]) -> str:
    """Mean Kendall τ (± std) between system rankings on different paraphrase test sets, per measure."""
    rows = [r for r in rows if r.get("mean_tau") is not None]
    if not rows:
        return ""
    fig, ax = subplots(figsize=(5.6, 0.4 * len(rows) + 1.2))
    ys = range(len(rows))
    ax.barh(list(ys), [r["mean_tau"] for r in rows], xerr=[r["std_tau"] or 0 for r in rows], color="#2457c5")
    ax.set_yticks(list(ys), [r["measure"] for r in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(-1, 1)
    ax.set_xlabel("mean Kendall τ between test sets")
    ax.grid(axis="x", alpha=0.3)
    return figure_svg(fig)


def _num(v: Any) -> float:
    return float("nan") if v is None else float(v)


@stored_figure
def found_curve_svg(res: dict) -> str:
    """Relevant documents found against judgments made, one line per strategy (Losada et al. 2017, Fig. 3)."""
    fig, ax = subplots(figsize=(5.8, 3.8))
    for _, s in budget.strategy_results(res):
        ax.plot([p["judgments"] for p in s["curve"]], [p["found"] for p in s["curve"]], label=s["label"])
    ax.axhline(res["relevant_in_pool"], color="grey", lw=0.8, linestyle=":")
    ax.set_xlabel("judgments (spread evenly over the turns)")
    ax.set_ylabel(f"relevant found (grade ≥ {res['threshold']})")
    ax.legend(fontsize=7, loc="lower right")
    ax.grid(alpha=0.3)
    return figure_svg(fig)


@stored_figure
def tau_curve_svg(res: dict, measure: str) -> str:
    """Kendall τ between the rankings under partial and full judgments, against the share of the pool judged."""
    fig, ax = subplots(figsize=(4.6, 3.2))
    for _, s in budget.strategy_results(res):
        ax.plot(
            [r["fraction"] for r in s["tau"]], [_num(r[measure]) for r in s["tau"]], marker="o", ms=3, label=s["label"]
        )
    ax.set_xlabel("share of each turn's pool judged")
    ax.set_ylabel(f"Kendall τ ({measure})")
    taus = [r[measure] for _, s in budget.strategy_results(res) for r in s["tau"] if r[measure] is not None]
    ax.set_ylim(min([0.0, *taus]), 1.02)
    ax.legend(fontsize=6, loc="lower right")
    ax.grid(alpha=0.3)
    return figure_svg(fig)


def pivot_figures(res: dict, *, dist_metric: str | None = None, dist_pivot: str | None = None) -> dict[str, Any]:
    """The pivot report's figures: both heatmaps, and the per-split histograms of one metric × pivot (by default the
    first metric and the best pivot, as the page first shows them)."""
    if not res.get("metrics"):
        return {}
    systems = res["systems"]
    order = res.get("pivot_order") or list(range(len(systems)))
    dist: dict[str, Any] = {}
    if res.get("kind") == "splits" and res.get("consistency_splits"):
        d_metric = dist_metric or res["metrics"][0]
        d_pivot = dist_pivot or systems[order[0]]
        if d_metric in res["metrics"] and d_pivot in systems:
            i = systems.index(d_pivot)
            cons = [row[i] for row in res["consistency_splits"][d_metric]]
            corr = [row[i] for row in res["correctness_splits"][d_metric]]
            dist = {
                "metric": d_metric,
                "pivot": d_pivot,
                "svg": split_distribution_svg(cons, corr, f"pivot {d_pivot}, {d_metric}"),
            }
    return {
        "dist": dist,
        "consistency_svg": pivot_heatmap_svg(res, "consistency"),
        "correctness_svg": pivot_heatmap_svg(res, "correctness"),
    }


def metaeval_figures(res: dict) -> dict[str, Any]:
    """The meta-evaluation report's figures: the two rank tables and the stability bars."""
    if not res.get("settings"):
        return {}
    metrics = res["complex_metrics"]
    return {
        "it_svg": rank_table_svg(res["settings"], "intuitiveness_rank", metrics),
        "mu_svg": rank_table_svg(res["settings"], "unanimity_rank", metrics),
        "stability_svg": stability_svg(res.get("stability") or []),
    }


def calibration_figures(res: dict) -> dict[str, Any]:
    """The calibration report's reliability diagram."""
    return {"reliability_svg": reliability_svg(res["conditions"])} if res.get("conditions") else {}


def stochastic_figures(res: dict) -> dict[str, Any]:
    """The stochastic system's gain curve."""
    return {"gain_svg": gain_curve_svg(res["curve"], res.get("measure", ""))} if res.get("curve") else {}


def budget_figures(res: dict) -> dict[str, Any]:
    """The budget simulation's found-relevant curve and one τ curve per measure."""
    if not res.get("strategies"):
        return {}
    return {"found_svg": found_curve_svg(res), "tau_svgs": [(m, tau_curve_svg(res, m)) for m in res["measures"]]}


# The figures each kind's report page shows first: what its computation draws ahead (stored_figure keeps them), so
# the first visit after a computation finds them drawn.
REPORT_FIGURES = {
    "pivots": pivot_figures,
    "metaeval": metaeval_figures,
    "calibration": calibration_figures,
    "stochastic": stochastic_figures,
    "budget": budget_figures,
}


def budget_summary(res: dict, fractions: tuple[float, ...] = (0.1, 0.25)) -> list[dict]:
    """Per strategy: judgments to find 50 % / 80 % of the pool's relevant documents (with, in ``cells``, their
    lowest and highest over the seeded run orders), τ at 10 % / 25 % judged."""
    rows = []
    for name, s in budget.strategy_results(res):
        at = {r["fraction"]: r for r in s["tau"]}
        spread = s.get("cost_spread") or {}
        rows.append(
            {
                "name": name,
                "label": s["label"],
                "cost": [s["cost"].get(k) for k in ("0.5", "0.8")],
                "cells": [
                    {"cost": s["cost"].get(k), "min": spread.get(k, {}).get("min"), "max": spread.get(k, {}).get("max")}
                    for k in ("0.5", "0.8")
                ],
                "tau": [[at.get(f, {}).get(m) for m in res["measures"]] for f in fractions],
            }
        )
    return rows
