"""Paraphrase test sets drawn from the real ECAsT release: one paraphrase per turn per set, each text in one set."""

from __future__ import annotations

from collections import defaultdict

import pytest

from ecast.generation.testsets import test_sets_create as create_test_sets
from ecast.imports.services import import_file
from ecast.models import Collection, Paraphrase, TestSetItem
from tests.ecast.helpers import ecast_topics_import


@pytest.mark.django_db
def test_no_turn_asks_the_same_text_in_two_sets_although_ecast_repeats_some_rows(shared_data):
    ecast_topics_import(shared_data)
    assert import_file(kind="ecast_csv", path=shared_data / "ecast/ECAsT.csv").status == "succeeded"
    coll = Collection.objects.get(year=2021)
    Paraphrase.objects.filter(turn__collection=coll).update(status=Paraphrase.Status.APPROVED)
    texts_116_4 = list(
        Paraphrase.objects.filter(turn__collection=coll, turn__turn_id="116_4", kind="manual").values_list(
            "text", flat=True
        )
    )
    repeated = "What literary devices are used in Islamic poetry?"
    assert texts_116_4.count(repeated) == 2 and len(set(texts_116_4)) == 6  # the release repeats one row

    sets = create_test_sets(collection=coll, kind="manual", n_sets=3, seed=0)

    by_turn: dict[str, list[str]] = defaultdict(list)
    items = TestSetItem.objects.filter(test_set__in=sets).values_list("turn__turn_id", "paraphrase__text")
    for turn_id, text in items:
        by_turn[turn_id].append(" ".join(text.split()))
    assert by_turn["116_4"].count(repeated) <= 1 and len(by_turn["116_4"]) == 3
    assert all(len(texts) == len(set(texts)) for texts in by_turn.values())
