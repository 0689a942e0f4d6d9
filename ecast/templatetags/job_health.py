"""Template filters of the job health include (``{% load job_health %}``)."""

from __future__ import annotations

from datetime import datetime

from django import template
from django.utils import timezone

register = template.Library()


@register.filter
def heartbeat_age(value: datetime | None) -> str:
    """How long ago ``value`` was, to the second while it is recent: "12 s ago", "4 min ago", "3 h ago", "2 d ago"."""
    if value is None:
        return ""
    seconds = max(0, int((timezone.now() - value).total_seconds()))
    if seconds < 90:
        return f"{seconds} s ago"
    if seconds < 90 * 60:
        return f"{round(seconds / 60)} min ago"
    if seconds < 36 * 3600:
        return f"{round(seconds / 3600)} h ago"
    return f"{round(seconds / 86400)} d ago"
