"""An iKAT collection (the 2023 training topics: 11 users, 95 turns, 101 PTKB statements) and a PTKB task on the
first three turns of topic 1-1."""

from __future__ import annotations

import pytest

from ecast.models import Collection
from judging.models import Pool
from judging.ptkb import services
from tests.ecast.imports.conftest import ok

TURNS = ["1-1_1", "1-1_2", "1-1_3"]


@pytest.fixture
def ikat_train(db, shared_data) -> Collection:
    return ok("ikat_topics", shared_data / "ikat/2023/2023_train_topics.json").collection


@pytest.fixture
def task(ikat_train, admin_user) -> Pool:
    return services.ptkb_task_create(
        collection=ikat_train, turn_ids=TURNS, name="PTKB of topic 1-1", created_by=admin_user
    )
