"""Shared SVG figure helpers: private figures (no pyplot state) rendered as inline <svg>."""

import subprocess
import sys
from pathlib import Path

import pytest

from ecast.plots import figure_svg, subplots

REPO = Path(__file__).resolve().parents[2]


def test_a_figure_renders_as_an_inline_svg_element_without_prolog():
    fig, ax = subplots(figsize=(3, 2))
    ax.bar([0, 1], [0.4, 0.7])
    svg = figure_svg(fig)
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
    assert "<?xml" not in svg and "DOCTYPE" not in svg


def test_subplots_takes_a_grid_like_pyplot():
    fig, axes = subplots(2, 3, figsize=(6, 4), squeeze=False)
    assert axes.shape == (2, 3)
    assert len(fig.axes) == 6


def test_numbers_that_round_to_zero_read_without_a_minus_sign():
    from ecast.plots import number

    assert number(-0.0004, 3) == "0.000" and number(-0.0, 2) == "0.00"
    assert number(-0.0006, 3) == "-0.001" and number(0.25, 2) == "0.25"


def test_cell_text_is_black_on_light_colours_and_white_on_dark_ones_with_aa_contrast():
    from ecast.plots import contrast_ratio, text_colour_on

    # viridis' yellow end (#fde725) is light: white digits on it were unreadable (1.2:1)
    assert text_colour_on("#fde725") == "black" and contrast_ratio("#fde725", "white") < 1.3
    assert text_colour_on("#440154") == "white"  # viridis' dark purple end
    assert contrast_ratio("black", "white") == 21.0
    # whichever of black and white wins has at least 4.5:1 on any grey, even mid-grey
    for level in range(256):
        grey = (level / 255,) * 3
        assert contrast_ratio(grey, text_colour_on(grey)) >= 4.5


@pytest.fixture
def drawings(monkeypatch, fresh_cache):
    """How many figures were drawn (saved as SVG), counted at matplotlib's own savefig."""
    from matplotlib.figure import Figure

    count = {"n": 0}
    real = Figure.savefig

    def counted(self, *args, **kwargs):
        count["n"] += 1
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", counted)
    return count


def test_the_same_data_is_drawn_once_and_a_changed_datum_or_label_drawn_anew(drawings):
    from evaluation.plots import bars_svg

    first = bars_svg(["a", "b"], [0.4, 0.6], [0.05, 0.02], ylabel="mean nDCG@3")
    again = bars_svg(["a", "b"], [0.4, 0.6], [0.05, 0.02], ylabel="mean nDCG@3")
    assert again == first and first.startswith("<svg")
    assert drawings["n"] == 1
    changed = bars_svg(["a", "b"], [0.4, 0.7], [0.05, 0.02], ylabel="mean nDCG@3")
    relabelled = bars_svg(["a", "b"], [0.4, 0.7], [0.05, 0.02], ylabel="mean AP")
    assert drawings["n"] == 3 and len({first, changed, relabelled}) == 3
    bars_svg(["a", "b"], [0.4, 0.7], [0.05, 0.02], ylabel="mean AP")
    assert drawings["n"] == 3


def test_figures_are_kept_in_the_shared_cache_not_in_the_process(drawings):
    from django.core.cache import cache

    from evaluation.plots import bars_svg

    bars_svg(["a"], [0.5], [0.1], ylabel="mean")
    bars_svg(["a"], [0.5], [0.1], ylabel="mean")
    assert drawings["n"] == 1
    cache.clear()  # what another web worker, or a restarted one, shares with this one is the cache alone
    bars_svg(["a"], [0.5], [0.1], ylabel="mean")
    assert drawings["n"] == 2


def test_importing_the_report_views_does_not_import_matplotlib():
    # A web worker imports every view module on its first request; matplotlib (half a second) waits for a drawing.
    code = (
        "import os, sys, django; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'tests.settings'); django.setup();"
        "from django.urls import get_resolver; get_resolver().url_patterns;"
        "print('matplotlib' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout.strip().splitlines()[-1] == "False"
