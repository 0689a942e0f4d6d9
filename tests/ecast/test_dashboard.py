"""The admin dashboard lists work in progress of every kind (each feature registers its rows), linked to its page."""

from __future__ import annotations

import pytest
from django.urls import reverse

from ecast.models import GenerationJob, GenerationTurn, ImportJob
from evaluation.models import EvaluationJob, PermutationExperiment, PivotAnalysis
from judging.models import Pool
from tests import factories

pytestmark = pytest.mark.django_db


def test_the_dashboard_lists_jobs_of_every_kind_open_campaigns_and_pools_with_links(admin_client, small_collection):
    coll = small_collection
    version = factories.qrels_version(coll)
    imp = ImportJob.objects.create(
        kind="qrels", file_name="2020qrels.txt", collection=coll, status="running", progress_done=2, progress_total=5
    )
    gen = GenerationJob.objects.create(collection=coll, name="T5 paraphrases", status="running", progress_total=2)
    GenerationTurn.objects.create(job=gen, turn=coll.turns.first(), status="done")
    run = factories.run(coll, "bm25", {})
    EvaluationJob.objects.create(
        collection=coll, kind="run", run=run, status="running", progress_done=1, progress_total=2
    )
    perm = PermutationExperiment.objects.create(
        collection=coll,
        name="Orders",
        qrels_version=version,
        status="running",
        message="Scoring",
        progress_done=3,
        progress_total=4,
    )
    pivot = PivotAnalysis.objects.create(collection=coll, name="Pivots over splits", progress_total=50)
    camp = factories.rating_campaign(factories.paraphrase_collection(), size=2, n=3, name="Rate the pairs")
    pool = Pool.objects.create(
        collection=coll, name="Depth-3 pool", qrels_version=version, stats={"judgments_needed": 9}
    )
    # finished work is not "in progress"
    ImportJob.objects.create(kind="run", file_name="finished.run", status="succeeded")

    html = admin_client.get(reverse("home")).content.decode()

    jobs = html[html.index('id="jobs-in-progress"') : html.index('id="open-campaigns"')]
    assert "finished.run" not in jobs
    for kind, url, progress in [
        ("Import (qrels)", reverse("import-job", args=[imp.pk]), "2/5"),
        ("Generation", reverse("generation-job-detail", args=[gen.pk]), "1/2"),
        ("Evaluate a run", f"{reverse('evaluation-leaderboard')}?collection={coll.pk}", "1/2"),
        ("Permutation experiment", reverse("permutation-experiment", args=[perm.pk]), "3/4"),
        ("Pivot analysis", reverse("analyses-detail", args=["pivots", pivot.pk]), "0/50"),
    ]:
        assert kind in jobs and f'href="{url}"' in jobs and progress in jobs, kind
    assert f'href="{reverse("rating-campaign", args=[camp.pk])}">Rate the pairs</a>' in html
    assert "0/6" in html  # 2 items × 3 raters, none rated yet
    assert f'href="{reverse("relevance-pool", args=[pool.pk])}">Depth-3 pool</a>' in html and "0/9" in html


def test_an_idle_dashboard_says_what_to_do_next(admin_client, small_collection):
    html = admin_client.get(reverse("home")).content.decode()
    assert "Nothing is queued or running. Start work from" in html
    assert f'<a href="{reverse("rating-campaigns")}">Create a rating campaign</a>' in html
    assert f'<a href="{reverse("relevance-admin")}">Build a pool</a>' in html


def test_a_job_queued_again_shows_since_when_it_was_queued_not_when_it_was_created(small_collection):
    from datetime import timedelta

    from django.utils import timezone

    from evaluation.analyses.services import toolkit
    from evaluation.dashboard import analyses_in_progress

    coll = factories.collection(name="Queued again")
    pivot = PivotAnalysis.objects.create(collection=coll, name="Pivots", status="succeeded")
    PivotAnalysis.objects.filter(pk=pivot.pk).update(created_at=timezone.now() - timedelta(hours=3))
    toolkit.analysis_mark_pending(kind="pivots", analysis_id=pivot.pk)
    (row,) = [r for r in analyses_in_progress() if r.name == "Pivots"]
    assert timezone.now() - row.since < timedelta(minutes=1)
