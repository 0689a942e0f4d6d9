"""Server-side SVG figures shared by every report page.

matplotlib's object API (``Figure``), not pyplot: pyplot keeps global state, so two requests drawing at once in a
threaded server could mix figures; a ``Figure`` is private to its caller and freed with it.
"""

from __future__ import annotations

import io
from typing import Any

from matplotlib.figure import Figure


def subplots(*args: Any, figsize: tuple[float, float], **kwargs: Any) -> tuple[Figure, Any]:
    """Like ``plt.subplots`` (same positional/keyword arguments) on a private Figure."""
    fig = Figure(figsize=figsize)
    return fig, fig.subplots(*args, **kwargs)


def figure_svg(fig: Figure) -> str:
    """The figure as an inline ``<svg>`` element (XML prolog and doctype dropped)."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    text = buf.getvalue()
    return text[text.index("<svg") :]
