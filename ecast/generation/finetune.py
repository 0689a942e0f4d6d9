"""Fine-tune jobs: the chat model learns from a collection's approved pairs as a LoRA adapter, which then appears
as a generation backend ("SmolLM2 + <collection> adapter").

A job trains in one worker at a time (claimed) and writes nothing until the adapter is complete: a worker that dies
mid-training leaves no half adapter, and the redelivered job trains again from the start. Cancel is read between
two optimiser steps.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from ecast.core.jobs import enqueue
from ecast.core.models import ACTIVE_STATUSES
from ecast.models import Adapter, Collection, FinetuneJob, Paraphrase
from ecast.pipeline import lora

KIND = FinetuneJob.job_kind
RUN_TASK = "ecast.generation.finetune"
MIN_PAIRS = 4
PROGRESS_EVERY_S = 2.0  # progress rows written at most this often (each step is well under a second on a GPU)


def training_examples(*, collection: Collection, stage: str, exclude_topics: list[str] | None = None) -> list[Any]:
    """The collection's approved pairs as training examples, in conversation order, grouped by conversation.

    paraphrase: the turn's manual rewrite m_i → an approved current manual paraphrase p^m;
    cr: an approved p^m → the approved raw paraphrase p^r paired with it (turns at depth ≥ 2 only, since a first
    turn's p^r is p^m)."""
    excluded = set(exclude_topics or [])
    approved = Paraphrase.objects.filter(
        turn__collection=collection, is_current=True, status=Paraphrase.Status.APPROVED
    ).exclude(turn__conversation__topic_id__in=excluded)
    out: list[lora.Example] = []
    if stage == "paraphrase":
        rows = approved.filter(kind=Paraphrase.Kind.MANUAL).exclude(turn__manual_rewrite="")
        for source, target, topic, pk in rows.order_by(
            "turn__conversation__topic_id", "turn__number", "id"
        ).values_list("turn__manual_rewrite", "text", "turn__conversation__topic_id", "pk"):
            out.append(lora.Example(source=source, target=target, group=topic, ref=pk))
    else:
        raw = dict(approved.filter(kind=Paraphrase.Kind.RAW, turn__number__gte=2).values_list("pair_id", "text"))
        rows = approved.filter(kind=Paraphrase.Kind.MANUAL, pk__in=[k for k in raw if k is not None])
        for pk, source, topic in rows.order_by("turn__conversation__topic_id", "turn__number", "id").values_list(
            "pk", "text", "turn__conversation__topic_id"
        ):
            out.append(lora.Example(source=source, target=raw[pk], group=topic, ref=pk))
    return [e for e in out if e.source.strip() and e.target.strip() and e.source.strip() != e.target.strip()]


@transaction.atomic
def finetune_job_create(
    *,
    collection: Collection,
    stage: str = FinetuneJob.Stage.PARAPHRASE,
    base_model: str = "smollm",
    params: dict[str, Any] | None = None,
    exclude_topics: list[str] | None = None,
    created_by: Any = None,
    queue: bool = True,
) -> FinetuneJob:
    """Check there is enough to learn from, then create and queue the job (a ValidationError says what is missing)."""
    if stage not in lora.STAGES:
        raise ValidationError(f"stage: choose one of {', '.join(lora.STAGES)}")
    try:
        clean = lora.TrainParams.from_dict(params)
    except lora.AdapterError as exc:
        raise ValidationError(str(exc)) from exc
    examples = training_examples(collection=collection, stage=stage, exclude_topics=exclude_topics)
    groups = {e.group for e in examples}
    if len(examples) < MIN_PAIRS or len(groups) < 2:
        raise ValidationError(
            f"{collection.name} has {len(examples)} approved pair(s) for this stage in {len(groups)} conversation(s); "
            f"fine-tuning needs at least {MIN_PAIRS} pairs from 2 conversations. Approve paraphrases on the curation "
            "page (or import an ECAsT release) first."
        )
    job = FinetuneJob(
        collection=collection,
        stage=stage,
        base_model=(base_model or "smollm").strip(),
        params=clean.as_dict(),
        exclude_topics=sorted(set(exclude_topics or [])),
        created_by=created_by,
        message=f"{len(examples)} approved pairs from {len(groups)} conversations",
    )
    job.full_clean()
    job.save()
    if queue:
        transaction.on_commit(lambda: enqueue(RUN_TASK, job.pk))
    return job


def _start(job_id: int) -> FinetuneJob | None:
    with transaction.atomic():
        job = FinetuneJob.objects.select_for_update().get(pk=job_id)
        if job.status not in ACTIVE_STATUSES or job.cancel_requested:
            return None
        job.status = FinetuneJob.Status.RUNNING
        job.started_at = timezone.now()
        job.progress_done = 0
        job.message = "loading the base model"
        job.save(update_fields=["status", "started_at", "progress_done", "message"])
        return job


def finetune_run(*, job_id: int) -> int | None:
    """Train the job's adapter and store it (returns the adapter id; None when cancelled or already ended)."""
    job = _start(job_id)
    if job is None:
        return None
    params = lora.TrainParams.from_dict(job.params)
    examples = training_examples(collection=job.collection, stage=job.stage, exclude_topics=job.exclude_topics)
    last = [0.0, 0]  # when the last progress row was written, and at which step

    def progress(done: int, total: int, message: str) -> None:
        now = time.monotonic()
        # Every PROGRESS_EVERY_S, or every 1 % of the steps when they are fast (a small job on idle cores would
        # otherwise jump from 0 to done, and a bar that never moves reads as stuck).
        moved = done - int(last[1]) >= max(1, total // 100)
        if now - last[0] < PROGRESS_EVERY_S and not moved and 0 < done < total:
            return
        last[0], last[1] = now, done
        # Only while running: a job cancelled meanwhile keeps the step it was cancelled at.
        FinetuneJob.objects.filter(pk=job_id, status=FinetuneJob.Status.RUNNING).update(
            progress_done=done, progress_total=total, message=message[:300]
        )

    def cancelled() -> bool:
        return FinetuneJob.objects.filter(pk=job_id, cancel_requested=True).exists()

    try:
        base = lora.base_model(job.base_model)
        trained = lora.train(base, job.stage, examples, params, progress=progress, cancelled=cancelled)
    except lora.Cancelled:
        return None
    except (lora.AdapterError, OSError, RuntimeError) as exc:
        finetune_fail(job_id=job_id, reason=f"{type(exc).__name__}: {exc}")
        return None
    try:
        return finetune_finish(job_id=job_id, trained=trained, examples=examples).pk
    except lora.Cancelled:
        return None


@transaction.atomic
def finetune_finish(*, job_id: int, trained: lora.Trained, examples: list[Any]) -> Adapter:
    """Store the adapter and end the job, in one transaction (a cancelled job stores nothing)."""
    job = FinetuneJob.objects.select_for_update().get(pk=job_id)
    if job.status not in ACTIVE_STATUSES:
        raise lora.Cancelled("the job was cancelled")  # cancelled while the last epoch ran: nothing is stored
    held = set(trained.metrics.get("heldout_conversations", []))
    adapter = Adapter(
        collection=job.collection,
        job=job,
        stage=job.stage,
        base_model=job.base_model,
        weights=trained.weights,
        sha256=trained.sha256,
        config=trained.config,
        metrics=trained.metrics,
        training={
            "pairs": len(examples),
            "conversations": sorted({e.group for e in examples}),
            "heldout_conversations": sorted(held),
            "excluded_topics": job.exclude_topics,
            "paraphrase_ids": [e.ref for e in examples],
            "params": job.params,
        },
    )
    adapter.full_clean()
    adapter.save()
    job.status = FinetuneJob.Status.SUCCEEDED
    job.metrics = trained.metrics
    job.progress_done = job.progress_total
    losses = trained.metrics.get("heldout_loss") or [float("nan")]
    job.message = f"adapter #{adapter.pk}: held-out loss {losses[0]:.4f} → {losses[-1]:.4f}"
    job.finished_at = timezone.now()
    job.save(update_fields=["status", "metrics", "progress_done", "message", "finished_at"])
    return adapter


@transaction.atomic
def finetune_cancel(*, job: FinetuneJob) -> FinetuneJob:
    """Stop a job: the worker sees it before its next optimiser step and stores nothing."""
    job = FinetuneJob.objects.select_for_update().get(pk=job.pk)
    if job.status not in ACTIVE_STATUSES:
        raise ValidationError("the job has already finished")
    job.cancel_requested = True
    job.status = FinetuneJob.Status.CANCELLED
    job.finished_at = timezone.now()
    job.save(update_fields=["cancel_requested", "status", "finished_at"])
    return job


@transaction.atomic
def finetune_fail(*, job_id: int, reason: str) -> None:
    job = FinetuneJob.objects.select_for_update().get(pk=job_id)
    if job.status not in ACTIVE_STATUSES:
        return
    job.status = FinetuneJob.Status.FAILED
    job.error = reason[:4000]
    job.finished_at = timezone.now()
    job.save(update_fields=["status", "error", "finished_at"])


def finetune_jobs_active() -> list[tuple[int, datetime]]:
    return list(FinetuneJob.objects.filter(status__in=ACTIVE_STATUSES).values_list("pk", "created_at"))


def finetune_requeue(*, job_id: int) -> str:
    """Queue the job again: it trains from the start (nothing of a dead worker's training was stored)."""
    enqueue(RUN_TASK, job_id)
    return "queued again; training starts over"


def adapter_stored(adapter_id: int) -> lora.StoredAdapter:
    """An adapter as the generation backend loads it (registered as ``lora``'s source at start-up)."""
    row = Adapter.objects.select_related("collection").filter(pk=adapter_id).first()
    if row is None:
        raise lora.AdapterError(f"params.adapter: no adapter #{adapter_id}")
    return lora.StoredAdapter(
        adapter_id=row.pk,
        base_model=row.base_model,
        weights=bytes(row.weights),
        config=row.config,
        sha256=row.sha256,
        label=row.label,
    )


def finetune_progress(*, job: FinetuneJob) -> dict[str, Any]:
    """What the job page shows beside the progress bar: losses so far and the adapter once trained."""
    adapter = Adapter.objects.filter(job=job).values_list("pk", flat=True).first()
    return {"stage": job.stage, "metrics": job.metrics, "adapter": adapter}
