"""The old name of ``tests/concurrency_helpers.py``, kept only while tests/ecast/imports/test_concurrency.py still
imports it; delete it once that module imports ``tests.concurrency_helpers``."""

from tests.concurrency_helpers import in_threads, require_postgres

__all__ = ["in_threads", "require_postgres"]
