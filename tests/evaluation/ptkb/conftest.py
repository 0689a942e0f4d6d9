"""The iKAT 2023 topics (train and test) imported once per test, and the paths of the two published PTKB files."""

from __future__ import annotations

from pathlib import Path

import pytest

from ecast.models import Collection
from tests.ecast.imports.conftest import ok


@pytest.fixture
def ikat2023(db, shared_data) -> Collection:
    ok("ikat_topics", shared_data / "ikat/2023/2023_train_topics.json")
    return ok("ikat_topics", shared_data / "ikat/2023/2023_test_topics.json").collection


@pytest.fixture
def ptkb_nist(shared_data) -> Path:
    return shared_data / "ikat/2023/ptkb_rel_nist"


@pytest.fixture
def ptkb_org(shared_data) -> Path:
    return shared_data / "ikat/2023/ptkb_rel_org"
