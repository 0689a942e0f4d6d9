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
from ecast.models import Collection, Turn
from ecast.pipeline import openai_compat
from evaluation.models import (
    CitationLabel,
    LabelCondition,
    Nugget,
    NuggetAssignment,
    NuggetBank,
    QrelsVersion,
    Response,
    ResponseLabelSet,
    ResponseRun,
    ResponseSentence,
)
from evaluation.permutations import retrieval
from evaluation.responses import answer_prompts as ap
from evaluation.responses import baseline
from evaluation.responses.services import label_set_touch, nugget_bank_touch
from judging.llm import endpoint_judge, judge
from judging.llm import response_items as items_
from judging.llm import response_labellers as rl
from judging.llm import response_prompts as rp
from judging.llm import services as llm_services
from judging.models import ResponseLlmJob

KIND = ResponseLlmJob.job_kind
RUN_TASK = "judging.llm.response_run"
Task = ResponseLlmJob.Task
PARAM_BOUNDS: dict[str, tuple[int, int]] = {
    "batch_size": (1, 256),
    "max_passage_tokens": (16, 4096),
    "max_answer_tokens": (16, 4096),
    "max_nuggets": (1, 50),
    "max_passages": (1, 50),
    "malformed_retries": (0, 5),
    "k": (1, 100),
    "sentences": (1, 20),
    "per_passage": (1, 10),
    "max_new_tokens": (16, 2048),
    "require_citation": (0, 1),
}
# The generative baseline's defaults: a 135M model reads three passages of 128 tokens well within its context.
GENERATIVE_DEFAULTS: dict[str, Any] = {"k": 3, "batch_size": 4, "max_passage_tokens": 128, "max_new_tokens": 160}
SET_PREFIX = {Task.ASSIGN_NUGGETS: "llm nuggets: ", Task.CITATION_SUPPORT: "llm citations: "}
BANK_PREFIX = "LLM draft: "


def _model_provenance(task: str, model: str, revision: str, params: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(model id, provenance) of a local model or an endpoint; a ValidationError when neither can be used."""
    spec = judge.ModelSpec(model=model, revision=revision, params={})
    if model == endpoint_judge.BACKEND:
        params.update(llm_services.endpoint_params(params))
        shown = {k: v for k, v in params.items() if k not in endpoint_judge.STRING_PARAMS}
        prov = rp.provenance(task=task, model=params["served_model"], revision="", params=shown, backend="openai")
        prov["base_url"] = params["base_url"]
        return str(params["served_model"]), prov
    try:
        path, rev = spec.path(), spec.model_revision()
    except judge.JudgeError as exc:
        raise ValidationError(f"model: {exc}") from exc
    prov = rp.provenance(task=task, model=spec.model_id(), revision=rev, params=params, backend="local")
    prov["path"] = path
    return spec.model_id(), prov


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
    clean = llm_services.params_clean(params, bounds=PARAM_BOUNDS)
    job = ResponseLlmJob(
        task=task,
        collection=collection,
        limit=limit,
        turns=turns_resolve(collection=collection, wanted=turns or []),
        created_by=created_by,
        api_key=api_key.strip(),
    )
    if limit is not None and limit < 1:
        raise ValidationError("limit: at least 1 item")
    if task == Task.BASELINE:
        model = (model or baseline.BACKEND).strip()
        _baseline_setup(job, clean, model=model, revision=revision, run_name=run_name, user=created_by)
    else:
        model = (model or judge.DEFAULT_MODEL).strip()
        if model == baseline.BACKEND:
            raise ValidationError("model: 'extractive' makes baseline answers only; choose a model to label with")
        job.model, job.revision = model, revision.strip()
        job.model_id, job.provenance = _model_provenance(task, model, job.revision, clean)
        job.params = {**rl.DEFAULT_PARAMS, **clean}
        if task == Task.CREATE_NUGGETS:
            _create_setup(job, qrels_version, threshold, created_by)
        else:
            _label_setup(job, bank, runs or [], created_by)
    job.full_clean()
    job.save()
    if runs and task in (Task.ASSIGN_NUGGETS, Task.CITATION_SUPPORT):
        job.runs.set(runs)
    job.progress_total = len(items_.all_items(job))
    if not job.progress_total:
        raise ValidationError(_nothing_to_do(job))
    job.save(update_fields=["progress_total"])
    if queue:
        transaction.on_commit(lambda: enqueue(RUN_TASK, job.pk))
    return job


def turns_resolve(*, collection: Collection, wanted: list[str]) -> list[str]:
    """Turn ids ("81_2") and topic ids ("81": every turn of that conversation) → the collection's turn ids, in
    order; a ValidationError naming the ids the collection does not have."""
    if not wanted:
        return []
    rows = list(
        Turn.objects.filter(collection=collection)
        .order_by("conversation__topic_id", "number")
        .values_list("turn_id", "conversation__topic_id")
    )
    turn_ids = {t for t, _ in rows}
    topics = {c for _, c in rows}
    unknown = [w for w in wanted if w not in turn_ids and w not in topics]
    if unknown:
        raise ValidationError(f"turns: {collection.name} has no turn or topic {', '.join(unknown[:10])}")
    chosen = set(wanted)
    return [t for t, c in rows if t in chosen or c in chosen]


def _nothing_to_do(job: ResponseLlmJob) -> str:
    if job.turns:
        return f"turns: nothing to do for the turns chosen ({', '.join(job.turns[:10])}) — " + _nothing_to_do_at_all(
            job
        )
    return _nothing_to_do_at_all(job)


def _nothing_to_do_at_all(job: ResponseLlmJob) -> str:
    return {
        Task.CREATE_NUGGETS: "qrels_version: no turn has a passage judged relevant (grade ≥ threshold) with text",
        Task.ASSIGN_NUGGETS: "runs: no response answers a turn the bank has nuggets for",
        Task.CITATION_SUPPORT: "runs: no answer sentence cites a passage with text",
        Task.BASELINE: "collection: it has no turns",
    }[Task(job.task)]


def _create_setup(job: ResponseLlmJob, version: QrelsVersion | None, threshold: int | None, user: Any) -> None:
    if version is None or version.collection_id != job.collection_id:
        raise ValidationError("qrels_version: a qrels version of this collection")
    job.qrels_version = version
    job.threshold = job.collection.relevance_threshold if threshold is None else threshold
    job.provenance.update(qrels_version=version.name, threshold=job.threshold)
    bank = NuggetBank(
        collection=job.collection,
        name=llm_services.free_name(NuggetBank, collection=job.collection, base=f"{BANK_PREFIX}{job.model_id}"),
        description=f"Nuggets drafted by {job.model_id} from the passages {version.name!r} judged ≥ {job.threshold}.",
        provenance=job.provenance,
        created_by=user,
    )
    bank.save()
    job.bank = bank


def _label_setup(job: ResponseLlmJob, bank: NuggetBank | None, runs: list[ResponseRun], user: Any) -> None:
    if not runs or any(r.collection_id != job.collection_id for r in runs):
        raise ValidationError("runs: one or more response runs of this collection")
    kind = ResponseLabelSet.Kind.NUGGETS if job.task == Task.ASSIGN_NUGGETS else ResponseLabelSet.Kind.CITATIONS
    if job.task == Task.ASSIGN_NUGGETS:
        if bank is None or bank.collection_id != job.collection_id:
            raise ValidationError("bank: a nugget bank of this collection")
        job.bank = bank
        job.provenance["bank"] = bank.name
    job.provenance["runs"] = [r.name for r in runs]
    label_set = ResponseLabelSet(
        collection=job.collection,
        name=llm_services.free_name(
            ResponseLabelSet, collection=job.collection, base=f"{SET_PREFIX[Task(job.task)]}{job.model_id}"
        ),
        kind=kind,
        source=ResponseLabelSet.Source.LLM,
        bank=job.bank if kind == ResponseLabelSet.Kind.NUGGETS else None,
        description=f"{job.get_task_display()} by {job.model_id} of {', '.join(r.name for r in runs)}.",
        provenance=job.provenance,
        created_by=user,
    )
    label_set.save()
    job.label_set = label_set


def _baseline_setup(
    job: ResponseLlmJob, params: dict[str, Any], *, model: str, revision: str, run_name: str, user: Any
) -> None:
    """The run the baseline writes: extractive (no model), or written by a model (local or endpoint) citing the
    BM25 top k (:mod:`evaluation.responses.answer_prompts`)."""
    if not job.collection.corpus.exclude(text="").exists():
        raise DomainError(
            f"no passage of {job.collection.name}'s corpus has text: import passage texts for it first", code="conflict"
        )
    retriever = {
        "retriever": f"bm25s (k1={retrieval.K1}, b={retrieval.B}) over the collection's corpus",
        "query": "CAsT automatic rewrite, else manual rewrite, else the utterance",
    }
    if model == baseline.BACKEND:
        merged = {**baseline.DEFAULT_PARAMS, **{k: v for k, v in params.items() if k in baseline.DEFAULT_PARAMS}}
        job.model = job.model_id = baseline.BACKEND
        job.params = merged
        job.provenance = {"backend": baseline.BACKEND, **retriever, "params": merged, "decision": baseline.DECISION}
        decision, default_name = baseline.DECISION, f"ecast-baseline-bm25-top{merged['k']}"
    else:
        wanted = {**rl.DEFAULT_PARAMS, **GENERATIVE_DEFAULTS, "sentences": 3, **params}
        # An endpoint's model can follow the format, so a reply citing nothing is malformed there (asked again);
        # the local 135M model often cites nothing, and its uncited sentences are kept (see answer_prompts).
        wanted.setdefault("require_citation", int(model == endpoint_judge.BACKEND))
        keep = (*GENERATIVE_DEFAULTS, "sentences", "malformed_retries", "require_citation", "base_url", "served_model")
        merged = {k: v for k, v in wanted.items() if k in keep}
        job.model, job.revision = model, revision.strip()
        job.model_id, job.provenance = _model_provenance(Task.BASELINE, model, job.revision, merged)
        job.params = merged
        job.provenance.update(
            retriever,
            prompt_version=ap.PROMPT_VERSION,
            prompt_template=ap.template(),
            decision=ap.DECISION,
            reading=ap.__doc__.split("**Reading the reply**", 1)[1].strip() if ap.__doc__ else "",
        )
        decision = ap.DECISION
        default_name = f"ecast-baseline-bm25-top{merged['k']}-{job.model_id.rsplit('/', 1)[-1]}"
    name = run_name.strip() or default_name
    if ResponseRun.objects.filter(collection=job.collection, name=name).exists():
        raise ValidationError(f"run_name: {job.collection.name} already has a response run {name!r}")
    job.run = ResponseRun.objects.create(
        collection=job.collection,
        name=name,
        description=f"ecast's built-in baseline ({job.model_id}): {decision}.",
        source_format="baseline",
        provenance=job.provenance,
        created_by=user,
    )


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
            writer = None if job.model == baseline.BACKEND else labeller(job)
            worker: Any = (_baseline_index(job), writer)
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
                rows = items_.baseline_batch(job, *worker, batch)
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
    job.save(update_fields=["status", "finished_at"])


@transaction.atomic
def response_job_fail(*, job_id: int, reason: str) -> None:
    """End the job with ``reason`` shown on its page (the batches stored so far stay)."""
    job = ResponseLlmJob.objects.select_for_update().get(pk=job_id)
    if job.status == ResponseLlmJob.Status.CANCELLED:
        return
    job.status = ResponseLlmJob.Status.FAILED
    job.error = reason[:4000]
    job.finished_at = timezone.now()
    job.save(update_fields=["status", "error", "finished_at"])


@transaction.atomic
def response_job_cancel(*, job_id: int) -> bool:
    """Stop a queued or running job after its current batch (which then writes nothing); False when it had ended."""
    job = ResponseLlmJob.objects.select_for_update().get(pk=job_id)
    if not job.is_active:
        return False
    job.status = ResponseLlmJob.Status.CANCELLED
    job.finished_at = timezone.now()
    job.save(update_fields=["status", "finished_at"])
    return True


def response_jobs_active() -> list[tuple[int, datetime]]:
    return list(ResponseLlmJob.objects.filter(status__in=ACTIVE_STATUSES).values_list("pk", "created_at"))


def response_job_requeue(*, job_id: int) -> str:
    job = ResponseLlmJob.objects.get(pk=job_id)
    enqueue(RUN_TASK, job_id)
    return f"queued again from item {job.progress_done + 1} of {job.progress_total}"
