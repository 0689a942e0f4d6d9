"""The rating demo builds its campaign once, with finished items for the report and work left for raters."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth.models import User

from judging.models import Campaign
from judging.rating import demo, selectors
from tests import factories

pytestmark = pytest.mark.django_db


def test_the_demo_campaign_is_created_once_and_leaves_work_for_the_demo_raters():
    factories.paraphrase_collection(name=demo.COLLECTION, topics=2, turns=4)
    out = io.StringIO()
    c = demo.load(stdout=out)
    assert c.raters_per_item == 5 and c.items.count() == 8
    progress = selectors.campaign_progress(campaign=c)
    assert progress["finished"] == 4
    report = selectors.campaign_agreement(campaign=c, n_boot=10)
    assert report["measures"]["semantic_similarity"]["n_items"] == 4
    rater1 = User.objects.get(username="rater1")
    assert [r["left"] for r in selectors.rater_queue(rater=rater1)] == [4]
    assert not User.objects.get(username="demo-crowd1").is_active
    demo.load(stdout=out)
    assert Campaign.objects.count() == 1 and "already loaded" in out.getvalue()


def test_the_demo_is_skipped_without_the_demo_collection():
    out = io.StringIO()
    assert demo.load(stdout=out) is None and "not found" in out.getvalue()
