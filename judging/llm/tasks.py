"""Celery wrapper for LLM pre-judgment jobs: takes an id, calls one service."""

from __future__ import annotations

from celery import shared_task

from ecast.core import jobs
from judging.llm import response_services, selectors, services
from judging.models import LlmJudgeJob, ResponseLlmJob


@shared_task(name=services.RUN_TASK)
def llm_judge_run_task(job_id: int) -> int:
    """Label the job's unlabelled pairs (one worker at a time; a redelivered copy resumes after the last batch)."""
    try:
        return jobs.job_unit(services.KIND, job_id, lambda: services.llm_judge_run(job_id=job_id), claim=True) or 0
    except Exception as exc:  # noqa: BLE001 - any failure is shown on the job page instead of lost in a log
        services.llm_judge_fail(job_id=job_id, reason=f"{type(exc).__name__}: {exc}")
        raise


jobs.register_kind(
    jobs.JobKind(
        name=services.KIND,
        active=services.llm_jobs_active,
        resume=lambda job_id: services.llm_judge_requeue(job_id=job_id),
        fail=lambda job_id, reason: services.llm_judge_fail(job_id=job_id, reason=reason),
        model=LlmJudgeJob,
        detail=lambda job: selectors.llm_job_progress(job=job),
    )
)


@shared_task(name=response_services.RUN_TASK)
def response_llm_run_task(job_id: int) -> int:
    """Do the response job's pending items (one worker at a time; a redelivered copy resumes after the last batch)."""
    try:
        return (
            jobs.job_unit(
                response_services.KIND, job_id, lambda: response_services.response_job_run(job_id=job_id), claim=True
            )
            or 0
        )
    except Exception as exc:  # noqa: BLE001 - any failure is shown on the job page instead of lost in a log
        response_services.response_job_fail(job_id=job_id, reason=f"{type(exc).__name__}: {exc}")
        raise


jobs.register_kind(
    jobs.JobKind(
        name=response_services.KIND,
        active=response_services.response_jobs_active,
        resume=lambda job_id: response_services.response_job_requeue(job_id=job_id),
        fail=lambda job_id, reason: response_services.response_job_fail(job_id=job_id, reason=reason),
        model=ResponseLlmJob,
        detail=lambda job: selectors.llm_job_progress(job=job),
    )
)
