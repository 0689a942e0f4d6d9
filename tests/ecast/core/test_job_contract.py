"""Every registered job kind keeps the one job contract: the one progress JSON at /jobs/<kind>/<id>/progress/, the
worker-loss health (last heartbeat, retries) in that JSON, on the job's page and in its API, and the page follows the
job with the one poller. One case per kind; a kind registered without a case fails the first test."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from ecast.core import jobs
from ecast.core.models import Job, JobStatus
from ecast.core.rest import job_health_data
from ecast.models import Collection, FinetuneJob, GenerationJob, ImportJob, JobRecovery
from ecast.templatetags.job_health import heartbeat_age
from evaluation.models import (
    BudgetSimulation,
    CalibrationReport,
    EvaluationJob,
    MetaEvaluation,
    PermutationExperiment,
    PivotAnalysis,
    Run,
    StochasticSystem,
)
from judging.models import LlmJudgeJob, Pool, PoolBuild, ResponseLlmJob
from tests import factories

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_cache")]

LOST_DETAIL = "no heartbeat for 640 s; re-queued 2 chunk(s)"
PROGRESS_KEYS = {
    "kind", "id", "status", "status_label", "active", "done", "total", "percent", "message", "error",
    "created_at", "started_at", "finished_at", "last_heartbeat", "worker_loss_retries", "recoveries", "detail",
}  # fmt: skip


@dataclass(frozen=True)
class Case:
    """How to make a running job of one kind, and where its page and API show it."""

    make: Callable[[Collection], Job]
    page: Callable[[Job], str]
    api: Callable[[Job], str]
    list_api: str | None = None


def analysis(model: type[Job], kind: str) -> Case:
    def make(coll: Collection) -> Job:
        # A calibration report reads one run; the other analyses take their runs as a list.
        extra = {"run": Run.objects.create(collection=coll, name="r")} if kind == "calibration" else {}
        return model.objects.create(collection=coll, name=kind, status=JobStatus.RUNNING, progress_total=10, **extra)

    return Case(
        make=make,
        page=lambda job: f"/evaluation/analyses/{kind}/{job.pk}/",
        api=lambda job: f"/api/analyses/{kind}/{job.pk}/",
    )


def make_pool_build(coll: Collection) -> Job:
    pool = Pool.objects.create(
        collection=coll, name="p", qrels_version=factories.qrels_version(coll), status=Pool.Status.BUILDING
    )
    return PoolBuild.objects.create(pool=pool, status=JobStatus.RUNNING, progress_total=1)


CASES: dict[str, Case] = {
    "import": Case(
        make=lambda coll: ImportJob.objects.create(kind="cast_topics", file_name="t.json", status=JobStatus.RUNNING),
        page=lambda job: f"/imports/{job.pk}/",
        api=lambda job: f"/api/imports/{job.pk}/",
    ),
    "generation": Case(
        make=lambda coll: GenerationJob.objects.create(collection=coll, name="g", status=JobStatus.RUNNING),
        page=lambda job: f"/generation/jobs/{job.pk}/",
        api=lambda job: f"/api/generation/jobs/{job.pk}/",
        list_api="/api/generation/jobs/",
    ),
    "finetune": Case(
        make=lambda coll: FinetuneJob.objects.create(collection=coll, status=JobStatus.RUNNING, progress_total=8),
        page=lambda job: f"/generation/finetune/{job.pk}/",
        api=lambda job: f"/api/generation/finetune/{job.pk}/",
        list_api="/api/generation/finetune/",
    ),
    "evaluation": Case(
        make=lambda coll: EvaluationJob.objects.create(
            collection=coll, kind=EvaluationJob.Kind.FULL, status=JobStatus.RUNNING, progress_total=5
        ),
        page=lambda job: "/evaluation/runs/",
        api=lambda job: f"/api/evaluation/jobs/{job.pk}/",
    ),
    "permutation": Case(
        make=lambda coll: PermutationExperiment.objects.create(
            collection=coll,
            name="e",
            qrels_version=factories.qrels_version(coll),
            status=JobStatus.RUNNING,
            message=PermutationExperiment.RETRIEVING,
            progress_total=4,
            progress_done=1,
        ),
        page=lambda job: f"/permutations/{job.pk}/",
        api=lambda job: f"/api/permutations/experiments/{job.pk}/",
    ),
    "analysis-pivots": analysis(PivotAnalysis, "pivots"),
    "analysis-metaeval": analysis(MetaEvaluation, "metaeval"),
    "analysis-calibration": analysis(CalibrationReport, "calibration"),
    "analysis-stochastic": analysis(StochasticSystem, "stochastic"),
    "analysis-budget": analysis(BudgetSimulation, "budget"),
    "llm_judge": Case(
        make=lambda coll: LlmJudgeJob.objects.create(
            collection=coll,
            source_version=factories.qrels_version(coll),
            model="smollm",
            model_id="SmolLM2-135M-Instruct",
            status=JobStatus.RUNNING,
            progress_total=7,
        ),
        page=lambda job: f"/judging/llm/{job.pk}/",
        api=lambda job: f"/api/judging/llm/jobs/{job.pk}/",
        list_api="/api/judging/llm/jobs/",
    ),
    "response_llm": Case(
        make=lambda coll: ResponseLlmJob.objects.create(
            task="baseline",
            collection=coll,
            model="extractive",
            model_id="extractive",
            status=JobStatus.RUNNING,
            progress_total=6,
        ),  # fmt: skip
        page=lambda job: f"/judging/llm/responses/{job.pk}/",
        api=lambda job: f"/api/judging/llm/responses/{job.pk}/",
        list_api="/api/judging/llm/responses/",
    ),
    "pool": Case(
        make=make_pool_build,
        page=lambda job: f"/judging/relevance/admin/pools/{job.pk}/",
        api=lambda job: f"/api/judging/relevance/pools/{job.pk}/",
        list_api="/api/judging/relevance/pools/",
    ),
}
KINDS = sorted(CASES)
LIST_KINDS = sorted(k for k, case in CASES.items() if case.list_api)


@pytest.fixture
def coll() -> Collection:
    return factories.collection(name="Job contract")


def recovered(kind: str, job_id: int) -> datetime:
    """Give the job a retry after worker loss, a later re-queue, and a heartbeat now; returns the heartbeat."""
    earlier = datetime.now(tz=UTC) - timedelta(minutes=11)
    JobRecovery.objects.create(
        kind=kind, job_id=job_id, reason=JobRecovery.Reason.WORKER_LOST, detail=LOST_DETAIL, last_heartbeat=earlier
    )
    JobRecovery.objects.create(kind=kind, job_id=job_id, reason=JobRecovery.Reason.REQUEUED, detail="queue was empty")
    jobs.heartbeat_beat(kind, job_id)
    beat = jobs.last_heartbeat(kind, job_id)
    assert beat is not None
    return beat


def parse(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value.replace("Z", "+00:00")) if value else None


def assert_health(data: dict[str, Any], beat: datetime) -> None:
    """The JSON carries the heartbeat and both recoveries, in order, with ISO datetimes."""
    assert parse(data["last_heartbeat"]) == beat
    assert data["worker_loss_retries"] == 1
    lost, requeued = data["recoveries"]
    assert (lost["reason"], lost["label"], lost["detail"]) == ("worker_lost", "Retried after worker loss", LOST_DETAIL)
    assert parse(lost["at"]) is not None and parse(lost["last_heartbeat"]) is not None
    assert (requeued["reason"], requeued["label"]) == ("requeued", "Re-queued (no worker had started it)")
    assert requeued["last_heartbeat"] is None


def assert_no_health(data: dict[str, Any]) -> None:
    assert (data["last_heartbeat"], data["worker_loss_retries"], data["recoveries"]) == (None, 0, [])


def progress_url(job: Job) -> str:
    return reverse("job-progress", args=[type(job).job_kind, job.pk])


def finish(job: Job) -> None:
    job.status = JobStatus.SUCCEEDED
    job.finished_at = timezone.now()
    job.save()
    if isinstance(job, PoolBuild):
        Pool.objects.filter(pk=job.pk).update(status=Pool.Status.OPEN)


def test_every_registered_job_kind_has_a_model_of_the_one_contract_and_a_case_here():
    with_model = {name for name, kind in jobs.KINDS.items() if kind.model is not None}
    assert with_model == set(CASES)
    for name in with_model:
        model = jobs.KINDS[name].model
        assert model is not None and issubclass(model, Job) and model.job_kind == name
    # The one unit without a job row: the debounced drain of re-judged turns (its work is an EvaluationJob).
    assert set(jobs.KINDS) - with_model == {"recompute"}


@pytest.mark.parametrize("kind", KINDS)
def test_progress_json_has_the_one_shape_and_carries_the_health(kind, coll, admin_client):
    job = CASES[kind].make(coll)
    beat = recovered(kind, job.pk)
    data = admin_client.get(progress_url(job)).json()
    assert set(data) == PROGRESS_KEYS
    assert (data["kind"], data["id"], data["status"], data["active"]) == (kind, job.pk, "running", True)
    assert (data["done"], data["total"]) == (job.progress_done, job.progress_total)
    assert isinstance(data["detail"], dict)
    assert_health(data, beat)


@pytest.mark.parametrize("kind", KINDS)
def test_progress_json_of_a_job_never_recovered_has_empty_health(kind, coll, admin_client):
    job = CASES[kind].make(coll)
    assert_no_health(admin_client.get(progress_url(job)).json())


@pytest.mark.parametrize("kind", KINDS)
def test_progress_json_is_for_admins_only(kind, coll, client, rater):
    url = progress_url(CASES[kind].make(coll))
    assert client.get(url).status_code == 302  # to the log-in page
    client.force_login(rater)
    assert client.get(url).status_code == 403


def test_progress_json_of_an_unknown_kind_or_job_is_404(admin_client, coll):
    job = CASES["import"].make(coll)
    assert admin_client.get(reverse("job-progress", args=["nonsense", job.pk])).status_code == 404
    assert admin_client.get(reverse("job-progress", args=["recompute", job.pk])).status_code == 404
    assert admin_client.get(reverse("job-progress", args=["import", job.pk + 1000])).status_code == 404


@pytest.mark.parametrize("kind", KINDS)
def test_job_api_reports_last_heartbeat_and_retries_after_worker_loss(kind, coll, admin_api):
    job = CASES[kind].make(coll)
    assert_no_health(admin_api.get(CASES[kind].api(job)).json())
    beat = recovered(kind, job.pk)
    assert_health(admin_api.get(CASES[kind].api(job)).json(), beat)


@pytest.mark.parametrize("kind", LIST_KINDS)
def test_job_list_api_reads_every_jobs_health_in_one_query(kind, coll, admin_api):
    case = CASES[kind]
    job, other = case.make(coll), case.make(factories.collection(name="Other"))
    beat = recovered(kind, job.pk)
    with CaptureQueriesContext(connection) as ctx:
        rows = admin_api.get(case.list_api).json()
    assert sum("ecast_jobrecovery" in q["sql"] for q in ctx.captured_queries) == 1
    by_id = {row["id"]: row for row in rows}
    assert_health(by_id[job.pk], beat)
    assert_no_health(by_id[other.pk])


@pytest.mark.parametrize("kind", KINDS)
def test_job_page_shows_last_heartbeat_and_retries_and_follows_the_job(kind, coll, admin_client):
    job = CASES[kind].make(coll)
    recovered(kind, job.pk)
    html = admin_client.get(CASES[kind].page(job)).content.decode()
    assert f'data-job-progress="{progress_url(job)}"' in html and 'data-status="running"' in html
    assert "Last heartbeat:" in html and "s ago" in html
    assert "Retried after worker loss (1×)" in html
    assert LOST_DETAIL in html and "Re-queued (no worker had started it)" in html


@pytest.mark.parametrize("kind", KINDS)
def test_running_job_shows_its_heartbeat_before_any_loss(kind, coll, admin_client):
    html = admin_client.get(CASES[kind].page(CASES[kind].make(coll))).content.decode()
    assert "Last heartbeat:" in html and "none yet" in html
    assert "Retried after worker loss" not in html


@pytest.mark.parametrize("kind", KINDS)
def test_finished_job_shows_no_health_unless_it_was_recovered(kind, coll, admin_client):
    job = CASES[kind].make(coll)
    finish(job)
    assert "Last heartbeat" not in admin_client.get(CASES[kind].page(job)).content.decode()
    recovered(kind, job.pk)
    assert "Retried after worker loss (1×)" in admin_client.get(CASES[kind].page(job)).content.decode()


def test_health_is_read_under_each_jobs_own_kind(coll, admin_api):
    # Same id, two kinds of analysis: the meta-evaluation's retry is not the pivot analysis'.
    pivots = CASES["analysis-pivots"].make(coll)
    meta = MetaEvaluation.objects.create(pk=pivots.pk, collection=coll, name="m")
    beat = recovered("analysis-metaeval", meta.pk)
    assert_health(admin_api.get(f"/api/analyses/metaeval/{meta.pk}/").json(), beat)
    assert_no_health(admin_api.get(f"/api/analyses/pivots/{pivots.pk}/").json())


def test_jobs_health_reads_a_page_of_jobs_with_one_query_per_table_and_matches_reading_them_one_by_one(
    django_assert_num_queries,
):
    recovered("import", 7)
    jobs.heartbeat_beat("import", 8)
    with django_assert_num_queries(2):  # when each job was last queued, and the recoveries
        health = jobs.jobs_health("import", [7, 8, 9, 7])
    assert list(health) == [7, 8, 9]
    for job_id in (7, 8, 9):
        assert health[job_id] == jobs.job_health("import", job_id)
    assert health[7]["worker_loss_retries"] == 1 and len(health[7]["recoveries"]) == 2
    assert health[8]["last_heartbeat"] is not None and health[8]["recoveries"] == []
    assert health[9] == {"last_heartbeat": None, "worker_loss_retries": 0, "recoveries": []}


def test_jobs_health_keeps_kinds_apart():
    recovered("generation", 3)
    assert jobs.jobs_health("import", [3])[3]["recoveries"] == []
    assert jobs.jobs_health("generation", [3])[3]["worker_loss_retries"] == 1


def test_jobs_health_of_no_jobs_reads_nothing(django_assert_num_queries):
    with django_assert_num_queries(0):
        assert jobs.jobs_health("import", []) == {}


def test_job_health_data_is_the_api_shape_with_iso_datetimes():
    beat = recovered("pool", 4)
    assert_health(job_health_data("pool", 4), beat)
    assert_no_health(job_health_data("pool", 5))


def test_heartbeat_age_counts_seconds_while_recent_then_coarser_units():
    now = timezone.now()
    assert heartbeat_age(None) == ""
    assert heartbeat_age(now - timedelta(seconds=12)) == "12 s ago"
    assert heartbeat_age(now - timedelta(minutes=4)) == "4 min ago"
    assert heartbeat_age(now - timedelta(hours=3)) == "3 h ago"
    assert heartbeat_age(now - timedelta(days=2)) == "2 d ago"


def test_registering_a_model_under_another_kind_name_is_refused():
    with pytest.raises(ValueError, match="job_kind is 'import'"):
        jobs.register_kind(
            jobs.JobKind(name="imports", active=list, resume=str, fail=lambda i, r: None, model=ImportJob)
        )


def test_one_status_vocabulary_for_every_job_model():
    for kind in jobs.KINDS.values():
        if kind.model is not None:
            field = kind.model._meta.get_field("status")
            assert [value for value, _ in field.choices] == list(JobStatus.values), kind.name


def test_every_model_with_a_job_status_is_a_job():
    # A model whose rows run in the background (a "running" status) must use the one job base, or its page, its
    # progress URL and the sweeper would each need their own code again.
    from django.apps import apps

    for model in apps.get_models():
        names = {f.name for f in model._meta.get_fields()}
        if "status" not in names:
            continue
        field = model._meta.get_field("status")
        if "running" in {value for value, _ in (getattr(field, "choices", None) or [])}:
            assert issubclass(model, Job), model.__name__


REPO = Path(__file__).resolve().parents[3]
POLLER = REPO / "static" / "ecast" / "poll.js"


def page_sources() -> list[Path]:
    return sorted([*(REPO / "templates").rglob("*.html"), *(REPO / "static").rglob("*.js")])


def test_only_the_one_poller_repeats_requests_or_opens_event_streams():
    # Every page that follows work on the server goes through static/ecast/poll.js (back-off, hidden tabs, 4xx).
    offenders = [
        f"{path.relative_to(REPO)}: {pattern}"
        for path in page_sources()
        if path != POLLER
        for pattern in ("setInterval(", "new EventSource(", 'http-equiv="refresh"')
        if pattern in path.read_text()
    ]
    assert offenders == []


def test_every_page_that_shows_a_jobs_health_follows_it_with_the_poller():
    for path in (REPO / "templates").rglob("*.html"):
        text = path.read_text()
        if 'include "includes/job_health.html"' in text:
            assert "data-job-progress=" in text, path.relative_to(REPO)
    for path in page_sources():
        text = path.read_text()
        for old in ("progress.json", "/progress/", "ecastJobHealth", "/status/"):
            assert old not in text or path == POLLER, f"{path.relative_to(REPO)} polls {old} itself"
