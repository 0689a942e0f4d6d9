"""Management commands (generate, make_test_sets) and the demo job."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from ecast.generation import demo
from ecast.models import GenerationJob, Paraphrase, TestSet
from ecast.pipeline.rules import entity_removal

pytestmark = pytest.mark.django_db


def test_generate_sync_with_rule_backends_is_deterministic(small_collection):
    out = io.StringIO()
    call_command(
        "generate", "Mini", "--cqr", "rule", "--paraphrase", "rule", "--cr", "rule", "--no-similarity-floor", "-n",
        "2", "--sync", "--sources", "r",  # m_i is u_i here: its paraphrases would ask the same raw turns
        "--chunk-size", "4", stdout=out,
    )  # fmt: skip
    job = GenerationJob.objects.get()
    assert job.status == "succeeded" and "succeeded" in out.getvalue().lower()
    p = Paraphrase.objects.get(turn__turn_id="1_3", kind="manual", provenance__source="r", text__startswith="Can you")
    assert p.text == "Can you tell me what causes throat cancer?"
    # The rule backend's context removal is the anaphora rule, no longer ECAsT's Entity Removal.
    assert p.pair.text == "Can you tell me what causes it?" != entity_removal(p.text)
    assert p.provenance["cqr"]["output"] == "What causes throat cancer?"


def test_generate_names_a_bad_backend(small_collection):
    with pytest.raises(CommandError, match="no cr backend 'nope'"):
        call_command("generate", "Mini", "--cr", "nope", "--sync")
    with pytest.raises(CommandError, match="no collection"):
        call_command("generate", "Nope")


def test_make_test_sets_exports_cast_json(small_collection, tmp_path):
    call_command(
        "generate", "Mini", "--paraphrase", "rule", "-n", "3", "--no-similarity-floor", "--sync", stdout=io.StringIO()
    )
    out = io.StringIO()
    call_command(
        "make_test_sets", "Mini", "--statuses", "candidate", "--seed", "2", "--export-dir", str(tmp_path), stdout=out
    )
    assert TestSet.objects.filter(kind="raw").count() == 3 and TestSet.objects.filter(kind="manual").count() == 3
    topics = json.loads((tmp_path / "manual_1.json").read_text())
    assert len(topics) == 2 and all("manual_rewritten_utterance" in t for topic in topics for t in topic["turn"])
    with pytest.raises(CommandError, match="no approved"):
        call_command("make_test_sets", "Mini", "--kinds", "raw")


def test_demo_job_is_created_once(small_collection):
    small_collection.name = demo.DEMO_COLLECTION
    small_collection.save()
    job = demo.load(stdout=io.StringIO())
    assert job.status == "succeeded" and job.progress_total == 6
    assert demo.load(stdout=io.StringIO()).pk == job.pk
    assert GenerationJob.objects.count() == 1


def test_generate_uses_the_pipeline_defaults_unless_told_otherwise(small_collection):
    call_command("generate", "Mini", "--paraphrase", "rule", "-n", "2", "--sync", stdout=io.StringIO())
    job = GenerationJob.objects.get()
    assert job.config["cr"]["backend"] == "anaphora"
    assert job.config["clean"] == {"min_similarity": 0.6, "keep": 4, "meaning_checks": True, "meaning_floor": 0.75}
    call_command(
        "generate", "Mini", "--paraphrase", "rule", "-n", "2", "--no-similarity-floor", "--sync", stdout=io.StringIO()
    )
    assert GenerationJob.objects.latest("pk").config["clean"]["min_similarity"] is None
