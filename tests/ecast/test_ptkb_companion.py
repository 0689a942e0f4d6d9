"""The PTKB companion of an iKAT collection mirrors its conversations, turns and statements, and follows changes."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from ecast.models import Collection, Conversation, PtkbStatement, Turn
from ecast.services import ptkb_collection_sync
from tests.ecast.imports.conftest import ok

pytestmark = pytest.mark.django_db


@pytest.fixture
def ikat_train(shared_data) -> Collection:
    return ok("ikat_topics", shared_data / "ikat/2023/2023_train_topics.json").collection


def _snapshot(collection: Collection) -> tuple:
    return (
        sorted(Conversation.objects.filter(collection=collection).values_list("topic_id", "title")),
        sorted(
            Turn.objects.filter(collection=collection).values_list(
                "turn_id", "number", "raw_utterance", "manual_rewrite"
            )
        ),
        sorted(
            PtkbStatement.objects.filter(conversation__collection=collection).values_list(
                "conversation__topic_id", "number", "text"
            )
        ),
    )


def test_the_companion_mirrors_the_collection_and_a_second_sync_changes_nothing(ikat_train):
    companion = ptkb_collection_sync(collection=ikat_train)
    assert (
        companion.ptkb_of == ikat_train and companion.ptkb_source == ikat_train and ikat_train.ptkb_source == ikat_train
    )
    assert (companion.name, companion.relevance_threshold, companion.year) == ("iKAT 2023 PTKB", 1, 2023)
    assert _snapshot(companion) == _snapshot(ikat_train)
    assert len(_snapshot(companion)[1]) == 95 and len(_snapshot(companion)[2]) == 101
    pks = set(Turn.objects.filter(collection=companion).values_list("pk", flat=True))
    # Syncing again, or from the companion itself, keeps the same rows.
    assert ptkb_collection_sync(collection=companion) == companion
    assert set(Turn.objects.filter(collection=companion).values_list("pk", flat=True)) == pks


def test_a_sync_brings_changed_turns_statements_and_turn_links_across(ikat_train):
    companion = ptkb_collection_sync(collection=ikat_train)
    turn = Turn.objects.get(collection=ikat_train, turn_id="1-1_3")
    turn.manual_rewrite = "I'd like to stay in Amsterdam."
    turn.depends_on = Turn.objects.get(collection=ikat_train, turn_id="1-1_1")
    turn.save()
    PtkbStatement.objects.filter(conversation=turn.conversation, number=2).update(text="I live in Amsterdam.")

    ptkb_collection_sync(collection=ikat_train)

    copy = Turn.objects.get(collection=companion, turn_id="1-1_3")
    assert copy.manual_rewrite == "I'd like to stay in Amsterdam."
    assert copy.depends_on == Turn.objects.get(collection=companion, turn_id="1-1_1")
    assert PtkbStatement.objects.get(conversation=copy.conversation, number=2).text == "I live in Amsterdam."
    assert _snapshot(companion) == _snapshot(ikat_train)


def test_a_collection_without_a_ptkb_has_no_companion(small_collection):
    with pytest.raises(ValidationError, match="has no PTKB statements: import its iKAT topics first"):
        ptkb_collection_sync(collection=small_collection)
    assert not Collection.objects.filter(ptkb_of=small_collection).exists()
