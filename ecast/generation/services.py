"""Generation jobs: create, dispatch in chunks, process turns idempotently, cancel, retry, resume.

Per-turn idempotence: every (job, turn) has one GenerationTurn row; a turn's paraphrases are written in the
same transaction that marks the row done, under a row lock, so a redelivered or resumed chunk skips it.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from ecast.core import jobs, providers
from ecast.core.models import ACTIVE_STATUSES
from ecast.generation import config as job_config
from ecast.generation import processing, selectors
from ecast.models import (
    Collection,
    Conversation,
    GenerationJob,
    GenerationTurn,
    Participant,
    Passage,
    Turn,
)
from ecast.pipeline import cqr, preprocess
from ecast.selectors import turn_paths

MAX_CHUNK = 500


def _cqr_for_collection(cfg: dict[str, Any], collection: Collection) -> dict[str, Any]:
    """The ``best`` CQR gets the backend it uses for this collection, with the scores that chose it
    (:func:`ecast.pipeline.cqr.choose`); ``imported`` is refused for a collection without automatic rewrites."""
    spec = cfg["cqr"]
    if spec["backend"] == "imported" and not selectors.collection_has_automatic_rewrites(collection=collection):
        raise ValidationError(
            {"cqr": f"the imported backend needs automatic rewrites, and no turn of {collection.name} has one"}
        )
    if spec["backend"] == "best" and not spec["params"].get("use"):
        spec["params"].update(cqr.choose(selectors.collection_cqr_turns(collection=collection)))
    return cfg


def _selected_turns(collection: Collection, selection: dict[str, Any]) -> list[Turn]:
    # System turns of a conversation tree are the system's side: there is no utterance to paraphrase.
    qs = (
        Turn.objects.filter(collection=collection)
        .exclude(participant=Participant.SYSTEM)
        .select_related("conversation")
        .order_by("conversation_id", "number")
    )
    topics = [str(t) for t in selection.get("conversations") or []]
    turn_ids = [str(t) for t in selection.get("turns") or []]
    if topics:
        known = set(
            Conversation.objects.filter(collection=collection, topic_id__in=topics).values_list("topic_id", flat=True)
        )
        unknown = sorted(set(topics) - known)
        if unknown:
            raise ValidationError({"selection": f"unknown conversations in {collection.name}: {', '.join(unknown)}"})
    if turn_ids:
        named = Turn.objects.filter(collection=collection, turn_id__in=turn_ids)
        system = sorted(named.filter(participant=Participant.SYSTEM).values_list("turn_id", flat=True))
        if system:
            raise ValidationError(
                {
                    "selection": f"System turns have no utterance to paraphrase, so they are never generated for: "
                    f"{', '.join(system)}; name the User turns around them instead"
                }
            )
        known = set(named.values_list("turn_id", flat=True))
        unknown = sorted(set(turn_ids) - known)
        if unknown:
            raise ValidationError({"selection": f"unknown turns in {collection.name}: {', '.join(unknown)}"})
    if topics and turn_ids:
        qs = qs.filter(Q(conversation__topic_id__in=topics) | Q(turn_id__in=turn_ids))
    elif topics:
        qs = qs.filter(conversation__topic_id__in=topics)
    elif turn_ids:
        qs = qs.filter(turn_id__in=turn_ids)
    turns = list(qs)
    if not turns:
        raise ValidationError({"selection": f"the selection holds no turns of {collection.name}"})
    return turns


@transaction.atomic
def generation_job_create(
    *,
    collection: Collection,
    config: dict[str, Any] | None = None,
    selection: dict[str, Any] | None = None,
    seed: int = 0,
    chunk_size: int = 10,
    name: str = "",
    user: Any = None,
    api_key: str = "",
) -> GenerationJob:
    """Validate backends and selection, then create the job and one pending GenerationTurn per selected turn.

    ``api_key``: the key this job sends to an OpenAI-compatible endpoint instead of the settings' one (an
    ``api_key`` in an openai stage's params is taken as it); stored apart from the config, never shown back."""
    if not 1 <= int(chunk_size) <= MAX_CHUNK:
        raise ValidationError({"chunk_size": f"chunk size must be between 1 and {MAX_CHUNK}"})
    selection = {k: list(v) for k, v in (selection or {}).items() if k in ("conversations", "turns") and v}
    stage_keys = [
        str(spec["params"]["api_key"])
        for spec in (config or {}).values()
        if isinstance(spec, dict) and isinstance(spec.get("params"), dict) and spec["params"].get("api_key")
    ]
    api_key = (api_key or (stage_keys[0] if stage_keys else "")).strip()
    cfg = _cqr_for_collection(job_config.config_normalise(config), collection)
    turns = _selected_turns(collection, selection)
    job = GenerationJob(
        collection=collection,
        name=name or f"{collection.name}: {cfg['paraphrase']['backend']} paraphrases",
        selection=selection,
        config=cfg,
        seed=int(seed),
        chunk_size=int(chunk_size),
        progress_total=len(turns),
        created_by=user if getattr(user, "is_authenticated", False) else None,
        api_key=api_key,
    )
    job.full_clean()
    job.save()
    GenerationTurn.objects.bulk_create(GenerationTurn(job=job, turn=t, position=i) for i, t in enumerate(turns))
    return job


def generation_job_start(*, job: GenerationJob) -> None:
    """Queue the job's dispatch task once the creating transaction commits."""
    transaction.on_commit(lambda: jobs.enqueue("ecast.generation.dispatch", job.pk))


def generation_job_dispatch(*, job_id: int) -> int:
    """Begin the job and fan its pending turns out as parallel chunk tasks; returns the number of chunks."""
    job = generation_job_begin(job_id=job_id)
    if job.status == GenerationJob.Status.CANCELLED:
        return 0
    chunks = generation_job_chunks(job=job)
    if not chunks:
        processing.generation_job_finish_if_complete(job_id=job_id)
        return 0
    for chunk in chunks:
        jobs.enqueue("ecast.generation.chunk", job_id, chunk)
    return len(chunks)


def generation_job_chunks(*, job: GenerationJob) -> list[list[int]]:
    """The job's pending GenerationTurn ids, split into chunks of ``job.chunk_size``, in turn order."""
    ids = list(job.turns.filter(status=GenerationTurn.Status.PENDING).order_by("position").values_list("id", flat=True))
    return [ids[i : i + job.chunk_size] for i in range(0, len(ids), job.chunk_size)]


def generation_job_begin(*, job_id: int) -> GenerationJob:
    """Mark the job running and refresh preprocessing fields of the conversations it touches."""
    with transaction.atomic():
        job = GenerationJob.objects.select_for_update().get(pk=job_id)
        if job.status in (GenerationJob.Status.CANCELLED,):
            return job
        job.status = GenerationJob.Status.RUNNING
        job.started_at = job.started_at or timezone.now()
        job.finished_at = None
        job.save(update_fields=["status", "started_at", "finished_at"])
    conv_ids = set(job.turns.values_list("turn__conversation_id", flat=True))
    for conversation in Conversation.objects.filter(pk__in=conv_ids):
        turn_preprocess_conversation(conversation=conversation)
    return job


@transaction.atomic
def turn_preprocess_conversation(*, conversation: Conversation) -> int:
    """Store feedback/revealment sentences and mark responses unreliable when the next turn is negative feedback.

    The replacement passage comes from the collection's "original" qrels (grade 4, else 3). Returns the number
    of turns changed.
    """
    turns = list(conversation.turns.order_by("number"))
    pres = [preprocess.preprocess(t.raw_utterance) for t in turns]
    # The turn a negative feedback reacts to is the one before it on its path: in a tree, its parent (the System
    # turn whose response it rejects), never the turn numbered before it on a sibling branch.
    paths, index = turn_paths(turns), {t.pk: i for i, t in enumerate(turns)}
    previous = [index[paths[t.pk][-2].pk] if len(paths[t.pk]) > 1 else None for t in turns]
    unreliable = preprocess.unreliable_responses([p.negative_feedback for p in pres], previous)
    changed = 0
    for turn, pre, bad in zip(turns, pres, unreliable, strict=True):
        fields: dict[str, Any] = {"feedback_sentences": pre.feedback, "revealment_sentences": pre.revealment}
        if bad and not turn.canonical_response_unreliable:
            fields["canonical_response_unreliable"] = True
        if (bad or turn.canonical_response_unreliable) and not turn.replacement_response_id:
            replacement = _replacement_for(turn)
            if replacement:
                fields["replacement_response_id"] = replacement
        diff = {k: v for k, v in fields.items() if getattr(turn, k) != v}
        if diff:
            for key, value in diff.items():
                setattr(turn, key, value)
            turn.save(update_fields=list(diff))
            changed += 1
    return changed


def _replacement_for(turn: Turn) -> str | None:
    grades = providers.turn_qrels(turn=turn, version_name="original", min_grade=3)
    if not grades:
        return None
    with_text = set(Passage.objects.filter(passage_id__in=list(grades)).values_list("passage_id", flat=True))
    return preprocess.pick_replacement(grades, with_text=with_text)


@transaction.atomic
def generation_job_cancel(*, job: GenerationJob) -> GenerationJob:
    """Stop a job: pending turns are cancelled; a turn already computing finishes but nothing new starts."""
    job = GenerationJob.objects.select_for_update().get(pk=job.pk)
    if job.status in (GenerationJob.Status.SUCCEEDED, GenerationJob.Status.FAILED):
        raise ValidationError("the job has already finished")
    job.cancel_requested = True
    job.status = GenerationJob.Status.CANCELLED
    job.finished_at = timezone.now()
    job.api_key = ""  # a turn already computing holds its own copy of the config it was given
    job.save(update_fields=["cancel_requested", "status", "finished_at", "api_key"])
    job.turns.filter(status=GenerationTurn.Status.PENDING).update(status=GenerationTurn.Status.CANCELLED)
    return job


@transaction.atomic
def generation_job_retry(*, job: GenerationJob, api_key: str = "") -> GenerationJob:
    """Put failed (and cancelled) turns back to pending and re-run them; done turns are never redone. The key the
    job had was cleared when it ended: ``api_key`` gives one for this run (empty: the settings' key)."""
    job = GenerationJob.objects.select_for_update().get(pk=job.pk)
    n = job.turns.filter(status__in=[GenerationTurn.Status.FAILED, GenerationTurn.Status.CANCELLED]).update(
        status=GenerationTurn.Status.PENDING, error=""
    )
    if not n:
        raise ValidationError("no failed or cancelled turns to retry")
    job.cancel_requested = False
    job.status = GenerationJob.Status.QUEUED
    job.finished_at = None
    job.error = ""
    job.queued_at = timezone.now()
    job.api_key = (api_key or "").strip()
    job.save(update_fields=["cancel_requested", "status", "finished_at", "error", "queued_at", "api_key"])
    processing.generation_job_progress_count(job_id=job.pk)
    generation_job_start(job=job)
    return job


@transaction.atomic
def generation_job_resume(*, job: GenerationJob) -> GenerationJob:
    """Re-dispatch the pending turns of a job whose worker died; finished turns are skipped, never duplicated."""
    job = GenerationJob.objects.select_for_update().get(pk=job.pk)
    if job.status not in (GenerationJob.Status.RUNNING, GenerationJob.Status.QUEUED):
        raise ValidationError("only a pending or running job can be resumed")
    generation_job_start(job=job)
    return job


# --- worker loss (the sweeper calls these through ecast.core.jobs) ----------------------------------------------------

KIND = "generation"


def generation_jobs_active() -> list[tuple[int, Any]]:
    """Jobs the sweeper watches: queued or running."""
    active = GenerationJob.objects.filter(status__in=ACTIVE_STATUSES)
    return list(active.values_list("pk", "created_at"))


def generation_job_requeue(*, job_id: int) -> str:
    """Re-dispatch a silent job's pending turns (finished turns are kept; a turn commits once)."""
    job = generation_job_resume(job=GenerationJob.objects.get(pk=job_id))
    pending = job.turns.filter(status=GenerationTurn.Status.PENDING).count()
    return f"re-dispatched {pending} pending turn(s) of {job.progress_total}"


@transaction.atomic
def generation_job_fail(*, job_id: int, reason: str) -> None:
    """End a job whose worker keeps dying: its pending turns fail with the reason; finished turns stay."""
    job = GenerationJob.objects.select_for_update().get(pk=job_id)
    if not job.is_active:
        return
    job.turns.filter(status=GenerationTurn.Status.PENDING).update(status=GenerationTurn.Status.FAILED, error=reason)
    job.status, job.error, job.finished_at = GenerationJob.Status.FAILED, reason, timezone.now()
    job.api_key = ""
    job.save(update_fields=["status", "error", "finished_at", "api_key"])
