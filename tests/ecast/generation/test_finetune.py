"""Fine-tune jobs: a collection's approved pairs train a LoRA adapter (held-out loss before and after), which then
generates as a backend with its weights named in every output's provenance; too few pairs is refused with what to
do; cancel stores nothing; pages, API and permissions for every role."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse

from ecast.generation import finetune, services
from ecast.generation.tasks import generation_job_dispatch_task
from ecast.models import Adapter, FinetuneJob, GenerationJob, Paraphrase
from tests import factories

pytestmark = pytest.mark.django_db

PARAMS = {"epochs": 2, "batch_size": 4, "learning_rate": 0.02, "max_tokens": 256}


def curated(topics: int = 4):
    """A collection whose turns each have an approved manual/raw pair (and one rejected pair that must not train)."""
    coll = factories.paraphrase_collection(name="Curated", topics=topics, turns=3)
    turn = coll.turns.order_by("id").first()
    factories.paraphrase_pair(turn, "rejected manual", "rejected raw", status="rejected")
    return coll


def test_the_training_pairs_are_the_approved_ones_by_stage():
    coll = curated()
    para = finetune.training_examples(collection=coll, stage="paraphrase")
    assert len(para) == 12
    assert para[0].source == "manual question 1.1?" and para[0].target == "para 1.1" and para[0].group == "1"
    assert all("rejected" not in e.target for e in para)
    cr = finetune.training_examples(collection=coll, stage="cr")
    assert [(e.source, e.target) for e in cr][:2] == [("para 1.2", "raw para 1.2"), ("para 1.3", "raw para 1.3")]
    assert len(cr) == 8  # turns at depth >= 2 only
    kept = finetune.training_examples(collection=coll, stage="paraphrase", exclude_topics=["1", "2"])
    assert {e.group for e in kept} == {"3", "4"}


def test_a_collection_without_enough_approved_pairs_is_refused_with_what_to_do():
    coll = factories.paraphrase_collection(name="Fresh", topics=1, turns=2, status="candidate")
    with pytest.raises(ValidationError, match="0 approved pair.*Approve paraphrases"):
        finetune.finetune_job_create(collection=coll, queue=False)
    with pytest.raises(ValidationError, match="params.epochs: 0 is outside"):
        finetune.finetune_job_create(collection=curated(), params={"epochs": 0}, queue=False)


def test_a_job_trains_an_adapter_that_generates_as_a_backend(tiny_causal, admin_client):
    coll = curated()
    job = finetune.finetune_job_create(collection=coll, base_model=str(tiny_causal), params=PARAMS, queue=False)
    adapter_id = finetune.finetune_run(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == FinetuneJob.Status.SUCCEEDED and job.progress_done == job.progress_total > 0
    adapter = Adapter.objects.get(pk=adapter_id)
    assert adapter.job_id == job.pk and adapter.training["pairs"] == 12 and len(adapter.sha256) == 64
    losses = adapter.metrics["heldout_loss"]
    assert (
        len(losses) == 3 and job.message == f"adapter #{adapter.pk}: held-out loss {losses[0]:.4f} → {losses[-1]:.4f}"
    )
    held = set(adapter.training["heldout_conversations"])
    assert held and held <= {"1", "2", "3", "4"}

    page = admin_client.get(reverse("generation-finetune-detail", args=[job.pk])).content.decode()
    assert adapter.label in page and f"{losses[0]:.4f} → {losses[1]:.4f} → {losses[2]:.4f}" in page
    assert "before the first optimiser step" not in page
    listing = admin_client.get(reverse("generation-finetune")).content.decode()
    trained, held_out = adapter.metrics["train_pairs"], adapter.metrics["heldout_pairs"]
    assert f"{trained} trained, {held_out} held out" in listing and "held out for the loss" in listing
    form_page = admin_client.get(reverse("generation-jobs")).content.decode()
    assert f'value="adapter:{adapter.pk}"' in form_page and adapter.label in form_page

    config = {
        "cqr": {"backend": "raw", "params": {}},
        "paraphrase": {"backend": "adapter", "params": {"adapter": adapter.pk, "num_return_sequences": 2}},
        "cr": {"backend": "rule", "params": {}},
        "clean": {"min_similarity": None},
    }
    gen = services.generation_job_create(collection=coll, config=config, selection={"turns": ["1_1"]})
    assert gen.config["paraphrase"]["params"]["adapter_sha256"] == adapter.sha256
    generation_job_dispatch_task(gen.pk)
    gen.refresh_from_db()
    assert gen.status == GenerationJob.Status.SUCCEEDED, gen.turns.values_list("error", flat=True)
    made = list(Paraphrase.objects.filter(provenance__job=gen.pk, kind="manual"))
    # The tiny random model's outputs rarely survive the checks: what it generated is kept or dropped, never absent.
    details = gen.turns.get().details
    dropped = [d for d in details["dropped"] if d["stage"] == "paraphrase"]
    assert len(made) + len(dropped) >= 2  # 2 samples from each of the two sources, before duplicates go
    for p in made:
        assert p.provenance["params"]["adapter"] == adapter.pk
        assert p.provenance["params"]["adapter_sha256"] == adapter.sha256


def test_an_unknown_adapter_or_one_of_another_stage_is_refused_when_the_job_is_created():
    coll = curated(topics=2)
    config = {"paraphrase": {"backend": "adapter", "params": {"adapter": 999}}}
    with pytest.raises(ValidationError, match="no adapter #999"):
        services.generation_job_create(collection=coll, config=config)
    cr = Adapter.objects.create(collection=coll, stage="cr", base_model="smollm", weights=b"", sha256="0" * 64)
    config = {"paraphrase": {"backend": "adapter", "params": {"adapter": cr.pk}}}
    with pytest.raises(ValidationError, match=f"adapter #{cr.pk} was trained for the cr stage, not paraphrase"):
        services.generation_job_create(collection=coll, config=config)


def test_a_cancelled_job_stores_no_adapter(tiny_causal, admin_client):
    coll = curated(topics=2)
    job = finetune.finetune_job_create(collection=coll, base_model=str(tiny_causal), params=PARAMS, queue=False)
    response = admin_client.post(reverse("generation-finetune-cancel", args=[job.pk]))
    assert response.status_code == 302
    assert finetune.finetune_run(job_id=job.pk) is None
    job.refresh_from_db()
    assert job.status == FinetuneJob.Status.CANCELLED and not Adapter.objects.exists()
    assert "Cancelled: no adapter was stored." in admin_client.get(response.url).content.decode()


def test_the_form_starts_a_job_and_says_why_it_cannot(admin_client, settings):
    settings.CELERY_TASK_ALWAYS_EAGER = False  # queue only: the training itself is tested above
    coll = curated(topics=2)
    url = reverse("generation-finetune")
    empty = admin_client.get(url).content.decode()
    guide = 'No adapters yet: approve paraphrases on the curation page (<a href="/collections/">Collections</a>)'
    assert guide in empty
    bad = factories.paraphrase_collection(name="Nothing approved", topics=1, turns=1, status="candidate")
    refused = admin_client.post(url, {"collection": bad.pk, "stage": "paraphrase", "epochs": 1, "learning_rate": 0.001,
                                      "rank": 8, "batch_size": 8, "seed": 0})  # fmt: skip
    assert refused.status_code == 200 and "fine-tuning needs at least 4 pairs" in refused.content.decode()
    ok = admin_client.post(url, {"collection": coll.pk, "stage": "cr", "epochs": 1, "learning_rate": 0.001,
                                 "rank": 4, "batch_size": 8, "seed": 0, "exclude_topics": "9"})  # fmt: skip
    job = FinetuneJob.objects.get()
    assert ok.url == reverse("generation-finetune-detail", args=[job.pk])
    assert job.stage == "cr" and job.params["rank"] == 4 and job.exclude_topics == ["9"]
    # queued, nothing counted yet: the page says what comes before the first step, not a bare "0 / 0"
    detail = admin_client.get(ok.url).content.decode()
    assert "a minute or two on a CPU before the first optimiser step" in detail


ENDPOINTS = [
    ("get", lambda j: reverse("generation-finetune")),
    ("get", lambda j: reverse("generation-finetune-detail", args=[j.pk])),
    ("post", lambda j: reverse("generation-finetune-cancel", args=[j.pk])),
]
API = [
    ("get", lambda j: reverse("api-finetune-jobs")),
    ("post", lambda j: reverse("api-finetune-job-create")),
    ("get", lambda j: reverse("api-finetune-job-detail", args=[j.pk])),
    ("post", lambda j: reverse("api-finetune-job-cancel", args=[j.pk])),
    ("get", lambda j: reverse("api-generation-adapters")),
]


def logged_in(user) -> Client:
    c = Client()
    if user is not None:
        c.force_login(user)
    return c


@pytest.mark.parametrize("method,url", ENDPOINTS)
def test_pages_are_for_admins_only(method, url, rater, assessor, admin_user, settings):
    settings.CELERY_TASK_ALWAYS_EAGER = False
    job = FinetuneJob.objects.create(collection=curated(topics=2))
    assert getattr(logged_in(None), method)(url(job)).status_code == 302  # to the login page
    assert getattr(logged_in(rater), method)(url(job)).status_code == 403
    assert getattr(logged_in(assessor), method)(url(job)).status_code == 403
    assert getattr(logged_in(admin_user), method)(url(job)).status_code in (200, 302)


@pytest.mark.parametrize("method,url", API)
def test_the_api_is_for_admins_only(method, url, anon_api, rater_api, assessor_api, admin_api, settings):
    settings.CELERY_TASK_ALWAYS_EAGER = False
    coll = curated(topics=2)
    job = FinetuneJob.objects.create(collection=coll)
    assert getattr(anon_api, method)(url(job)).status_code == 401
    assert getattr(rater_api, method)(url(job)).status_code == 403
    assert getattr(assessor_api, method)(url(job)).status_code == 403
    body = {"collection": coll.pk, "stage": "paraphrase", "params": {"epochs": 1}} if "create" in url(job) else None
    response = getattr(admin_api, method)(url(job), body, format="json")
    assert response.status_code in (200, 201), response.content
