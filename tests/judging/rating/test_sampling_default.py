"""Rating campaigns sample paraphrases a curator approved; unapproved candidates only when the admin asks."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from ecast.models import Paraphrase
from judging.models import Campaign
from judging.rating import sampling, services
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def mixed():
    """One collection: 6 approved pairs (topics 1–2), 5 candidate pairs and 1 rejected pair (topics 3–4)."""
    coll = factories.paraphrase_collection("Mixed", 2020, topics=4, turns=3)
    Paraphrase.objects.filter(turn__conversation__topic_id__in=["3", "4"]).update(status="candidate")
    Paraphrase.objects.filter(turn__turn_id="4_3", kind="manual").update(status="rejected")
    return coll


def _statuses(campaign: Campaign) -> set[str]:
    return set(campaign.items.values_list("paraphrase__status", flat=True))


def test_a_campaign_samples_only_approved_pairs_by_default(mixed):
    pool = sampling.paraphrase_pool(collections=[mixed])
    assert len(pool) == 6 and {p.status for p in pool} == {"approved"}
    campaign = services.campaign_create(name="default", collections=[mixed], sample_size=50, seed=1)
    assert campaign.items.count() == 6 and _statuses(campaign) == {"approved"}


def test_candidates_are_sampled_only_when_the_admin_says_so_and_rejected_never(mixed):
    pool = sampling.paraphrase_pool(collections=[mixed], include_candidates=True)
    assert len(pool) == 6 + 5  # the rejected one stays out
    campaign = services.campaign_create(
        name="with candidates", collections=[mixed], sample_size=50, seed=1, include_candidates=True
    )
    assert campaign.items.count() == 11 and _statuses(campaign) == {"approved", "candidate"}


def test_a_collection_with_only_candidates_is_refused_with_what_to_do():
    coll = factories.paraphrase_collection("Unchecked", 2020, topics=1, turns=3, status="candidate")
    with pytest.raises(ValidationError, match="no approved manual paraphrases"):
        services.campaign_create(name="none", collections=[coll], sample_size=3, seed=1)
    assert not Campaign.objects.filter(name="none").exists()
    campaign = services.campaign_create(
        name="asked", collections=[coll], sample_size=3, seed=1, include_candidates=True
    )
    assert _statuses(campaign) == {"candidate"}


def test_the_api_samples_approved_pairs_unless_include_candidates_is_true(admin_api, admin_client, mixed):
    url = reverse("api-rating-campaign-create")
    body = {"collection_ids": [mixed.pk], "sample_size": 50, "seed": 1}
    r = admin_api.post(url, {**body, "name": "api default"}, format="json")
    assert r.status_code == 201, r.json()
    assert _statuses(Campaign.objects.get(name="api default")) == {"approved"}
    r = admin_api.post(url, {**body, "name": "api candidates", "include_candidates": True}, format="json")
    assert r.status_code == 201, r.json()
    assert _statuses(Campaign.objects.get(name="api candidates")) == {"approved", "candidate"}
    # The campaign records what it was sampled from, for the API and the report.
    assert r.json()["include_candidates"] is True
    assert Campaign.objects.get(name="api default").include_candidates is False
    report = reverse("rating-campaign", args=[Campaign.objects.get(name="api candidates").pk])
    assert "sampled from approved pairs and unapproved candidates" in admin_client.get(report).content.decode()


def test_the_form_leaves_candidates_out_unless_the_box_is_ticked(admin_client, mixed):
    page = admin_client.get(reverse("rating-campaigns")).content.decode()
    assert 'name="include_candidates"' in page and 'id="id_include_candidates" >' in page  # unticked
    form = {"collections": [mixed.pk], "sample_size": "50", "seed": "1", "measures": ["semantic_similarity"]}
    admin_client.post(reverse("rating-campaigns"), {**form, "name": "form default"})
    assert _statuses(Campaign.objects.get(name="form default")) == {"approved"}
    admin_client.post(reverse("rating-campaigns"), {**form, "name": "form ticked", "include_candidates": "on"})
    assert _statuses(Campaign.objects.get(name="form ticked")) == {"approved", "candidate"}
