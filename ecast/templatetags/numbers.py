"""Template filters for figures (``{% load numbers %}``)."""

from __future__ import annotations

from django import template

register = template.Library()

P_FLOOR = 1e-4


@register.filter
def pvalue(value: float | None) -> str:
    """A p-value as reports print one: four decimals, "< 0.0001" below that, "—" when there is none (so a column
    never mixes 2.589e-05 with 0.0003107 and 0.111)."""
    if value is None:
        return "—"
    p = float(value)
    if p != p:  # NaN: no test could be run
        return "—"
    return f"< {P_FLOOR:.4f}" if p < P_FLOOR else f"{p:.4f}"
