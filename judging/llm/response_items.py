"""What each response-LLM task works through, item by item, and what one batch of items writes.

Items are plain keys in a fixed order, so a job picks up after a dead worker where the last committed batch ended:
nugget creation works turn by turn (turn pk; the job's ``done`` keys say which turns are finished, since a turn may
draft no nugget), nugget assignment (response pk, nugget pk) and citation support (sentence pk, passage id) pairs
(the label set's rows say which are done), the baseline turn by turn (the run's responses say which are done).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ecast.models import Participant, Passage, Turn
from evaluation.models import (
    CitationLabel,
    Nugget,
    NuggetAssignment,
    Qrel,
    Response,
    ResponseSentence,
)
from evaluation.responses import answer_prompts as ap
from evaluation.responses import baseline
from judging.llm import response_labellers as rl
from judging.llm import response_prompts as rp
from judging.models import ResponseLlmJob

Task = ResponseLlmJob.Task


def relevant_passages(job: ResponseLlmJob, turns: Iterable[int] | None = None) -> dict[int, list[str]]:
    """Turn pk → ids of the passages the version judged at least ``threshold`` that have text, best grade first
    (of ``turns`` only, when given)."""
    only = {"turn_id__in": list(turns)} if turns is not None else {}
    rows = (
        Qrel.objects.filter(
            version_id=job.qrels_version_id, grade__gte=job.threshold or 0, **_turns(job, "turn__"), **only
        )
        .filter(passage_id__in=Passage.objects.exclude(text="").values("passage_id"))
        .order_by("turn__conversation__topic_id", "turn__number", "-grade", "passage_id")
        .values_list("turn_id", "passage_id")
    )
    out: dict[int, list[str]] = {}
    for turn, pid in rows:
        out.setdefault(turn, []).append(pid)
    return out


def all_items(job: ResponseLlmJob) -> list[Any]:
    """Every item of the job, in order, ``limit`` applied."""
    if job.task == Task.CREATE_NUGGETS:
        items: list[Any] = list(relevant_passages(job))
    elif job.task == Task.ASSIGN_NUGGETS:
        nuggets: dict[int, list[int]] = {}
        for nid, turn in Nugget.objects.filter(bank_id=job.bank_id, merged_into__isnull=True).values_list(
            "pk", "turn_id"
        ):
            nuggets.setdefault(turn, []).append(nid)
        responses = Response.objects.filter(
            run__in=job.runs.all(), turn_id__in=list(nuggets), **_turns(job, "turn__")
        ).order_by("run__name", "turn__conversation__topic_id", "turn__number")
        items = [(rid, nid) for rid, turn in responses.values_list("pk", "turn_id") for nid in nuggets[turn]]
    elif job.task == Task.CITATION_SUPPORT:
        sentences = ResponseSentence.objects.filter(
            response__run__in=job.runs.all(), **_turns(job, "response__turn__")
        ).order_by("response__run__name", "response__turn__conversation__topic_id", "response__turn__number", "index")
        rows = list(sentences.values_list("pk", "citations"))
        # Only the cited passages are looked up: a corpus may hold millions of others.
        cited_ids = {pid for _sid, cited in rows for pid in cited or []}
        with_text = set(
            Passage.objects.filter(passage_id__in=cited_ids).exclude(text="").values_list("passage_id", flat=True)
        )
        items = [(sid, pid) for sid, cited in rows for pid in dict.fromkeys(cited or []) if pid in with_text]
    else:
        items = list(
            Turn.objects.filter(collection_id=job.collection_id, **_turns(job, ""))
            .exclude(participant=Participant.SYSTEM)
            .order_by("conversation__topic_id", "number")
            .values_list("pk", flat=True)
        )
    return items[: job.limit] if job.limit else items


def _turns(job: ResponseLlmJob, path: str) -> dict[str, Any]:
    """The filter restricting a query to the job's turns (none when it has no restriction)."""
    return {f"{path}turn_id__in": list(job.turns)} if job.turns else {}


def done_items(job: ResponseLlmJob) -> set[Any]:
    if job.task == Task.CREATE_NUGGETS:
        return set(job.done)
    if job.task == Task.ASSIGN_NUGGETS:
        return set(
            NuggetAssignment.objects.filter(label_set_id=job.label_set_id).values_list("response_id", "nugget_id")
        )
    if job.task == Task.CITATION_SUPPORT:
        return set(CitationLabel.objects.filter(label_set_id=job.label_set_id).values_list("sentence_id", "passage_id"))
    return set(Response.objects.filter(run_id=job.run_id).values_list("turn_id", flat=True))


def pending_items(job: ResponseLlmJob) -> list[Any]:
    done = done_items(job)
    return [i for i in all_items(job) if i not in done]


def _question(turn: Turn) -> str:
    return rp.question_text(turn.raw_utterance, turn.manual_rewrite)


def label_batch(job: ResponseLlmJob, model: Any, items: Sequence[Any]) -> list[dict[str, Any]]:
    """The rows one batch writes, as plain dicts (the model runs here; nothing is written)."""
    if job.task == Task.CREATE_NUGGETS:
        return _create(job, model, items)
    if job.task == Task.ASSIGN_NUGGETS:
        responses = {r.pk: r for r in Response.objects.filter(pk__in={r for r, _ in items}).select_related("turn")}
        nuggets = dict(Nugget.objects.filter(pk__in={n for _, n in items}).values_list("pk", "text"))
        chats = [
            rp.assign_messages(
                question=_question(responses[r].turn),
                answer=model.cut(responses[r].text, "max_answer_tokens"),
                nugget=nuggets[n],
            )
            for r, n in items
        ]
        labels = model.classify(chats, rp.ASSIGN)
        return [{"response_id": r, "nugget_id": n, "labelled": lab} for (r, n), lab in zip(items, labels, strict=True)]
    if job.task == Task.CITATION_SUPPORT:
        sentences = dict(ResponseSentence.objects.filter(pk__in={s for s, _ in items}).values_list("pk", "text"))
        texts = dict(Passage.objects.filter(passage_id__in={p for _, p in items}).values_list("passage_id", "text"))
        chats = [
            rp.cite_messages(sentence=sentences[s], passage=model.cut(texts[p], "max_passage_tokens")) for s, p in items
        ]
        labels = model.classify(chats, rp.CITE)
        return [{"sentence_id": s, "passage_id": p, "labelled": lab} for (s, p), lab in zip(items, labels, strict=True)]
    raise ValueError(f"{job.task}: not a labelling task")


def _create(job: ResponseLlmJob, model: Any, items: Sequence[int]) -> list[dict[str, Any]]:
    relevant = relevant_passages(job, items)
    turns = {t.pk: t for t in Turn.objects.filter(pk__in=list(items))}
    most = int(model.params["max_passages"])
    wanted = {pid for t in items for pid in relevant.get(t, [])[:most]}
    texts = dict(Passage.objects.filter(passage_id__in=wanted).values_list("passage_id", "text"))
    rows = []
    for turn_pk in items:
        pids = relevant.get(turn_pk, [])[:most]
        drafted: rl.Drafted = model.draft(
            _question(turns[turn_pk]), [model.cut(texts[p], "max_passage_tokens") for p in pids]
        )
        rows.append({"turn_id": turn_pk, "passages": pids, "drafted": drafted})
    return rows


def baseline_batch(job: ResponseLlmJob, index: Any, writer: Any, items: Sequence[int]) -> list[dict[str, Any]]:
    """Each turn's answer over the BM25 top k (``index``: the collection corpus's bm25s index): extractive when
    ``writer`` is None, else written by the model (``writer``: a labeller's ``write``) citing the passages by number.
    The model runs here; nothing is written."""
    params = {**baseline.DEFAULT_PARAMS, **job.params}
    k = int(params["k"])
    turns = list(Turn.objects.filter(pk__in=list(items)).order_by("conversation__topic_id", "number"))
    hits = {t.pk: index.search([(_query(t), 1.0)], k)[0] for t in turns}
    texts = dict(
        Passage.objects.filter(passage_id__in={p for ids in hits.values() for p in ids}).values_list(
            "passage_id", "text"
        )
    )
    if writer is None:
        return [
            {
                "turn_id": t.pk,
                "answer": baseline.extractive_answer(_query(t), [(p, texts[p]) for p in hits[t.pk]], params=params),
                "metadata": {"query": _query(t)},
            }
            for t in turns
        ]
    # A turn BM25 finds nothing for gets an empty answer: the model would have nothing to cite.
    asked = [t for t in turns if hits[t.pk]]
    chats = [
        ap.messages(
            question=_query(t),
            passages=[writer.cut(texts[p], "max_passage_tokens") for p in hits[t.pk]],
            sentences=int(params.get("sentences", 3)),
        )
        for t in asked
    ]
    written = dict(zip([t.pk for t in asked], writer.write(chats, [hits[t.pk] for t in asked]), strict=True))
    out = []
    for t in turns:
        w = written.get(t.pk)
        if w is None:
            answer = baseline.Answer(text="")
            metadata: dict[str, Any] = {"query": _query(t), "note": "BM25 retrieved no passage: nothing to answer from"}
        else:
            answer = baseline.Answer(
                text=w.answer.text,
                sentences=[baseline.AnswerSentence(s.text, s.citations) for s in w.answer.sentences],
                references=list(hits[t.pk]),
            )
            metadata = {
                "query": _query(t),
                "prompt": w.prompt,
                "reply": w.reply[:4000],
                "uncited_sentences": w.answer.uncited,
                "dropped_citations": w.answer.dropped,
            }
        out.append({"turn_id": t.pk, "answer": answer, "metadata": metadata})
    return out


def _query(turn: Turn) -> str:
    """The baseline's query: CAsT's automatic rewrite (a system's own rewrite), else the manual one, else the
    utterance as asked (single-turn collections such as TREC RAG have only that)."""
    return turn.automatic_rewrite or turn.manual_rewrite or turn.raw_utterance
