"""Running a generation job's turns: a chunk a few turns at a time (sampled in one batch when the backend allows),
each turn computed outside any transaction and committed in its own, under a row lock, so a redelivered or resumed
chunk skips the turns already done; then the job's progress and, once no turn is pending, its final status."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from django.db import transaction
from django.utils import timezone

from ecast.generation import config as job_config
from ecast.generation import selectors
from ecast.models import GenerationJob, GenerationTurn, Paraphrase, Turn
from ecast.pipeline import backends
from ecast.pipeline.run import TurnInput, provenance_base, run_turn, run_turns
from ecast.pipeline.similarity import cosine
from ecast.selectors import turn_history


def _turn_input(turn: Turn) -> TurnInput:
    # h_i is the path to the turn (in a tree, never a sibling branch); the rewriter reads the user's utterances
    # and the responses they got.
    path = turn_history(turn=turn)
    raws, manuals, responses = selectors.cqr_context(path, selectors.response_passages(path))
    return TurnInput(
        turn.turn_id,
        turn.number,
        turn.raw_utterance,
        turn.manual_rewrite,
        raws,
        manuals,
        responses,
        turn.automatic_rewrite,
        conversation=str(turn.conversation.topic_id),
    )


def _similarity(config: dict[str, Any]) -> Callable[[list[str], list[str]], list[float]] | None:
    if (config.get("clean") or {}).get("min_similarity") is None:
        return None
    return cosine


_EXAMPLES: dict[tuple[int, int, str], list[Any]] = {}


def _examples(job: GenerationJob) -> list[Any]:
    """The collection's approved pairs for the few-shot prompt, read once per job and worker process (a chunk's
    turns share them; pairs approved while the job runs are used by the next job)."""
    key = (job.pk, job.collection_id, str(job.created_at))  # a test database may hand a job's id out again
    if key not in _EXAMPLES:
        _EXAMPLES.clear()  # one job's pool at a time per worker
        _EXAMPLES[key] = selectors.approved_examples(collection=job.collection)
    return _EXAMPLES[key]


def generation_turn_process(*, gen_turn_id: int, crash_after_compute: bool = False) -> str:
    """Run the pipeline for one GenerationTurn unless it is no longer pending; returns its final status."""
    gt = GenerationTurn.objects.select_related("job", "turn__conversation").get(pk=gen_turn_id)
    job = gt.job
    if gt.status != GenerationTurn.Status.PENDING:
        return gt.status
    if GenerationJob.objects.filter(pk=job.pk, cancel_requested=True).exists():
        GenerationTurn.objects.filter(pk=gt.pk, status=GenerationTurn.Status.PENDING).update(
            status=GenerationTurn.Status.CANCELLED
        )
        return GenerationTurn.Status.CANCELLED
    started = time.perf_counter()
    try:
        config = job_config.config_runtime(job.config, api_key=job.api_key)
        examples = _examples(job) if backends.uses_shots(job.config) else None
        result = run_turn(
            _turn_input(gt.turn), config, seed=job.seed, similarity=_similarity(job.config), examples=examples
        )
    except Exception as exc:  # noqa: BLE001 - any backend failure fails this turn only, with its reason
        GenerationTurn.objects.filter(pk=gt.pk, status=GenerationTurn.Status.PENDING).update(
            status=GenerationTurn.Status.FAILED,
            error=f"{type(exc).__name__}: {exc}"[:2000],
            attempts=gt.attempts + 1,
            finished_at=timezone.now(),
        )
        return GenerationTurn.Status.FAILED
    if crash_after_compute:  # tests simulate a worker killed between computing and committing
        raise SystemExit("simulated worker crash")
    return _generation_turn_commit(gt_id=gt.pk, result=result, seconds=time.perf_counter() - started)


@transaction.atomic
def _generation_turn_commit(*, gt_id: int, result: dict[str, Any], seconds: float) -> str:
    gt = GenerationTurn.objects.select_for_update().select_related("job", "turn").get(pk=gt_id)
    if gt.status != GenerationTurn.Status.PENDING:  # another worker finished it first, or it was cancelled
        return gt.status
    job, turn = gt.job, gt.turn
    common = {
        "job": job.pk,
        "seed": result["seed"],
        "turn_text": turn.raw_utterance,
        "question": result["question"],
        "cqr": {
            **provenance_base(job.config, "cqr"),
            "output": result["rewrite"],
            **({"from": result["rewrite_from"]} if result.get("rewrite_from") else {}),
        },
    }
    for out in result["outputs"]:
        manual = Paraphrase(
            turn=turn,
            kind=Paraphrase.Kind.MANUAL,
            text=out["manual"],
            status=Paraphrase.Status.CANDIDATE,
            origin=Paraphrase.Origin.GENERATED,
            provenance={
                **common,
                "stage": "paraphrase",
                **provenance_base(job.config, "paraphrase"),
                "source": out["source"],
                "source_text": out["source_text"],
            },
        )
        manual.save()
        raw_prov = (
            {**common, "stage": "cr", **provenance_base(job.config, "cr"), "source_text": out["manual"]}
            if result["context_removed"]
            else {**common, "stage": "first-turn copy", "source_text": out["manual"]}
        )
        raw = Paraphrase(
            turn=turn,
            kind=Paraphrase.Kind.RAW,
            text=out["raw"],
            status=Paraphrase.Status.CANDIDATE,
            origin=Paraphrase.Origin.GENERATED,
            provenance={**raw_prov, "paraphrase_source": out["source"]},
            pair=manual,
        )
        raw.save()
        manual.pair = raw
        manual.save(update_fields=["pair"])
    gt.status = GenerationTurn.Status.DONE
    gt.outputs = len(result["outputs"])
    gt.attempts += 1
    gt.error = ""
    gt.seconds = seconds
    gt.finished_at = timezone.now()
    gt.details = {
        k: result[k]
        for k in (
            "question",
            "rewrite",
            "rewrite_from",
            "sources",
            "generated",
            "shots",
            "dropped",
            "drops",
            "rejected_by_similarity",
            "cr_of_manual",
            "preprocess",
        )
    } | ({"resampled": True} if result.get("resampled") else {})
    gt.save()
    return gt.status


def generation_turns_process(*, gen_turn_ids: list[int]) -> list[str]:
    """Run the pipeline for several GenerationTurns of one job in one batch, then commit each turn in its own
    transaction; returns their final statuses. Turns no longer pending are skipped; a backend without per-prompt
    seeds, or a batch that fails, is run turn by turn, so a failure fails only its own turn, with its reason."""
    rows = {
        gt.pk: gt
        for gt in GenerationTurn.objects.select_related("job", "turn__conversation").filter(pk__in=gen_turn_ids)
    }
    pending = [rows[i] for i in gen_turn_ids if i in rows and rows[i].status == GenerationTurn.Status.PENDING]
    if len(pending) < 2:
        return [generation_turn_process(gen_turn_id=i) for i in gen_turn_ids]
    job = pending[0].job
    if not _batches_turns(job.config) or GenerationJob.objects.filter(pk=job.pk, cancel_requested=True).exists():
        return [generation_turn_process(gen_turn_id=i) for i in gen_turn_ids]
    started = time.perf_counter()
    try:
        config = job_config.config_runtime(job.config, api_key=job.api_key)
        examples = _examples(job) if backends.uses_shots(job.config) else None
        results = run_turns(
            [_turn_input(gt.turn) for gt in pending],
            config,
            seed=job.seed,
            similarity=_similarity(job.config),
            examples=examples,
        )
    except Exception:  # noqa: BLE001 - run them one by one: each failing turn then fails with its own reason
        return [generation_turn_process(gen_turn_id=i) for i in gen_turn_ids]
    seconds = (time.perf_counter() - started) / len(pending)
    done = {
        gt.pk: _generation_turn_commit(gt_id=gt.pk, result=r, seconds=seconds)
        for gt, r in zip(pending, results, strict=True)
    }
    return [done.get(i) or (rows[i].status if i in rows else GenerationTurn.Status.CANCELLED) for i in gen_turn_ids]


def _batches_turns(config: dict[str, Any]) -> bool:
    spec = config.get("paraphrase") or {}
    try:
        return bool(getattr(backends.get("paraphrase", spec.get("backend") or "smollm"), "batches_turns", False))
    except backends.BackendError:
        return False


def generation_chunk_process(*, job_id: int, gen_turn_ids: list[int]) -> dict[str, int]:
    """Process one chunk a few turns at a time (:data:`ecast.generation.selectors.BATCH_TURNS`, each turn
    committed in its own transaction), then close the job if it is complete."""
    counts: dict[str, int] = {}
    for start in range(0, len(gen_turn_ids), selectors.BATCH_TURNS):
        for status in generation_turns_process(gen_turn_ids=gen_turn_ids[start : start + selectors.BATCH_TURNS]):
            counts[status] = counts.get(status, 0) + 1
        generation_job_progress_count(job_id=job_id)
    generation_job_finish_if_complete(job_id=job_id)
    return counts


def generation_job_progress_count(*, job_id: int) -> None:
    """Set the job's progress to its finished turns, counted (so a redelivered chunk never counts a turn twice)."""
    finished = GenerationTurn.objects.filter(
        job_id=job_id, status__in=[GenerationTurn.Status.DONE, GenerationTurn.Status.FAILED]
    ).count()
    GenerationJob.objects.filter(pk=job_id).update(progress_done=finished)


@transaction.atomic
def generation_job_finish_if_complete(*, job_id: int) -> GenerationJob:
    """Set the final status once no turn is pending."""
    job = GenerationJob.objects.select_for_update().get(pk=job_id)
    if job.turns.filter(status=GenerationTurn.Status.PENDING).exists():
        return job
    if job.status == GenerationJob.Status.CANCELLED or job.cancel_requested:
        job.status = GenerationJob.Status.CANCELLED
    elif job.turns.filter(status=GenerationTurn.Status.FAILED).exists():
        job.status = GenerationJob.Status.FAILED
        failed = job.turns.filter(status=GenerationTurn.Status.FAILED).count()
        job.error = f"{failed} turn(s) failed: each says why in the table below; retry them with the Retry button."
    else:
        job.status = GenerationJob.Status.SUCCEEDED
        job.error = ""
    job.finished_at = job.finished_at or timezone.now()
    job.progress_done = job.turns.filter(status__in=[GenerationTurn.Status.DONE, GenerationTurn.Status.FAILED]).count()
    job.api_key = ""  # an endpoint's key is kept only while the job may use it; a retry is given it again
    job.save(update_fields=["status", "error", "finished_at", "progress_done", "api_key"])
    return job
