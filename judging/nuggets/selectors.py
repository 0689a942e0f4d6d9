"""Reads for response judging: the tasks an assessor may judge, one leased answer as its page shows it, the
nugget banks a person may edit and one (bank, turn) with its judged-relevant passages."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Q, QuerySet

from ecast.models import Passage, Turn
from evaluation.models import (
    CitationLabel,
    Nugget,
    NuggetAssignment,
    NuggetBank,
    Qrel,
    QrelsVersion,
    Response,
    ResponseLabelSet,
    ResponseSentence,
)
from judging.models import ResponseLease, ResponseTask
from judging.nuggets import leasing
from judging.relevance.selectors import conversation_context

IMPORTANCE_ORDER: dict[str, int] = {"vital": 0, "okay": 1}


def task_list() -> QuerySet[ResponseTask]:
    return ResponseTask.objects.select_related("collection", "label_set", "bank", "llm_label_set").prefetch_related(
        "runs", "assessors"
    )


def tasks_open_for(*, user: Any) -> list[ResponseTask]:
    """Open tasks the user may judge (``leasing.tasks_judgeable_by``), with progress."""
    tasks = list(task_list().filter(status=ResponseTask.Status.OPEN, pk__in=leasing.tasks_judgeable_by(user)))
    progress = leasing.tasks_progress(tasks, user)
    for t in tasks:
        t.progress = progress[t.pk]  # type: ignore[attr-defined]
    return tasks


def _turn(turn: Turn) -> dict[str, Any]:
    return {"id": turn.pk, "turn_id": turn.turn_id, "number": turn.number, "raw": turn.raw_utterance,
            "manual": turn.manual_rewrite, "topic_id": turn.conversation.topic_id,
            "title": turn.conversation.title}  # fmt: skip


def _nuggets(task: ResponseTask, lease: ResponseLease) -> list[dict[str, Any]]:
    """The turn's nuggets, vital first (then as the bank orders them), with this set's and the LLM's labels."""
    nuggets = sorted(
        Nugget.objects.filter(bank_id=task.bank_id, turn_id=lease.response.turn_id, merged_into__isnull=True),
        key=lambda n: (IMPORTANCE_ORDER.get(n.importance, 2), n.position, n.pk),
    )

    def labels(label_set_id: int | None) -> dict[int, str]:
        if label_set_id is None:
            return {}
        rows = NuggetAssignment.objects.filter(label_set_id=label_set_id, response_id=lease.response_id)
        return dict(rows.values_list("nugget_id", "label"))

    mine, llm = labels(task.label_set_id), labels(task.llm_label_set_id)
    return [
        {"id": n.pk, "text": n.text, "importance": n.importance, "grade": n.grade,
         "label": mine.get(n.pk), "llm": llm.get(n.pk)}
        for n in nuggets
    ]  # fmt: skip


def _sentences(task: ResponseTask, lease: ResponseLease) -> list[dict[str, Any]]:
    """Every sentence of the answer; those with a citation carry the first cited passage's text (None when the
    corpus has none) and this set's and the LLM's label of it."""
    sentences = list(ResponseSentence.objects.filter(response_id=lease.response_id).order_by("index"))
    cited = {pid for s in sentences for pid in s.citations}
    texts = dict(Passage.objects.filter(passage_id__in=cited).exclude(text="").values_list("passage_id", "text"))

    def labels(label_set_id: int | None) -> dict[int, str]:
        if label_set_id is None:
            return {}
        rows = CitationLabel.objects.filter(label_set_id=label_set_id, sentence__in=sentences)
        return {sid: v for sid, pid, v in rows.values_list("sentence_id", "passage_id", "support") if pid}

    mine, llm = labels(task.label_set_id), labels(task.llm_label_set_id)
    return [
        {"id": s.pk, "index": s.index, "text": s.text, "citations": list(s.citations),
         "passage": texts.get(s.citations[0]) if s.citations else None,
         "others": [{"id": pid, "text": texts.get(pid)} for pid in s.citations[1:]],
         "label": mine.get(s.pk), "llm": llm.get(s.pk)}
        for s in sentences
    ]  # fmt: skip


def lease_payload(*, lease: ResponseLease) -> dict[str, Any]:
    """One leased answer as its page shows it; the LLM's labels only in a post-edit task (blind means blind)."""
    task = lease.task
    # The answer with its run and turn in one query (the lease may come without them).
    response = Response.objects.select_related("run", "turn__conversation").get(pk=lease.response_id)
    items = _nuggets(task, lease) if task.kind == ResponseLabelSet.Kind.NUGGETS else _sentences(task, lease)
    if task.condition != "post_edit":
        for item in items:
            item.pop("llm")
    turn = response.turn
    return {
        "lease": lease.pk,
        "done": lease.completed_at is not None,
        "expires_at": lease.expires_at.isoformat(),
        "response": {"id": response.pk, "run": response.run.name, "text": response.text},
        "turn": _turn(turn),
        "conversation": conversation_context(conversation_id=turn.conversation_id)["turns"],
        "items": items,
    }


# ---------------------------------------------------------------- banks


def bank_turns(*, bank: NuggetBank) -> list[dict[str, Any]]:
    """The bank's collection's turns with how many nuggets (vital) the bank has for each."""
    counts: dict[int, dict[str, Any]] = {
        row["turn_id"]: dict(row)
        for row in Nugget.objects.filter(bank=bank, merged_into__isnull=True)
        .values("turn_id")
        .annotate(n=Count("id"), vital=Count("id", filter=Q(importance=Nugget.Importance.VITAL)))
    }
    turns = Turn.objects.filter(collection_id=bank.collection_id).select_related("conversation")
    return [
        {"turn": t, "n": counts.get(t.pk, {}).get("n", 0), "vital": counts.get(t.pk, {}).get("vital", 0)}
        for t in turns.order_by("conversation__topic_id", "number")
    ]


def turn_neighbours(*, bank: NuggetBank, turn_id: int) -> tuple[int | None, int | None]:
    """The turns before and after ``turn_id`` in the bank's list (topic, then number): the editor's ←/→."""
    order = list(
        Turn.objects.filter(collection_id=bank.collection_id)
        .order_by("conversation__topic_id", "number")
        .values_list("pk", flat=True)
    )
    at = order.index(turn_id)
    return (order[at - 1] if at > 0 else None), (order[at + 1] if at + 1 < len(order) else None)


def relevant_passages(*, turn: Turn, version: QrelsVersion | None) -> list[dict[str, Any]]:
    """The turn's passages the version grades at or above the collection's threshold, best first, with text."""
    if version is None:
        return []
    threshold = turn.collection.relevance_threshold
    qrels = list(
        Qrel.objects.filter(version=version, turn=turn, grade__gte=threshold).order_by("-grade", "passage_id")[:200]
    )
    texts = dict(Passage.objects.filter(passage_id__in=[q.passage_id for q in qrels]).values_list("passage_id", "text"))
    return [{"id": q.passage_id, "grade": q.grade, "text": texts.get(q.passage_id) or ""} for q in qrels]


def nugget_rows(*, bank: NuggetBank, turn_id: int) -> list[dict[str, Any]]:
    """The turn's nuggets of the bank in the bank's order, merged ones last with whom they were merged into."""
    nuggets = list(Nugget.objects.filter(bank=bank, turn_id=turn_id).annotate(n_labels=Count("assignments")))
    nuggets.sort(key=lambda n: (n.merged_into_id is not None, n.position, n.pk))
    return [
        {"id": n.pk, "text": n.text, "importance": n.importance, "grade": n.grade, "origin": n.origin,
         "source_passages": list(n.source_passages), "merged_into": n.merged_into_id, "labels": n.n_labels,
         "history": len(n.history)}
        for n in nuggets
    ]  # fmt: skip
