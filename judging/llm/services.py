"""Writes for LLM pre-judgment jobs: create one (and its "llm: <model>" qrels version), label its pairs batch by
batch (each batch commits its labels and qrels at once, so a job resumes where a dead worker left it), finish or
fail it, and what the sweeper needs to re-queue a silent one."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.db import models, transaction
from django.utils import timezone

from ecast.core import openai_endpoint
from ecast.core.jobs import enqueue
from ecast.core.models import ACTIVE_STATUSES
from ecast.models import Collection, Passage, Turn
from ecast.pipeline import openai_compat
from evaluation import events
from evaluation.models import Qrel, QrelsVersion
from judging.llm import endpoint_judge, judge
from judging.models import LlmJudgeJob, LlmLabel

KIND = "llm_judge"  # the job kind the heartbeat and the sweeper know these jobs by
RUN_TASK = "judging.llm.run"
VERSION_PREFIX = "llm: "
# Bounds on what an admin may set: a batch the model can hold, prompts it can read.
PARAM_BOUNDS: dict[str, tuple[int, int]] = {
    "batch_size": (1, 256),
    "max_passage_tokens": (16, 4096),
    "max_history_turns": (0, 50),
}


def _judged_with_text(version: QrelsVersion) -> Any:
    return Qrel.objects.filter(version=version, passage_id__in=Passage.objects.exclude(text="").values("passage_id"))


def llm_pairs(*, version: QrelsVersion) -> list[tuple[int, str]]:
    """The (turn pk, passage id) pairs the version judged whose passage has text, in conversation order."""
    return list(
        _judged_with_text(version)
        .order_by("turn__conversation__topic_id", "turn__number", "passage_id")
        .values_list("turn_id", "passage_id")
    )


def params_clean(params: dict[str, Any] | None, *, bounds: dict[str, tuple[int, int]] = PARAM_BOUNDS) -> dict[str, Any]:
    """Integer parameters within their bounds (and an endpoint's base URL and served model as text); a
    ValidationError naming the first bad one."""
    out: dict[str, Any] = {}
    for name, value in (params or {}).items():
        if name in endpoint_judge.STRING_PARAMS:
            out[name] = str(value or "").strip()
            continue
        if name not in bounds:
            raise ValidationError(f"params: unknown parameter {name!r}; known: {', '.join(sorted(bounds))}")
        low, high = bounds[name]
        try:
            number = int(value)
        except (TypeError, ValueError) as exc:
            raise ValidationError(f"params.{name}: {value!r} is not an integer") from exc
        if not low <= number <= high:
            raise ValidationError(f"params.{name}: {number} is outside {low}..{high}")
        out[name] = number
    return out


def free_name(model: type[models.Model], *, collection: Collection, base: str) -> str:
    """``base``, numbered " #2", " #3" … when the collection already has a version, bank or set of that name."""
    base = base[:90]
    taken = set(model.objects.filter(collection=collection, name__startswith=base).values_list("name", flat=True))  # type: ignore[attr-defined]
    if base not in taken:
        return base
    n = 2
    while f"{base} #{n}" in taken:
        n += 1
    return f"{base} #{n}"


def llm_version_name(*, collection: Collection, model_id: str) -> str:
    """ "llm: <model>", numbered when the collection already has one of that name."""
    return free_name(QrelsVersion, collection=collection, base=f"{VERSION_PREFIX}{model_id}")


def is_llm_version(version: QrelsVersion) -> bool:
    """Whether an LLM job writes the version (it must never be the "human" side of another job)."""
    return LlmJudgeJob.objects.filter(target_version=version).exists()


@transaction.atomic
def llm_judge_job_create(
    *,
    collection: Collection,
    source_version: QrelsVersion,
    model: str = judge.DEFAULT_MODEL,
    revision: str = "",
    params: dict[str, Any] | None = None,
    limit: int | None = None,
    created_by: Any = None,
    queue: bool = True,
    api_key: str = "",
) -> LlmJudgeJob:
    """Create the job and its empty "llm: <model>" version (parent: the human version), and queue it (``queue``
    False: the caller runs it, as ``manage.py llm_judge`` does).

    ``model`` "openai": an OpenAI-compatible endpoint judges; ``params`` may name its ``base_url`` and
    ``served_model`` (else the settings'), ``api_key`` the key for this job only (never shown back)."""
    if source_version.collection_id != collection.pk:
        raise ValidationError(f"source_version: {source_version.name!r} belongs to another collection")
    if is_llm_version(source_version):
        raise ValidationError(f"source_version: {source_version.name!r} holds LLM labels; pick a human version")
    spec = judge.ModelSpec(
        model=(model or judge.DEFAULT_MODEL).strip(), revision=revision.strip(), params=params_clean(params)
    )
    if spec.model == endpoint_judge.BACKEND:
        spec, provenance = _endpoint_spec(spec)
    else:
        try:
            provenance = spec.provenance()
        except judge.JudgeError as exc:
            raise ValidationError(f"model: {exc}") from exc
    if limit is not None and limit < 1:
        raise ValidationError("limit: at least 1 pair")
    pairs = _judged_with_text(source_version).count()  # the request counts; the worker reads the pairs
    if not pairs:
        raise ValidationError(
            f"source_version: no pair judged in {source_version.name!r} has passage text; import the passage texts "
            "(corpus import, TSV or JSONL) first"
        )
    target = QrelsVersion(
        collection=collection,
        name=llm_version_name(collection=collection, model_id=str(provenance["model"])),
        parent=source_version,
        description=(
            f"LLM pre-judgments of {source_version.name!r}'s judged pairs with text by {provenance['model']} "
            f"({provenance['revision']}); holds only the model's labels, never the human ones."
        ),
        created_by=created_by,
    )
    target.full_clean()
    target.save()
    job = LlmJudgeJob(
        collection=collection,
        source_version=source_version,
        target_version=target,
        model=spec.model,
        model_id=str(provenance["model"]) if spec.model == endpoint_judge.BACKEND else spec.model_id(),
        revision=str(provenance["revision"]),
        params=spec.merged_params(),
        provenance=provenance,
        limit=limit,
        progress_total=min(pairs, limit) if limit else pairs,
        created_by=created_by,
        api_key=api_key.strip(),
    )
    job.full_clean()
    job.save()
    if queue:
        transaction.on_commit(lambda: enqueue(RUN_TASK, job.pk))
    return job


def endpoint_params(params: dict[str, Any]) -> dict[str, Any]:
    """An endpoint job's parameters with the settings' base URL and served model where it names none; a
    ValidationError on the model field when neither names a usable one (relevance and response LLM jobs)."""
    stored = openai_endpoint.with_defaults({"base_url": params.get("base_url"), "model": params.get("served_model")})
    try:
        openai_endpoint.check(stored)
    except openai_compat.EndpointError as exc:
        raise ValidationError(f"model: {exc}") from exc
    return {**params, "base_url": stored["base_url"], "served_model": stored["model"]}


def job_endpoint(params: dict[str, Any], api_key: str) -> openai_compat.Endpoint:
    """The endpoint an LLM job calls: its stored base URL and served model, its key (else the settings')."""
    return openai_endpoint.endpoint(
        base_url=str(params.get("base_url") or ""), model=str(params.get("served_model") or ""), api_key=api_key
    )


def _endpoint_spec(spec: judge.ModelSpec) -> tuple[judge.ModelSpec, dict[str, Any]]:
    """An endpoint job's spec with the settings' base URL and model filled in, and its provenance."""
    spec = judge.ModelSpec(model=spec.model, revision=spec.revision, params=endpoint_params(spec.params))
    return spec, endpoint_judge.provenance(spec.merged_params())


def _labeller(job: LlmJudgeJob) -> Any:
    """The local model's Judge, or an EndpointJudge for an "openai" job (a JudgeError when neither can run)."""
    spec = judge.ModelSpec(model=job.model, revision=job.revision, params=job.params)
    if job.model != endpoint_judge.BACKEND:
        return judge.Judge(spec)
    point = job_endpoint(spec.merged_params(), job.api_key)
    return endpoint_judge.EndpointJudge(spec.merged_params(), point, cache=openai_endpoint.DjangoReplyCache())


def pending_pairs(*, job: LlmJudgeJob) -> list[tuple[int, str]]:
    """The job's pairs that have no label yet, in order (after a worker died: where it stopped)."""
    pairs = llm_pairs(version=job.source_version)
    if job.limit:
        pairs = pairs[: job.limit]
    done = set(LlmLabel.objects.filter(job=job).values_list("turn_id", "passage_id"))
    return [p for p in pairs if p not in done]


def judge_inputs(pairs: Sequence[tuple[int, str]]) -> list[judge.Pair]:
    """The texts the prompt shows for each pair: the turn, its rewrite, the earlier turns, the passage."""
    turn_pks = {t for t, _ in pairs}
    turns = {t.pk: t for t in Turn.objects.filter(pk__in=turn_pks)}
    conv_ids = {t.conversation_id for t in turns.values()}
    history: dict[int, list[tuple[int, str]]] = defaultdict(list)
    for conv, number, text in Turn.objects.filter(conversation_id__in=conv_ids).values_list(
        "conversation_id", "number", "raw_utterance"
    ):
        history[conv].append((number, text))
    texts = dict(Passage.objects.filter(passage_id__in={p for _, p in pairs}).values_list("passage_id", "text"))
    out = []
    for turn_pk, pid in pairs:
        turn = turns[turn_pk]
        earlier = tuple(text for n, text in sorted(history[turn.conversation_id]) if n < turn.number)
        out.append(
            judge.Pair(
                turn_id=str(turn_pk),
                passage_id=pid,
                utterance=turn.raw_utterance,
                passage=texts[pid],
                rewrite=turn.manual_rewrite,
                history=earlier,
            )
        )
    return out


@transaction.atomic
def llm_labels_write(*, job_id: int, labels: Sequence[judge.Label], seconds: float) -> int:
    """Store one batch's labels and their qrels rows, and the job's progress, in one transaction."""
    job = LlmJudgeJob.objects.select_for_update().get(pk=job_id)
    rows = [
        LlmLabel(
            job=job,
            turn_id=int(label.turn_id),
            passage_id=label.passage_id,
            grade=label.grade,
            probabilities=label.probabilities,
            digit_mass=label.digit_mass,
            prompt=label.prompt,
            provenance=job.provenance,
        )
        for label in labels
    ]
    # A redelivered batch (its first worker died after committing) adds nothing twice.
    LlmLabel.objects.bulk_create(rows, ignore_conflicts=True)
    if job.target_version_id is not None:
        Qrel.objects.bulk_create(
            [
                Qrel(
                    version_id=job.target_version_id,
                    turn_id=r.turn_id,
                    passage_id=r.passage_id,
                    grade=r.grade,
                    source=Qrel.Source.LLM,
                )
                for r in rows
            ],
            ignore_conflicts=True,
        )
        QrelsVersion.objects.filter(pk=job.target_version_id).update(updated_at=timezone.now())
        events.qrels_changed(version_id=job.target_version_id, turn_ids=[r.turn_id for r in rows])
    job.progress_done = LlmLabel.objects.filter(job=job).count()
    job.seconds += seconds
    job.save(update_fields=["progress_done", "seconds"])
    return len(rows)


@transaction.atomic
def llm_judge_start(*, job_id: int) -> LlmJudgeJob | None:
    """Mark the job running (None when it has already ended)."""
    job = LlmJudgeJob.objects.select_for_update().get(pk=job_id)
    if job.status in (LlmJudgeJob.Status.SUCCEEDED, LlmJudgeJob.Status.FAILED):
        return None
    job.status = LlmJudgeJob.Status.RUNNING
    job.started_at = job.started_at or timezone.now()
    job.save(update_fields=["status", "started_at"])
    return job


def llm_judge_run(*, job_id: int) -> int:
    """Label the job's pending pairs batch by batch (each batch committed on its own); returns pairs labelled."""
    job = llm_judge_start(job_id=job_id)
    if job is None:
        return 0
    try:
        model = _labeller(job)
    except judge.JudgeError as exc:
        llm_judge_fail(job_id=job_id, reason=str(exc))
        return 0
    pending = pending_pairs(job=job)
    size = int(model.params["batch_size"])
    labelled = 0
    for start in range(0, len(pending), size):
        inputs = judge_inputs(pending[start : start + size])
        began = time.perf_counter()
        try:
            labels = model.label(inputs)
        except openai_compat.EndpointError as exc:
            # The endpoint failed every attempt: the batches committed so far stay, this one writes nothing.
            llm_judge_fail(job_id=job_id, reason=str(exc))
            return labelled
        labelled += llm_labels_write(job_id=job_id, labels=labels, seconds=time.perf_counter() - began)
    llm_judge_finish(job_id=job_id)
    return labelled


@transaction.atomic
def llm_judge_finish(*, job_id: int) -> None:
    job = LlmJudgeJob.objects.select_for_update().get(pk=job_id)
    job.status = LlmJudgeJob.Status.SUCCEEDED
    job.finished_at = timezone.now()
    job.api_key = ""  # an endpoint key is kept only while the job may use it
    job.save(update_fields=["status", "finished_at", "api_key"])


@transaction.atomic
def llm_judge_fail(*, job_id: int, reason: str) -> None:
    """End the job with ``reason`` shown on its page (the labels stored so far stay)."""
    job = LlmJudgeJob.objects.select_for_update().get(pk=job_id)
    job.status = LlmJudgeJob.Status.FAILED
    job.error = reason[:4000]
    job.finished_at = timezone.now()
    job.api_key = ""  # an endpoint key is kept only while the job may use it
    job.save(update_fields=["status", "error", "finished_at", "api_key"])


def llm_jobs_active() -> list[tuple[int, datetime]]:
    """Jobs the sweeper watches: queued or running."""
    return list(LlmJudgeJob.objects.filter(status__in=ACTIVE_STATUSES).values_list("pk", "created_at"))


def llm_judge_requeue(*, job_id: int) -> str:
    """Queue the job again; it labels only the pairs that have no label yet."""
    job = LlmJudgeJob.objects.get(pk=job_id)
    enqueue(RUN_TASK, job_id)
    return f"queued again from pair {job.progress_done + 1} of {job.progress_total}"
