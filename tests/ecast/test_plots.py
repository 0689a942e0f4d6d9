"""Shared SVG figure helpers: private figures (no pyplot state) rendered as inline <svg>."""

from ecast.plots import figure_svg, subplots


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
