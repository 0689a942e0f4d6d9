"""Report figures keep their labels apart: tick labels, titles and legends never overlap another panel or the data."""

from __future__ import annotations

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
