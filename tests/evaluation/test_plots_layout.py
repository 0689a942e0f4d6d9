"""Report figures keep their labels apart: tick labels, titles and legends never overlap another panel or the data."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

import ecast.plots


@pytest.fixture
def drawn(monkeypatch, fresh_cache):
    """The last figure a plot function rendered, laid out, with a renderer to measure its pieces (from an empty
    cache, so the function draws rather than serve a stored figure)."""
    figures = []
    real = ecast.plots.figure_svg

    def keep(fig):
        figures.append(fig)
        return real(fig)

    for module in ("evaluation.permutations.plots", "evaluation.analyses.plots"):
        monkeypatch.setattr(f"{module}.figure_svg", keep)

    def last():
        fig = figures[-1]
        canvas = FigureCanvasAgg(fig)
        canvas.draw()
        return fig, canvas.get_renderer()

    return last


def _overlap(a, b) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


def test_win_fraction_panels_keep_row_labels_out_of_the_panel_to_their_left(drawn):
    from evaluation.permutations.plots import win_fractions_svg

    systems = ["BM25", "CQR-rule", "CU", "FU", "LP"]
    wins = {t: {a: {b: 0.5 for b in systems} for a in systems} for t in ("81", "82", "83", "84", "85")}
    assert win_fractions_svg(wins, list(wins)).startswith("<svg")
    fig, renderer = drawn()
    panels = [ax for ax in fig.axes if ax.get_title()]
    for left, right in zip(panels, panels[1:], strict=False):
        left_box = left.get_window_extent(renderer)
        for label in right.get_yticklabels():
            if label.get_text():
                assert not _overlap(label.get_window_extent(renderer), left_box), label.get_text()
    # every conversation has the same systems: one set of row labels per row of panels
    assert [bool([t for t in ax.get_yticklabels() if t.get_text()]) for ax in panels] == [
        True,
        False,
        False,
        False,
        True,
    ]


def test_the_reliability_legend_sits_beside_the_diagram_not_over_its_curves(drawn):
    from evaluation.analyses.plots import reliability_svg

    buckets = [{"confidence": c / 10, "accuracy": c / 12, "count": 5} for c in range(1, 10)]
    conditions = [{"label": f"{k} non-relevant per relevant", "buckets": buckets, "ece": -0.0001} for k in (1, 2, 5)]
    svg = reliability_svg(conditions)
    assert "(ECE 0.000)" in svg and "-0.000" not in svg
    fig, renderer = drawn()
    (ax,) = fig.axes
    assert not _overlap(ax.get_legend().get_window_extent(renderer), ax.get_window_extent(renderer))


def test_the_split_histograms_title_stays_above_the_panel_titles(drawn):
    from evaluation.analyses.plots import split_distribution_svg

    split_distribution_svg([0.1, 0.3, -0.2, 0.5], [0.4, 0.6, 0.2, 0.8], "pivot decaf-exp4, AP")
    fig, renderer = drawn()
    title = fig._suptitle.get_window_extent(renderer)
    for ax in fig.axes:
        assert not _overlap(title, ax.title.get_window_extent(renderer)), ax.get_title()


def test_pivot_heatmap_cells_never_read_minus_zero():
    from evaluation.analyses.plots import pivot_heatmap_svg

    res = {
        "metrics": ["AP"],
        "systems": ["a", "b"],
        "consistency_mean": {"AP": [-0.001, 0.5]},
        "consistency_std": {"AP": [0.1, 0.2]},
    }
    svg = pivot_heatmap_svg(res, "consistency")
    assert "-0.00" not in svg and "0.00" in svg


PX_PER_PT = 96 / 72  # matplotlib's SVG measures in pt; CSS draws 1 pt as 4/3 px at 100 % zoom


def _luminance(rgb) -> float:
    """WCAG 2 relative luminance of an (r, g, b) in 0..1."""
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb[:3]]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def _contrast(a, b) -> float:
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_the_wcag_contrast_used_here_matches_its_known_values():
    assert _contrast((0, 0, 0), (1, 1, 1)) == pytest.approx(21.0)
    assert _contrast((1, 1, 1), (0x76 / 255,) * 3) == pytest.approx(4.54, abs=0.01)  # #767676, the AA grey


def _pivot_figure():
    from evaluation.analyses.plots import pivot_heatmap_svg

    systems = [f"system-{i}" for i in range(8)]
    means = [-1.0, -0.7, -0.3, 0.0, 0.2, 0.5, 0.8, 1.0]
    res = {
        "metrics": ["AP", "nDCG@3", "P@10"],
        "systems": systems,
        "consistency_mean": {"AP": means, "nDCG@3": means[::-1], "P@10": [None, *means[1:]]},
        "consistency_std": {m: [0.1] * 8 for m in ("AP", "nDCG@3", "P@10")},
    }
    return pivot_heatmap_svg(res, "consistency")


def _rank_figure():
    from evaluation.analyses.plots import rank_table_svg

    metrics = ["ERR", "RBP", "nDCG", "AP", "Q"]
    settings = [
        {"dimension": d, "iterations": it, "rank": {m: (i + it) % len(metrics) + 1 for i, m in enumerate(metrics)}}
        for d in ("relevance", "diversity")
        for it in (1, 2, 3)
    ]
    return rank_table_svg(settings, "rank", metrics)


@pytest.mark.parametrize("draw", [_pivot_figure, _rank_figure], ids=["pivot", "metaeval-ranks"])
def test_heatmap_digits_contrast_with_their_own_cell_and_every_label_is_at_least_11_px(drawn, draw):
    from matplotlib.colors import to_rgb

    assert draw().startswith("<svg")
    fig, _ = drawn()
    ax = fig.axes[0]
    (image,) = ax.get_images()
    values = image.get_array()
    assert ax.texts, "the cells carry their numbers"
    for text in ax.texts:
        x, y = text.get_position()
        value = values[round(y), round(x)]
        missing = value is np.ma.masked or not np.isfinite(value)
        cell = image.cmap.get_bad() if missing else image.cmap(image.norm(value))
        assert _contrast(to_rgb(text.get_color()), cell) >= 4.5, (text.get_text(), cell, text.get_color())
        assert text.get_fontsize() * PX_PER_PT >= 11, text.get_text()
    labels = [t for t in ax.get_xticklabels() + ax.get_yticklabels() if t.get_text()]
    assert labels
    for label in labels:
        assert label.get_fontsize() * PX_PER_PT >= 11, label.get_text()
