"""Generation jobs store what each stage dropped and why, and the job page and API show it."""

from __future__ import annotations

import pytest
from django.urls import reverse

from ecast.generation import selectors, services
from ecast.generation.tasks import generation_job_dispatch_task
from ecast.models import GenerationTurn, Paraphrase
from tests import factories

pytestmark = pytest.mark.django_db

TEMPLATES = {"backend": "rule", "params": {"num_return_sequences": 2}, "sources": ["m"]}


@pytest.fixture
def throat(db):
    """One conversation whose later turns depend on the first, as in CAsT (raw ≠ manual)."""
    coll = factories.collection(name="Throat", year=2019)
    conv = factories.conversation(coll, "31")
    factories.turn(conv, 1, "What is throat cancer?")
    factories.turn(conv, 2, "Is it treatable?", manual="Is throat cancer treatable?")
    factories.turn(conv, 3, "What are its symptoms?", manual="What are the symptoms of throat cancer?")
    return coll


def _run(coll, cr_backend):
    config = {"paraphrase": TEMPLATES, "cr": {"backend": cr_backend}, "clean": {"min_similarity": None}}
    job = services.generation_job_create(collection=coll, config=config, seed=0)
    generation_job_dispatch_task(job.pk)
    job.refresh_from_db()
    return job


def test_a_job_with_the_default_context_removal_keeps_fluent_pairs_only(throat):
    job = _run(throat, "anaphora")
    raws = dict(
        Paraphrase.objects.filter(turn__turn_id="31_3", kind="raw").values_list("pair__text", "text").order_by("pk")
    )
    assert raws == {
        "Can you tell me what are the symptoms of throat cancer?": "Can you tell me what are its symptoms?",
        "I would like to know what are the symptoms of throat cancer.": "I would like to know what are its symptoms.",
    }
    assert selectors.generation_job_drops(job=job)["total"] == 0


def test_the_entity_removal_baseline_has_its_broken_outputs_dropped_and_counted(throat, admin_client, admin_api):
    job = _run(throat, "entity_removal")
    gt = GenerationTurn.objects.get(job=job, turn__turn_id="31_3")
    assert gt.outputs == 0 and gt.details["drops"] == {"cr": {"ungrammatical": 2}}
    assert {d["text"] for d in gt.details["dropped"]} == {
        "Can you tell me what are the of?",
        "I would like to know what are the of.",
    }
    assert not Paraphrase.objects.filter(turn__turn_id="31_3").exists()  # never saved as candidates
    drops = selectors.generation_job_drops(job=job)
    assert drops["by_stage"]["cr"]["ungrammatical"] >= 2
    cr_rows = [r for r in drops["rows"] if r["stage"] == "cr"]
    assert {"label": "Context removal", "reason": "ungrammatical"}.items() <= cr_rows[0].items()
    # Entity removal also deletes words the conversation never said: those pairs are dropped for it.
    assert [r["reason"] for r in cr_rows] == ["ungrammatical", "lost words of its source"]
    page = admin_client.get(reverse("generation-job-detail", args=[job.pk])).content.decode()
    assert "Dropped outputs" in page and "Context removal: ungrammatical 2" in page
    assert "determiner_without_noun" in page  # the rule each drop broke, beside the dropped text
    detail = admin_api.get(reverse("api-generation-job-detail", args=[job.pk])).json()
    assert detail["drops"]["cr"]["ungrammatical"] == drops["by_stage"]["cr"]["ungrammatical"]


def test_the_job_page_and_api_show_every_stage_s_drops_and_the_dropped_texts_with_their_reasons(
    throat, admin_client, admin_api
):
    job = _run(throat, "entity_removal")
    by_stage = selectors.generation_job_drops(job=job)["by_stage"]["cr"]
    total = sum(by_stage.values())
    page = admin_client.get(reverse("generation-job-detail", args=[job.pk])).content.decode()
    # The summary line counts the context-removal drops too (it named the paraphrase stage's only).
    lost, broken = by_stage["lost words of its source"], by_stage["ungrammatical"]
    summary = page[page.index("Dropped — ") :].split("<", 1)[0]
    assert summary.startswith("Dropped — Context removal: ")  # the most frequent reason first
    assert f"{lost} lost words of its source" in summary and f"{broken} ungrammatical" in summary
    # Each turn's dropped texts, in a collapsible list, with reason, rules and what they were made from.
    assert '<details class="turn-dropped"><summary>2 dropped</summary>' in page
    assert "Can you tell me what are the of?" in page and "I would like to know what are the of." in page
    assert "from p<sup>m</sup>: Can you tell me what are the symptoms of throat cancer?" in page
    listed = admin_api.get(reverse("api-generation-job-dropped", args=[job.pk])).json()
    assert listed["count"] == total and len(listed["results"]) == total
    first = admin_api.get(reverse("api-generation-job-dropped", args=[job.pk]), {"turn": "31_3", "stage": "cr"}).json()
    assert {r["text"] for r in first["results"]} == {
        "Can you tell me what are the of?",
        "I would like to know what are the of.",
    }
    assert all(
        r["reason"] == "ungrammatical" and r["stage_label"] == "Context removal" and r["rules"] and r["made_from"]
        for r in first["results"]
    )
    assert admin_api.get(reverse("api-generation-job-dropped", args=[job.pk]), {"reason": "near duplicate"}).json()[
        "count"
    ] == sum(1 for r in listed["results"] if r["reason"] == "near duplicate")
    assert admin_api.get(reverse("api-generation-job-dropped", args=[job.pk]), {"stage": "x"}).status_code == 400


def test_a_job_created_without_a_config_gets_anaphora_and_the_similarity_floor(throat, admin_client):
    job = services.generation_job_create(collection=throat)
    defaults = {"min_similarity": 0.6, "keep": 4, "meaning_checks": True, "meaning_floor": 0.75}
    assert job.config["cr"]["backend"] == "anaphora" and job.config["clean"] == defaults
    job = services.generation_job_create(collection=throat, config={"clean": {"min_similarity": None}})
    assert job.config["clean"] == {**defaults, "min_similarity": None}  # an explicit null turns the floor off
    form = admin_client.get(reverse("generation-jobs")).content.decode()
    assert '<option value="anaphora" selected>' in form and '<option value="entity_removal">' in form


def test_turns_finished_before_the_stages_counted_drops_show_their_paraphrase_drops():
    details = {"dropped": [{"text": "x", "reason": "near duplicate"}, {"text": "y", "reason": "similarity"}]}
    assert selectors.generation_turn_drops(details=details) == {"paraphrase": {"near duplicate": 1, "similarity": 1}}
    assert selectors.generation_turn_drops(details={}) == {}


class Bees:
    """A chat paraphrase backend (it takes the place of smollm) that records the few-shot pairs it was prompted
    with and answers with what issue 38's new user got."""

    name = "smollm"
    stages = ("paraphrase",)
    outputs = [
        "What is stopping bees from dying?",  # polarity flip
        "Can you add this: What is done to stop them from dying?",  # prompt echo
        "Bees are dying.",  # a statement
        "What is the purpose of their demise?",  # lost entities
        "How can we prevent bees from dying?",
        "What can be done to keep bees from dying?",
        "How can people stop bees from dying?",
    ]

    def __init__(self):
        self.shots = []

    def status(self):
        return True, "scripted"

    def paraphrase(self, sources, params):
        self.shots.append(params.get("shots"))
        return [list(self.outputs) for _ in sources]


def test_a_job_prompts_with_approved_pairs_of_other_conversations_and_shows_why_it_dropped(
    monkeypatch, admin_client, admin_api
):
    from ecast.pipeline import backends

    bees = Bees()
    monkeypatch.setitem(backends.REGISTRY["paraphrase"], "smollm", bees)
    coll = factories.collection(name="Bees", year=2021)
    other = factories.conversation(coll, "40")
    shark = factories.turn(
        other, 1, "What can be done to stop sharks dying?", manual="What can be done to stop sharks dying?"
    )
    factories.paraphrase_pair(shark, "How can we keep sharks alive?", "How can we keep them alive?")
    factories.paraphrase_pair(shark, "Rejected one?", "x", status="rejected")
    conv = factories.conversation(coll, "83")
    own = factories.turn(conv, 1, "What can be done to stop bees dying?", manual="What can be done to stop bees dying?")
    factories.paraphrase_pair(own, "How do we save the bees?", "How do we save them?")  # same conversation: never
    config = {"paraphrase": {"backend": "smollm", "sources": ["m"]}, "clean": {"min_similarity": None, "keep": 2}}
    job = services.generation_job_create(collection=coll, config=config, selection={"conversations": ["83"]})
    generation_job_dispatch_task(job.pk)
    # one call, one source (m_i), one retrieved pair: the rejected one and the own conversation's never
    assert bees.shots == [[[("What can be done to stop sharks dying?", "How can we keep sharks alive?")]]]
    gt = GenerationTurn.objects.get(job=job)
    assert gt.details["drops"]["paraphrase"] == {
        "polarity flip": 1,
        "prompt echo": 1,
        "statement for a question": 1,
        "lost or swapped entities": 1,
        "ranked out": 1,
    }
    assert gt.outputs == 2
    page = admin_client.get(reverse("generation-job-detail", args=[job.pk])).content.decode()
    assert (
        "Dropped — Paraphrase: 1 lost or swapped entities, 1 polarity flip, 1 prompt echo, 1 ranked out, "
        "1 statement for a question" in page
    )
    detail = admin_api.get(reverse("api-generation-job-detail", args=[job.pk])).json()
    assert detail["drops"]["paraphrase"]["polarity flip"] == 1


def test_a_turn_s_page_shows_a_text_dropped_several_times_once_with_its_count():
    copy = {"stage": "paraphrase", "text": "Why doesn't honey spoil?", "reason": "identical to source", "source": "x"}
    flip = {**copy, "text": "Why does my honey spoil?", "reason": "polarity flip"}
    grouped = selectors.generation_turn_dropped_grouped(details={"dropped": [copy, flip, copy, copy]})
    assert [(d["text"], d["reason"], d["count"]) for d in grouped] == [
        ("Why doesn't honey spoil?", "identical to source", 3),
        ("Why does my honey spoil?", "polarity flip", 1),
    ]


def test_the_job_page_says_when_a_turn_s_rewrite_was_dropped_and_not_paraphrased(throat, admin_client):
    config = {"cqr": {"backend": "raw"}, "paraphrase": TEMPLATES, "clean": {"min_similarity": None}}
    job = services.generation_job_create(collection=throat, config=config, seed=0)
    generation_job_dispatch_task(job.pk)
    page = admin_client.get(reverse("generation-job-detail", args=[job.pk])).content.decode()
    # r_i = u_i resolves nothing on turns 2 and 3: m_i alone is paraphrased, and the page says so.
    assert page.count("not used: identical to source") == 2
