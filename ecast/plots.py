"""Server-side SVG figures shared by every report page.

matplotlib's object API (``Figure``), not pyplot: pyplot keeps global state, so two requests drawing at once in a
threaded server could mix figures; a ``Figure`` is private to its caller and freed with it.
"""

from __future__ import annotations

import io
from typing import Any, Literal

from matplotlib.figure import Figure


def subplots(
    *args: Any, figsize: tuple[float, float], layout: Literal["constrained"] | None = None, **kwargs: Any
) -> tuple[Figure, Any]:
    """Like ``plt.subplots`` (same positional/keyword arguments) on a private Figure; ``layout="constrained"`` makes
    room for tick labels, titles, a suptitle and colorbars between panels so none overlaps another."""
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
