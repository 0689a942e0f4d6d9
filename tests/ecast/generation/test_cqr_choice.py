"""A generation job's CQR: the default ``best`` is chosen from the collection's own manual rewrites and recorded
with its scores; ``imported`` is offered and accepted only for collections whose turns carry automatic rewrites,
and a turn without one is recorded as falling back to its raw utterance."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from ecast.generation import services
from ecast.generation.forms import GenerationJobForm
from ecast.generation.tasks import generation_job_dispatch_task
from ecast.models import Paraphrase
from tests import factories

pytestmark = pytest.mark.django_db

TEMPLATES = {"paraphrase": {"backend": "rule"}, "cr": {"backend": "anaphora"}, "clean": {"min_similarity": None}}


@pytest.fixture
def with_rewrites(db):
    """One conversation whose second turn's automatic rewrite resolves "it" rightly and whose third has none; the
    first turn's canonical response is a passage with text."""
    coll = factories.collection(name="Auto", year=2020)
    conv = factories.conversation(coll, "81")
    factories.turn(conv, 1, "What is throat cancer?")
    second = factories.turn(
        conv, 2, "How is it treated in the early stages?", "How is throat cancer treated in the early stages?"
    )
    third = factories.turn(conv, 3, "What are the side effects of treating it with radiation?",
                           "What are the side effects of treating throat cancer with radiation?")  # fmt: skip
    second.automatic_rewrite = "How is throat cancer treated in the early stages?"
    second.save()
    return coll, third


def test_the_default_cqr_is_chosen_from_the_collection_and_the_job_records_why(with_rewrites):
    coll, _ = with_rewrites
    job = services.generation_job_create(collection=coll, config=TEMPLATES)
    params = job.config["cqr"]["params"]
    assert job.config["cqr"]["backend"] == "best" and params["turns"] == 2
    assert set(params["scores"]) == {"raw", "rule", "imported"}
    assert params["use"] == max(params["scores"], key=lambda n: params["scores"][n])
    assert params["scores"][params["use"]] >= max(params["scores"]["raw"], params["scores"]["imported"])


def test_a_collection_without_automatic_rewrites_is_refused_the_imported_backend(small_collection):
    with pytest.raises(ValidationError, match="no turn of Mini has one"):
        services.generation_job_create(
            collection=small_collection, config={**TEMPLATES, "cqr": {"backend": "imported"}}
        )
    job = services.generation_job_create(collection=small_collection, config=TEMPLATES)
    assert "imported" not in job.config["cqr"]["params"]["scores"]


def test_a_turn_without_an_automatic_rewrite_is_recorded_as_using_its_raw_utterance(with_rewrites):
    coll, third = with_rewrites
    job = services.generation_job_create(collection=coll, config={**TEMPLATES, "cqr": {"backend": "imported"}})
    generation_job_dispatch_task(job.pk)
    by_turn = {gt.turn.number: gt.details for gt in job.turns.select_related("turn")}
    assert by_turn[2]["rewrite_from"] == "automatic rewrite"
    assert by_turn[3]["rewrite"] == third.raw_utterance
    assert by_turn[3]["rewrite_from"] == "raw utterance (no automatic rewrite)"
    made = Paraphrase.objects.filter(turn=third, kind="manual", origin="generated").first()
    assert made is not None and made.provenance["cqr"]["from"] == "raw utterance (no automatic rewrite)"


def test_the_form_lists_imported_only_for_a_collection_with_automatic_rewrites(with_rewrites, small_collection):
    coll, _ = with_rewrites

    def offered(collection) -> list[str]:
        form = GenerationJobForm(initial={"collection": collection.pk})
        return [name for name, _ in form.fields["cqr_backend"].choices]

    assert "imported" in offered(coll) and "imported" not in offered(small_collection)
    assert GenerationJobForm().fields["cqr_backend"].initial == "best"
    bound = GenerationJobForm({"collection": small_collection.pk, "cqr_backend": "imported"})
    assert not bound.is_valid() and "cqr_backend" in bound.errors
