"""Server-side SVG figures shared by every report page.

matplotlib's object API (``Figure``), not pyplot: pyplot keeps global state, so two requests drawing at once in a
threaded server could mix figures; a ``Figure`` is private to its caller and freed with it.

Drawing a figure costs a tenth of a second to a second of CPU, and importing matplotlib half a second: every
function that draws one is wrapped in :func:`stored_figure`, which keeps the SVG in the shared cache under a digest
of the data drawn. A page asked again for the same data gets the stored SVG; a changed datum gives a new digest and
a new drawing. matplotlib is imported only when something is drawn.
"""

from __future__ import annotations

import functools
import hashlib
import io
import pickle
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, ParamSpec

from django.core.cache import cache

from ecast.core.cache import CACHE_DOWN, cache_down

if TYPE_CHECKING:
    from matplotlib.colors import Colormap
    from matplotlib.figure import Figure

P = ParamSpec("P")
# Part of every stored figure's key: raise it when the drawing code changes, so figures drawn before are redrawn.
FIGURE_VERSION = 1
# Stored figures of data that no longer exists are never asked for again; the cache drops them after this long.
STORE_SECONDS = 30 * 24 * 3600

# Heatmap text in points: an inline SVG from matplotlib measures in pt (1 pt = 4/3 CSS px), so 9.5 pt is 12.7 px at
# 100 % zoom as long as the page does not shrink the figure (heatmaps sit in ``.plot.heatmap``, which scrolls).
HEATMAP_FONT_PT = 9.5
# WCAG 2 AA contrast for normal text.
MIN_CONTRAST = 4.5
# Cells without a value: a light grey outside every colour scale used here.
MISSING_CELL = "#e0e0e0"


def figure_key(render: Callable[..., Any], args: tuple, kwargs: dict[str, Any]) -> str:
    """The cache key of one drawing: the function and a digest of everything it was given (plain data)."""
    data = pickle.dumps((FIGURE_VERSION, args, sorted(kwargs.items())), protocol=4)
    return f"figure:{render.__module__}.{render.__qualname__}:{hashlib.sha256(data).hexdigest()}"


def stored_figure(render: Callable[P, str]) -> Callable[P, str]:
    """``render`` (data → SVG text) drawn once per distinct data and kept in the shared cache, so every web worker
    and every later request for the same data reuses it. Without a reachable cache it draws each time."""

    @functools.wraps(render)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> str:
        try:
            key = figure_key(render, args, kwargs)
        except (pickle.PicklingError, TypeError, AttributeError):  # data that is not plain: nothing to key it by
            return render(*args, **kwargs)
        try:
            svg = cache.get(key)
        except CACHE_DOWN as exc:
            cache_down("reading a stored figure", exc)
            return render(*args, **kwargs)
        if svg is None:
            svg = render(*args, **kwargs)
            try:
                cache.set(key, svg, STORE_SECONDS)
            except CACHE_DOWN as exc:
                cache_down("storing a figure", exc)
        return svg

    return wrapper


def subplots(
    *args: Any, figsize: tuple[float, float], layout: Literal["constrained"] | None = None, **kwargs: Any
) -> tuple[Figure, Any]:
    """Like ``plt.subplots`` (same positional/keyword arguments) on a private Figure; ``layout="constrained"`` makes
    room for tick labels, titles, a suptitle and colorbars between panels so none overlaps another."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize, layout=layout)
    return fig, fig.subplots(*args, **kwargs)


def number(value: float, digits: int) -> str:
    """``value`` with ``digits`` decimals; a value that rounds to zero reads 0.00, never -0.00."""
    text = f"{value:.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def figure_svg(fig: Figure) -> str:
    """The figure as an inline ``<svg>`` element (XML prolog and doctype dropped)."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    text = buf.getvalue()
    return text[text.index("<svg") :]


def heatmap_cmap(name: str) -> Colormap:
    """A colour-blind-safe scale (viridis, cividis and their reverses) whose missing cells are light grey."""
    from matplotlib import colormaps

    return colormaps[name].with_extremes(bad=MISSING_CELL)


def relative_luminance(colour: Any) -> float:
    """WCAG 2 relative luminance of a matplotlib colour (name, hex or RGB(A) tuple), 0 for black to 1 for white."""

    from matplotlib.colors import to_rgb

    def linear(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(c) for c in to_rgb(colour))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast_ratio(a: Any, b: Any) -> float:
    """WCAG 2 contrast ratio of two colours, from 1 (same) to 21 (black on white)."""
    la, lb = sorted((relative_luminance(a), relative_luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def text_colour_on(background: Any) -> str:
    """Black or white, whichever contrasts more with ``background``: at least 4.58:1 on any colour."""
    return "black" if contrast_ratio(background, "black") >= contrast_ratio(background, "white") else "white"


def annotate_cells(
    ax: Any, image: Any, labels: Sequence[Sequence[str | None]], *, fontsize: float = HEATMAP_FONT_PT
) -> None:
    """Write ``labels[row][col]`` on each cell of an ``imshow`` heatmap in black or white by the luminance of the
    cell's own colour (so light cells never carry white digits, nor dark ones black); None leaves a cell blank."""
    import numpy as np

    values = image.get_array()
    for r, row in enumerate(labels):
        for c, label in enumerate(row):
            if label is None:
                continue
            value = values[r, c]
            missing = value is np.ma.masked or not np.isfinite(value)
            background = image.cmap.get_bad() if missing else image.cmap(image.norm(value))
            ax.text(c, r, label, ha="center", va="center", fontsize=fontsize, color=text_colour_on(background))
