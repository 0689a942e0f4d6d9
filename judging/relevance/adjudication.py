"""Adjudication of two qrels versions (two assessors, crowd against NIST, human against LLM): the items they grade
differently go into a queue, and an adjudicator sets each one's final grade into a new version.

The new version, "adjudicated: A vs B", is made from A (its parent) but is not a copy of A: it holds every item
both versions grade alike, every item only one of them grades (with that one's grade), and, as they are decided,
the adjudicated items. An item still waiting in the queue has no row, so until it is decided it counts as unjudged,
never silently as A's (or B's) grade; when the queue is empty the version grades exactly the items A or B grade.
It is a normal qrels version: leaderboards, agreement and exports read it, and every final grade set here is
announced like any new judgment, so its scores recompute live.

Who adjudicates: admins, who make the adjudication from the agreement report, and assessors, who find the open
queues under "My judging queue". Raters never see them.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Count, Q, QuerySet
from django.http import Http404
from django.utils import timezone

from ecast.models import Passage
from evaluation import events
from evaluation.agreement import selectors as agreement
from evaluation.models import Qrel, QrelsVersion
from judging.models import Adjudication, AdjudicationItem
from judging.relevance.selectors import conversation_context

# How many waiting items one page load carries: a large disagreement set is worked through a batch at a time, so
# the page never ships thousands of passages.
BATCH = 100
GRADES = range(0, 5)
BINARY = range(0, 2)


# ---------------------------------------------------------------- writes


@transaction.atomic
def adjudication_create(*, a: QrelsVersion, b: QrelsVersion, created_by: Any = None) -> Adjudication:
    """Make "adjudicated: A vs B" with the agreed and one-sided items, and queue the items A and B grade
    differently; the adjudication of A and B already made is returned as it is (the button pressed twice)."""
    agreement.check_pair(a=a, b=b)
    existing = Adjudication.objects.filter(version_a=a, version_b=b).select_related("version").first()
    if existing is not None:
        return existing
    name = agreement.adjudicated_version_name(a=a, b=b)
    taken = ValidationError({"name": f"a qrels version named {name!r} already exists in this collection"})
    if QrelsVersion.objects.filter(collection_id=a.collection_id, name=name).exists():
        raise taken
    version = QrelsVersion(
        collection_id=a.collection_id,
        name=name,
        parent=a,
        description=f"Items {a.name} and {b.name} grade alike or only one of them grades, plus the final grades "
        "set where they disagree.",
        created_by=created_by,
    )
    version.full_clean()
    try:
        with transaction.atomic():
            version.save()
    except IntegrityError as exc:
        # The same button pressed twice at once: the other request made it first.
        made = Adjudication.objects.filter(version_a=a, version_b=b).select_related("version").first()
        if made is None:
            raise taken from exc
        return made
    rows_a = {(t, p): (g, s) for t, p, g, s in Qrel.objects.filter(version=a).values_list(*_ROW)}
    rows_b = {(t, p): (g, s) for t, p, g, s in Qrel.objects.filter(version=b).values_list(*_ROW)}
    binary = all(g in (0, 1) for g, _ in (*rows_a.values(), *rows_b.values()))
    adjudication = Adjudication(version=version, version_a=a, version_b=b, binary=binary, created_by=created_by)
    adjudication.full_clean()
    adjudication.save()
    keep, queue = [], []
    for key in rows_a.keys() | rows_b.keys():
        in_a, in_b = rows_a.get(key), rows_b.get(key)
        if in_a is not None and in_b is not None and in_a[0] != in_b[0]:
            queue.append(
                AdjudicationItem(
                    adjudication=adjudication, turn_id=key[0], passage_id=key[1], grade_a=in_a[0], grade_b=in_b[0]
                )
            )
            continue
        grade, source = in_a or in_b  # type: ignore[misc]
        keep.append(Qrel(version=version, turn_id=key[0], passage_id=key[1], grade=grade, source=source))
    Qrel.objects.bulk_create(keep, batch_size=1000)
    AdjudicationItem.objects.bulk_create(queue, batch_size=1000)
    return adjudication


_ROW = ("turn_id", "passage_id", "grade", "source")


def grade_of(item: AdjudicationItem, grade: Any, *, binary: bool = False) -> int | None:
    """The final grade a submit asks for: 0–4 (0/1 when both versions are binary), "a" or "b" (that version's
    grade), or None (undo)."""
    if grade is None:
        return None
    if grade in ("a", "b"):
        return item.grade_a if grade == "a" else item.grade_b
    allowed = BINARY if binary else GRADES
    if isinstance(grade, bool) or not isinstance(grade, int) or grade not in allowed:
        scale = "0 or 1 (both versions grade relevant or not)" if binary else "an integer 0–4"
        raise ValidationError({"grade": f'must be {scale}, "a", "b" or null (undo), got {grade!r}'})
    return grade


@transaction.atomic
def adjudication_submit(*, item: AdjudicationItem, grade: Any, user: Any) -> tuple[AdjudicationItem, bool]:
    """Set (or, with None, take back) an item's final grade and write it into the adjudicated version.

    Returns ``(item, changed)``: a repeat of the stored grade changes nothing. A changed grade keeps the one it
    replaces in ``history`` and tells evaluation which turn changed.
    """
    item = AdjudicationItem.objects.select_for_update().select_related("adjudication").get(pk=item.pk)
    final = grade_of(item, grade, binary=item.adjudication.binary)
    if item.grade == final:
        return item, False
    now = timezone.now()
    if item.grade is not None:
        by = item.adjudicated_by.get_username() if item.adjudicated_by else ""
        item.history = [*item.history, {"grade": item.grade, "by": by, "at": item.adjudicated_at.isoformat()}]  # type: ignore[union-attr]
    item.grade = final
    item.adjudicated_by = user if final is not None else None
    item.adjudicated_at = now if final is not None else None
    item.full_clean()
    item.save(update_fields=["grade", "adjudicated_by", "adjudicated_at", "history"])
    version_id = item.adjudication.version_id
    rows = Qrel.objects.filter(version_id=version_id, turn_id=item.turn_id, passage_id=item.passage_id)
    if final is None:
        rows.delete()
    elif not rows.update(grade=final, source=Qrel.Source.ASSESSED):
        Qrel.objects.create(
            version_id=version_id,
            turn_id=item.turn_id,
            passage_id=item.passage_id,
            grade=final,
            source=Qrel.Source.ASSESSED,
        )
    QrelsVersion.objects.filter(pk=version_id).update(updated_at=now)
    events.qrels_changed(version_id=version_id, turn_ids=[item.turn_id])
    return item, True


# ---------------------------------------------------------------- reads


def adjudication_for_version(*, version_id: int) -> Adjudication:
    """The adjudication that writes into a version; 404 for a version no adjudication made."""
    found = (
        Adjudication.objects.select_related("version", "version_a", "version_b", "version__collection")
        .filter(version_id=version_id)
        .first()
    )
    if found is None:
        raise Http404("No adjudication writes into this qrels version.")
    return found


def adjudication_item(*, adjudication: Adjudication, pk: int) -> AdjudicationItem:
    """One item of the adjudication's queue; 404 for an item of another one."""
    item = AdjudicationItem.objects.filter(adjudication=adjudication, pk=pk).first()
    if item is None:
        raise Http404("No such item in this adjudication.")
    return item


def adjudication_progress(*, adjudication: Adjudication) -> dict[str, int]:
    """How many of the queued disagreements have a final grade, of how many."""
    counts = AdjudicationItem.objects.filter(adjudication=adjudication).aggregate(
        total=Count("id"), done=Count("id", filter=Q(grade__isnull=False))
    )
    return {"done": counts["done"], "total": counts["total"]}


def adjudications_open() -> QuerySet[Adjudication]:
    """Adjudications with items still waiting, newest first, with ``done``, ``waiting``, ``total`` counts."""
    return (
        Adjudication.objects.select_related("version", "version_a", "version_b", "version__collection")
        .annotate(
            total=Count("items"),
            done=Count("items", filter=Q(items__grade__isnull=False)),
            waiting=Count("items", filter=Q(items__grade__isnull=True)),
        )
        .filter(waiting__gt=0)
    )


def adjudication_batch(*, adjudication: Adjudication, size: int = BATCH) -> dict[str, Any]:
    """What the adjudication page needs: the next ``size`` waiting items in conversation order, with passage text,
    both grades and each conversation's turns."""
    items = list(
        AdjudicationItem.objects.filter(adjudication=adjudication, grade__isnull=True)
        .select_related("turn", "turn__conversation")
        .order_by("turn__conversation_id", "turn__number", "passage_id")[:size]
    )
    texts = dict(Passage.objects.filter(passage_id__in={i.passage_id for i in items}).values_list("passage_id", "text"))
    conversations = {i.turn.conversation_id: i.turn.conversation for i in items}
    contexts = {pk: conversation_context(conversation_id=pk) for pk in conversations}
    # A PTKB companion's items are statement numbers of the conversation's PTKB: the page shows the statement.
    ptkb = adjudication.version.collection.ptkb_of_id is not None
    statements = {(pk, str(s["number"])): s["text"] for pk, ctx in contexts.items() for s in ctx["ptkb"]}

    def text_of(i: AdjudicationItem) -> str:
        if ptkb:
            return statements.get((i.turn.conversation_id, i.passage_id), "")
        return texts.get(i.passage_id, "")

    return {
        "items": [
            {
                "id": i.pk,
                "conversation": i.turn.conversation_id,
                "topic_id": i.turn.conversation.topic_id,
                "turn_id": i.turn.turn_id,
                "turn_number": i.turn.number,
                "passage_id": i.passage_id,
                "text": text_of(i),
                "a": i.grade_a,
                "b": i.grade_b,
                "grade": i.grade,
            }
            for i in items
        ],
        "conversations": {str(pk): {"description": c.description, **contexts[pk]} for pk, c in conversations.items()},
    }
