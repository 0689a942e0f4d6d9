"""Helpers for importer tests: shared-data paths and a one-call importer that asserts success."""

from __future__ import annotations

import pytest

from ecast.imports.services import import_file
from ecast.models import ImportJob


def ok(kind, path, **kw):
    """Import and fail the test with the error report when the import did not succeed."""
    job = import_file(kind=kind, path=path, **kw)
    assert job.status == ImportJob.Status.SUCCEEDED, job.errors[:10]
    return job


@pytest.fixture
def cast(shared_data):
    return shared_data / "cast"
