"""Setting up a response-LLM job before it runs (plain reads and the rows it writes into): the model's provenance
(local or endpoint), the turns or topics it is restricted to, and the bank, label set or baseline run it fills.
:mod:`judging.llm.response_services` creates and runs the job."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError

from ecast.core.errors import DomainError
from ecast.models import Collection, Turn
from evaluation.models import NuggetBank, QrelsVersion, ResponseLabelSet, ResponseRun
from evaluation.permutations import retrieval
from evaluation.responses import answer_prompts as ap
from evaluation.responses import baseline
from judging.llm import endpoint_judge, judge
from judging.llm import response_labellers as rl
from judging.llm import response_prompts as rp
from judging.llm import services as llm_services
from judging.models import ResponseLlmJob

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


def model_provenance(task: str, model: str, revision: str, params: dict[str, Any]) -> tuple[str, dict[str, Any]]:
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


def nothing_to_do(job: ResponseLlmJob) -> str:
    if job.turns:
        return f"turns: nothing to do for the turns chosen ({', '.join(job.turns[:10])}) — " + nothing_to_do_at_all(job)
    return nothing_to_do_at_all(job)


def nothing_to_do_at_all(job: ResponseLlmJob) -> str:
    return {
        Task.CREATE_NUGGETS: "qrels_version: no turn has a passage judged relevant (grade ≥ threshold) with text",
        Task.ASSIGN_NUGGETS: "runs: no response answers a turn the bank has nuggets for",
        Task.CITATION_SUPPORT: "runs: no answer sentence cites a passage with text",
        Task.BASELINE: "collection: it has no turns",
    }[Task(job.task)]


def create_setup(job: ResponseLlmJob, version: QrelsVersion | None, threshold: int | None, user: Any) -> None:
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


def label_setup(job: ResponseLlmJob, bank: NuggetBank | None, runs: list[ResponseRun], user: Any) -> None:
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


def baseline_setup(
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
        job.model_id, job.provenance = model_provenance(Task.BASELINE, model, job.revision, merged)
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
