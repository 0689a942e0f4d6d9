"""Writes for response-LLM jobs (nugget creation, nugget assignment, citation support, the built-in baseline): create
one with the set it writes into, run it batch by batch (each batch commits its rows and the job's progress at once, so
a job resumes where a dead worker left it and a batch that fails writes nothing), cancel, finish or fail it, and what
the sweeper needs to re-queue a silent one. The job contract is :class:`judging.llm.services`' (LlmJudgeJob) one."""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from ecast.core import openai_endpoint
from ecast.core.errors import DomainError
from ecast.core.jobs import enqueue
from ecast.core.models import ACTIVE_STATUSES
from ecast.models import Collection
from ecast.pipeline import openai_compat
from evaluation.models import (
    CitationLabel,
    LabelCondition,
    Nugget,
    NuggetAssignment,
    NuggetBank,
    QrelsVersion,
    Response,
    ResponseRun,
    ResponseSentence,
)
from evaluation.permutations import retrieval
from evaluation.responses import baseline
from evaluation.responses.services import label_set_touch, nugget_bank_touch
from judging.llm import endpoint_judge, judge
from judging.llm import response_items as items_
from judging.llm import response_labellers as rl
from judging.llm import response_setup as setup
from judging.llm import services as llm_services
from judging.models import ResponseLlmJob

KIND = ResponseLlmJob.job_kind
RUN_TASK = "judging.llm.response_run"
Task = ResponseLlmJob.Task


@transaction.atomic
def response_job_create(
    *,
    task: str,
    collection: Collection,
    model: str = "",
    revision: str = "",
    params: dict[str, Any] | None = None,
    qrels_version: QrelsVersion | None = None,
    threshold: int | None = None,
    bank: NuggetBank | None = None,
    runs: list[ResponseRun] | None = None,
    run_name: str = "",
    limit: int | None = None,
    turns: list[str] | None = None,
    created_by: Any = None,
    api_key: str = "",
    queue: bool = True,
) -> ResponseLlmJob:
    """Create a job and the (empty) bank, label set or run it writes into, and queue it.

    ``model``: 'smollm' (the default), a local model folder or .gguf, or 'openai'; for the baseline also
    'extractive' (its default: no model)."""
    if task not in Task.values:
        raise ValidationError(f"task: one of {', '.join(Task.values)}")
    clean = llm_services.params_clean(params, bounds=setup.PARAM_BOUNDS)
    job = ResponseLlmJob(
        task=task,
        collection=collection,
        limit=limit,
        turns=setup.turns_resolve(collection=collection, wanted=turns or []),
        created_by=created_by,
        api_key=api_key.strip(),
    )
    if limit is not None and limit < 1:
        raise ValidationError("limit: at least 1 item")
    if task == Task.BASELINE:
        model = (model or baseline.BACKEND).strip()
        setup.baseline_setup(job, clean, model=model, revision=revision, run_name=run_name, user=created_by)
    else:
        model = (model or judge.DEFAULT_MODEL).strip()
        if model == baseline.BACKEND:
            raise ValidationError("model: 'extractive' makes baseline answers only; choose a model to label with")
        job.model, job.revision = model, revision.strip()
        job.model_id, job.provenance = setup.model_provenance(task, model, job.revision, clean)
        job.params = {**rl.DEFAULT_PARAMS, **clean}
        if task == Task.CREATE_NUGGETS:
            setup.create_setup(job, qrels_version, threshold, created_by)
        else:
            setup.label_setup(job, bank, runs or [], created_by)
    job.full_clean()
    job.save()
    if runs and task in (Task.ASSIGN_NUGGETS, Task.CITATION_SUPPORT):
        job.runs.set(runs)
    job.progress_total = len(items_.all_items(job))
    if not job.progress_total:
        raise ValidationError(setup.nothing_to_do(job))
    job.save(update_fields=["progress_total"])
    if queue:
        transaction.on_commit(lambda: enqueue(RUN_TASK, job.pk))
    return job


# --- running ---------------------------------------------------------------------------------------------------


@transaction.atomic
def response_job_start(*, job_id: int) -> ResponseLlmJob | None:
    """Mark the job running (None when it has ended: succeeded, failed or cancelled)."""
    job = ResponseLlmJob.objects.select_for_update().get(pk=job_id)
    if not job.is_active:
        return None
    job.status = ResponseLlmJob.Status.RUNNING
    job.started_at = job.started_at or timezone.now()
    job.save(update_fields=["status", "started_at"])
    return job


def labeller(job: ResponseLlmJob) -> Any:
    """The local model's labeller, or the endpoint's (a JudgeError when neither can run)."""
    if job.model != endpoint_judge.BACKEND:
        return rl.LocalLabeller(judge.ModelSpec(model=job.model, revision=job.revision), job.params)
    point = llm_services.job_endpoint(job.params, job.api_key)
    return rl.EndpointLabeller(job.params, point, cache=openai_endpoint.DjangoReplyCache())


def response_job_run(*, job_id: int) -> int:
    """Do the job's pending items batch by batch (each batch committed on its own); returns the items done."""
    job = response_job_start(job_id=job_id)
    if job is None:
        return 0
    try:
        if job.task == Task.BASELINE:
            # The corpus index, and the model that writes the answers (None: extractive).
            worker: Any = (_baseline_index(job), None if job.model == baseline.BACKEND else labeller(job))
        else:
            worker = labeller(job)
    except (judge.JudgeError, retrieval.RetrievalError) as exc:
        response_job_fail(job_id=job_id, reason=str(exc))
        return 0
    pending = items_.pending_items(job)
    size = max(1, int(job.params.get("batch_size", 8)))
    if job.task == Task.CREATE_NUGGETS:
        size = 1  # a turn drafts several nuggets: one turn a batch keeps progress moving
    done = 0
    for start in range(0, len(pending), size):
        batch = pending[start : start + size]
        began = time.perf_counter()
        try:
            if job.task == Task.BASELINE:
                index, writer = worker
                rows = items_.baseline_batch(job, index, writer, batch)
            else:
                rows = items_.label_batch(job, worker, batch)
        except (openai_compat.EndpointError, rl.MalformedReply) as exc:
            # Failed every attempt: the batches committed so far stay, this one writes nothing.
            response_job_fail(job_id=job_id, reason=str(exc))
            return done
        written = response_rows_write(job_id=job_id, keys=batch, rows=rows, seconds=time.perf_counter() - began)
        if written is None:
            return done  # cancelled meanwhile
        done += written
    response_job_finish(job_id=job_id)
    return done


def _baseline_index(job: ResponseLlmJob) -> retrieval.Bm25Index:
    from evaluation.robustness.services import corpus_with_text

    ids, texts = corpus_with_text(collection=job.collection)
    return retrieval.index_for_corpus(Path(settings.ECAST_CACHE_DIR), ids, texts)


@transaction.atomic
def response_rows_write(*, job_id: int, keys: list[Any], rows: list[dict[str, Any]], seconds: float) -> int | None:
    """Store one batch's rows and the job's progress in one transaction; None (nothing written) once the job was
    cancelled."""
    job = ResponseLlmJob.objects.select_for_update().get(pk=job_id)
    if job.status == ResponseLlmJob.Status.CANCELLED:
        return None
    # The bank, label set or run the job writes into: deleted meanwhile, the job cannot go on.
    target = {
        Task.CREATE_NUGGETS: job.bank_id,
        Task.ASSIGN_NUGGETS: job.label_set_id,
        Task.CITATION_SUPPORT: job.label_set_id,
        Task.BASELINE: job.run_id,
    }[Task(job.task)]
    if target is None:
        raise DomainError("what this job writes into (its bank, label set or run) was deleted", code="conflict")
    label_set_id = target
    if job.task == Task.CREATE_NUGGETS:
        _nuggets_write(job, target, rows)
        job.done = [*job.done, *keys]
    elif job.task == Task.ASSIGN_NUGGETS:
        NuggetAssignment.objects.bulk_create(
            [
                NuggetAssignment(
                    label_set_id=label_set_id,
                    response_id=r["response_id"],
                    nugget_id=r["nugget_id"],
                    label=r["labelled"].label,
                    condition=LabelCondition.NONE,
                    prompt=r["labelled"].prompt,
                    provenance=_label_provenance(job, r["labelled"]),
                )
                for r in rows
            ],
            ignore_conflicts=True,  # a redelivered batch adds nothing twice
        )
    elif job.task == Task.CITATION_SUPPORT:
        CitationLabel.objects.bulk_create(
            [
                CitationLabel(
                    label_set_id=label_set_id,
                    sentence_id=r["sentence_id"],
                    passage_id=r["passage_id"],
                    support=r["labelled"].label,
                    condition=LabelCondition.NONE,
                    prompt=r["labelled"].prompt,
                    provenance=_label_provenance(job, r["labelled"]),
                )
                for r in rows
            ],
            ignore_conflicts=True,
        )
    else:
        _answers_write(job, rows)
    if job.label_set_id:
        label_set_touch(label_set=job.label_set_id)
    # Counted from what is stored, so a redelivered batch (its rows already there) does not count twice.
    job.progress_done = min(job.progress_total, len(items_.done_items(job)))
    job.seconds += seconds
    job.save(update_fields=["progress_done", "seconds", "done"])
    return len(keys)


def _label_provenance(job: ResponseLlmJob, labelled: rl.Labelled) -> dict[str, Any]:
    extra: dict[str, Any] = {"probabilities": labelled.probabilities, "digit_mass": labelled.mass}
    if labelled.reply:
        extra["reply"] = labelled.reply[:1000]
    return {**job.provenance, **extra}


def _nuggets_write(job: ResponseLlmJob, bank_id: int, rows: list[dict[str, Any]]) -> None:
    out = []
    for r in rows:
        drafted: rl.Drafted = r["drafted"]
        for i, nugget in enumerate(drafted.nuggets):
            extra: dict[str, Any] = {"prompt": drafted.prompts[i]}
            if drafted.probabilities:
                extra["importance_probabilities"] = drafted.probabilities[i]
            out.append(
                Nugget(
                    bank_id=bank_id,
                    turn_id=r["turn_id"],
                    position=i,
                    text=nugget.text,
                    importance=nugget.importance,
                    origin=Nugget.Origin.AUTO,
                    source_passages=r["passages"],
                    provenance={**job.provenance, **extra},
                )
            )
    Nugget.objects.bulk_create(out)
    nugget_bank_touch(bank=bank_id)


def _answers_write(job: ResponseLlmJob, rows: list[dict[str, Any]]) -> None:
    for r in rows:
        answer: baseline.Answer = r["answer"]
        response, created = Response.objects.get_or_create(
            run_id=job.run_id,
            turn_id=r["turn_id"],
            defaults={"text": answer.text, "references": answer.references, "metadata": r["metadata"]},
        )
        if created:
            ResponseSentence.objects.bulk_create(
                [
                    ResponseSentence(response=response, index=i, text=s.text, citations=list(s.citations))
                    for i, s in enumerate(answer.sentences)
                ]
            )


@transaction.atomic
def response_job_finish(*, job_id: int) -> None:
    job = ResponseLlmJob.objects.select_for_update().get(pk=job_id)
    if job.status == ResponseLlmJob.Status.CANCELLED:
        return
    job.status = ResponseLlmJob.Status.SUCCEEDED
    job.finished_at = timezone.now()
    job.api_key = ""  # an endpoint key is kept only while the job may use it
    job.save(update_fields=["status", "finished_at", "api_key"])


@transaction.atomic
def response_job_fail(*, job_id: int, reason: str) -> None:
    """End the job with ``reason`` shown on its page (the batches stored so far stay)."""
    job = ResponseLlmJob.objects.select_for_update().get(pk=job_id)
    if job.status == ResponseLlmJob.Status.CANCELLED:
        return
    job.status = ResponseLlmJob.Status.FAILED
    job.error = reason[:4000]
    job.finished_at = timezone.now()
    job.api_key = ""  # an endpoint key is kept only while the job may use it
    job.save(update_fields=["status", "error", "finished_at", "api_key"])


@transaction.atomic
def response_job_cancel(*, job_id: int) -> bool:
    """Stop a queued or running job after its current batch (which then writes nothing); False when it had ended."""
    job = ResponseLlmJob.objects.select_for_update().get(pk=job_id)
    if not job.is_active:
        return False
    job.status = ResponseLlmJob.Status.CANCELLED
    job.finished_at = timezone.now()
    job.api_key = ""  # an endpoint key is kept only while the job may use it
    job.save(update_fields=["status", "finished_at", "api_key"])
    return True


def response_jobs_active() -> list[tuple[int, datetime]]:
    return list(ResponseLlmJob.objects.filter(status__in=ACTIVE_STATUSES).values_list("pk", "created_at"))


def response_job_requeue(*, job_id: int) -> str:
    job = ResponseLlmJob.objects.get(pk=job_id)
    enqueue(RUN_TASK, job_id)
    return f"queued again from item {job.progress_done + 1} of {job.progress_total}"
