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
