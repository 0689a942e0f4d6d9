"""Server-side SVG figures of a permutation experiment (matplotlib Agg): Faggioli et al. Fig. 1 and Fig. 2."""

from __future__ import annotations

from typing import Any

from ecast.plots import figure_svg, number, stored_figure, subplots

# Conversations the win-fraction figure shows until the page asks for others.
DEFAULT_TOPICS = 12


def experiment_figures(analysis: dict[str, Any], measure: str, topics: list[str] | None = None) -> dict[str, Any]:
    """The experiment page's two figures (Fig. 1, and Fig. 2 for ``topics``, by default the first conversations) and
    the conversations Fig. 2 shows."""
    wins = analysis.get("win_fractions", {})
    chosen = topics or list(wins)[:DEFAULT_TOPICS]
    means = analysis.get("permutation_means")
    return {
        "fig1": distribution_svg(means, measure) if means else "",
        "fig2": win_fractions_svg(wins, chosen) if wins else "",
        "topic_choice": chosen,
    }


@stored_figure
def distribution_svg(records: list[dict], measure: str) -> str:
    """Fig. 1: per conversation, box plot of per-permutation mean scores; the original order is a yellow diamond."""
    topics = sorted({r["topic"] for r in records}, key=lambda t: (len(str(t)), str(t)))
    data = [[r["score"] for r in records if r["topic"] == t] for t in topics]
    orig = [next((r["score"] for r in records if r["topic"] == t and r["is_original"]), None) for t in topics]
    fig, ax = subplots(figsize=(max(6, 0.45 * len(topics) + 2), 3.6))
    ax.boxplot(data, showfliers=True, widths=0.6)
    xs = [i + 1 for i, v in enumerate(orig) if v is not None]
    ax.scatter(xs, [v for v in orig if v is not None], marker="D", s=40, color="#f2c200", edgecolor="black",
               zorder=3, label="original order")  # fmt: skip
    ax.set_xticks(range(1, len(topics) + 1), [str(t) for t in topics], rotation=90, fontsize=8)
    ax.set_xlabel("conversation")
    ax.set_ylabel(f"mean {measure} over systems")
    ax.legend(loc="upper right", fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    return figure_svg(fig)


@stored_figure
def win_fractions_svg(wins: dict[str, dict[str, dict[str, float]]], topics: list[str]) -> str:
    """Fig. 2: per conversation, heatmap of how often the row system beats the column system."""
    topics = [t for t in topics if t in wins]
    if not topics:
        return ""
    cols = min(4, len(topics))
    rows = (len(topics) + cols - 1) // cols
    # Constrained layout leaves room for each panel's row labels, which otherwise run into the panel to their left.
    fig, axes = subplots(rows, cols, figsize=(3.3 * cols + 1.2, 3.2 * rows), squeeze=False, layout="constrained")
    same_systems = len({tuple(wins[t]) for t in topics}) == 1
    image = None
    for k, (ax, t) in enumerate(zip(axes.flat, topics, strict=False)):
        systems = list(wins[t].keys())
        mat = [[wins[t][a][b] for b in systems] for a in systems]
        image = ax.imshow(mat, vmin=0, vmax=1, cmap="viridis")
        ax.set_title(f"conversation {t}", fontsize=9)
        ax.set_xticks(range(len(systems)), systems, rotation=90, fontsize=7)
        # One set of row labels per row of panels when every conversation has the same systems.
        ax.set_yticks(range(len(systems)), systems if k % cols == 0 or not same_systems else [], fontsize=7)
        for i, row in enumerate(mat):
            for j, v in enumerate(row):
                if i != j:
                    ax.text(j, i, number(v, 2), ha="center", va="center", fontsize=6,
                            color="white" if v < 0.6 else "black")  # fmt: skip
    for ax in list(axes.flat)[len(topics) :]:
        ax.axis("off")
    if image is not None:
        fig.colorbar(image, ax=axes, shrink=0.8, label="fraction of orders\nrow > column")
    return figure_svg(fig)
