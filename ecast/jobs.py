"""The one way to queue background work, and the one debounce.

Tasks are queued by their registered name, so a service never imports the tasks module that imports it. A debounced
task runs once, ``delay`` seconds after the first request; requests that arrive before it starts fold into that run,
and the task calls :func:`debounce_release` as it starts so later requests schedule the next run. Latency is bounded
by ``delay`` even under a steady stream of requests (a trailing debounce would postpone forever).
"""

from __future__ import annotations

from typing import Any

from celery import current_app
from django.core.cache import cache

# The mark outlives its window by this much: if a worker dies before releasing it, the next request schedules anew.
DEBOUNCE_GRACE_S = 120


def enqueue(task_name: str, *args: Any, countdown: float | None = None) -> Any:
    """Queue the registered task ``task_name`` with ``args`` (run at once in eager mode, as the tests do)."""
    return current_app.tasks[task_name].apply_async(args=list(args), countdown=countdown)


def debounce_key(key: str) -> str:
    return f"ecast:debounce:{key}"


def debounce(key: str, task_name: str, *args: Any, delay: float) -> bool:
    """Queue ``task_name(*args)`` in ``delay`` seconds unless a run for ``key`` is already queued; True if queued."""
    # cache.add is atomic (also on Redis and the file cache shared with the local worker): one caller wins.
    if cache.add(debounce_key(key), "1", timeout=int(delay) + DEBOUNCE_GRACE_S):
        enqueue(task_name, *args, countdown=delay)
        return True
    return False


def debounce_release(key: str) -> None:
    """Called by a debounced task as it starts: requests from now on schedule another run."""
    cache.delete(debounce_key(key))
