"""Helpers of the tests that need PostgreSQL (its row and advisory locks, a database shared with worker processes):
skip (fail in CI) elsewhere, and run a function in several threads released together, each with its own database
connection."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

import pytest
from django.db import connection, connections


def require_postgres(reason: str) -> None:
    """Skip the calling test off PostgreSQL, saying why; in CI, where PostgreSQL is there, fail instead."""
    if connection.vendor != "postgresql":
        if os.environ.get("CI"):
            pytest.fail(f"CI must run this test on PostgreSQL ({reason})")
        pytest.skip(reason)


def in_threads(n: int, fn: Callable[[int], object]) -> list[BaseException]:
    """Run ``fn(0) … fn(n - 1)`` in n threads released at once by a barrier; returns what they raised."""
    errors: list[BaseException] = []
    barrier = threading.Barrier(n)

    def work(i: int) -> None:
        try:
            barrier.wait()
            fn(i)
        except BaseException as exc:  # collected and re-raised by the test
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors
