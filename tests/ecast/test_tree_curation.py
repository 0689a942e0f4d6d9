"""Curating a CAsT 2022 conversation tree: System turns are the system's side of the conversation, so the curator
moves from User turn to User turn, and no page, service, API or generation job puts paraphrases on a System turn."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from ecast import selectors, services
from ecast.generation import services as generation
from ecast.models import Collection, Paraphrase, Turn
from tests.ecast.imports.conftest import ok

pytestmark = pytest.mark.django_db

TREE = "cast/2022/2022_evaluation_topics_tree_v1.0.json"


@pytest.fixture
def tree(shared_data) -> Collection:
    return ok("cast2022_topics", shared_data / TREE).collection


def _turn(coll: Collection, turn_id: str) -> Turn:
    return Turn.objects.get(collection=coll, turn_id=turn_id)


def test_the_next_and_previous_turns_pass_system_turns_by(tree):
    page = selectors.turn_page(turn=_turn(tree, "136_2-3"))
    assert (page.previous_turn.turn_id, page.next_turn.turn_id) == ("136_2-1", "136_2-5")
    # The conversation's last User turn goes on to the next conversation's first turn, past the System turn after it.
    assert selectors.turn_after(turn=_turn(tree, "136_2-5")).turn_id == "137_1-1"


def test_deciding_the_last_pair_of_a_turn_moves_on_to_the_next_user_turn(tree):
    manual, _raw = services.paraphrase_add(
        turn=_turn(tree, "136_2-3"), manual_text="Did the public learn who Deep Throat was?", raw_text="Did they?"
    )
    decided = services.paraphrase_approve(paraphrase=manual)
    assert selectors.curation_next(paraphrase=decided) == (_turn(tree, "136_2-5"), None)


def test_a_system_turn_takes_no_paraphrase_pair(tree):
    system = _turn(tree, "136_2-4")
    with pytest.raises(ValidationError, match="136_2-4 is a System turn"):
        services.paraphrase_add(turn=system, manual_text="Who was Deep Throat?", raw_text="Who was he?")
    assert not Paraphrase.objects.exists()


def test_the_api_refuses_a_pair_on_a_system_turn(tree, admin_api):
    system = _turn(tree, "136_2-4")
    response = admin_api.post(
        reverse("api-paraphrase-add"), {"turn": system.pk, "manual_text": "Who was Deep Throat?", "raw_text": "Who?"}
    )
    assert response.status_code == 400 and "136_2-4 is a System turn" in str(response.json())
    assert not Paraphrase.objects.exists()


def test_a_system_turn_s_page_offers_no_pairs_and_refuses_a_posted_one(tree, admin_client):
    system = _turn(tree, "136_2-4")
    html = admin_client.get(reverse("turn-detail", args=[system.pk])).content.decode()
    assert "Add a paraphrase pair" not in html and 'id="paraphrases"' not in html
    assert 'id="system-turn-note"' in html and "136_2-5" in html
    response = admin_client.post(
        reverse("turn-detail", args=[system.pk]), {"manual_text": "Who was Deep Throat?", "raw_text": "Who?"}
    )
    assert "136_2-4 is a System turn" in response.content.decode()
    assert not Paraphrase.objects.exists()


def test_a_generation_job_refuses_to_generate_for_a_named_system_turn(tree):
    with pytest.raises(ValidationError, match="never generated for: 136_2-4"):
        generation.generation_job_create(collection=tree, selection={"turns": ["136_2-3", "136_2-4"]})
    job = generation.generation_job_create(collection=tree, selection={"conversations": ["136"]})
    planned = set(job.turns.values_list("turn__participant", flat=True))
    assert planned == {"User"} and job.turns.count() == 10
