"""Nugget banks by hand: new banks (empty, or a copy of another to post-edit), nuggets added from a span of a
judged-relevant passage, edited (the earlier text kept in ``history``), given an importance, deleted, merged.

Who may edit a bank: admins any; an assessor the banks they made and the banks of the open nugget tasks they may
judge (the bank they assign is the one they are most likely to find a gap or a duplicate in).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import transaction
from django.db.models import Max, Q
from django.utils import timezone

from ecast.core.permissions import is_admin, is_assessor
from ecast.models import Collection, Turn
from evaluation.models import Nugget, NuggetBank
from evaluation.responses.services import nugget_bank_touch
from judging.models import ResponseTask
from judging.nuggets.leasing import TaskError, tasks_judgeable_by

MAX_NUGGET_CHARS = 2000


def banks_editable_by(user: Any):
    """The banks the user may edit (see the module docstring)."""
    if is_admin(user):
        return NuggetBank.objects.all()
    if not is_assessor(user):
        return NuggetBank.objects.none()
    tasks = tasks_judgeable_by(user).filter(status=ResponseTask.Status.OPEN, bank__isnull=False)
    return NuggetBank.objects.filter(Q(created_by=user) | Q(pk__in=tasks.values("bank_id"))).distinct()


def may_edit(user: Any, bank: NuggetBank) -> bool:
    return banks_editable_by(user).filter(pk=bank.pk).exists()


def _check(user: Any, bank: NuggetBank) -> None:
    if not may_edit(user, bank):
        raise TaskError("No such nugget bank among those you may edit.", code="not_found")


@transaction.atomic
def bank_create(
    *, collection: Collection, name: str, copy_of: NuggetBank | None = None, description: str = "", user: Any
) -> NuggetBank:
    """A new bank: empty, or a copy of ``copy_of`` (its parent) to post-edit; merged nuggets are not copied."""
    name = name.strip()
    if not name:
        raise TaskError("name: give the bank a name (e.g. “post-edited”)")
    if copy_of is not None and copy_of.collection_id != collection.pk:
        raise TaskError("copy_of: a bank of another collection")
    if NuggetBank.objects.filter(collection=collection, name=name).exists():
        raise TaskError(f"name: {collection.name} already has a bank named {name!r}", code="conflict")
    bank = NuggetBank.objects.create(
        collection=collection, name=name, parent=copy_of, description=description, created_by=user
    )
    if copy_of is not None:
        keep = ("turn_id", "position", "text", "importance", "grade", "origin", "source_passages", "external_id")
        Nugget.objects.bulk_create(
            [
                Nugget(bank=bank, provenance={**n.provenance, "copied_from": n.pk}, **{f: getattr(n, f) for f in keep})
                for n in copy_of.nuggets.filter(merged_into__isnull=True).order_by("turn_id", "position", "id")
            ]
        )
    return bank


def _text(text: str) -> str:
    text = " ".join(str(text).split())
    if not text:
        raise TaskError("text: a nugget needs some text")
    if len(text) > MAX_NUGGET_CHARS:
        raise TaskError(f"text: at most {MAX_NUGGET_CHARS} characters")
    return text


def _importance(value: str) -> str:
    if value not in Nugget.Importance.values:
        raise TaskError(f"importance: vital or okay, got {value!r}")
    return value


@transaction.atomic
def nugget_add(
    *,
    bank: NuggetBank,
    turn: Turn,
    text: str,
    user: Any,
    importance: str = Nugget.Importance.OKAY,
    source_passages: Sequence[str] = (),
) -> Nugget:
    """A nugget a person added (from a span of a passage: ``source_passages`` names it), last of its turn."""
    _check(user, bank)
    if turn.collection_id != bank.collection_id:
        raise TaskError("turn: not a turn of the bank's collection")
    NuggetBank.objects.select_for_update().filter(pk=bank.pk).first()  # positions handed out one at a time
    last = Nugget.objects.filter(bank=bank, turn=turn).aggregate(m=Max("position"))["m"]
    nugget = Nugget.objects.create(
        bank=bank,
        turn=turn,
        position=0 if last is None else last + 1,
        text=_text(text),
        importance=_importance(importance),
        origin=Nugget.Origin.ADDED,
        source_passages=[str(p)[:200] for p in source_passages][:20],
        provenance={"by": user.username},
    )
    nugget_bank_touch(bank=bank)
    return nugget


@transaction.atomic
def nugget_edit(*, nugget: Nugget, user: Any, text: str | None = None, importance: str | None = None) -> bool:
    """Change a nugget's text (origin becomes "edited" unless a person added it) or importance; the earlier
    version goes to ``history``. False when nothing changed."""
    _check(user, nugget.bank)
    nugget = Nugget.objects.select_for_update().get(pk=nugget.pk)
    new_text = nugget.text if text is None else _text(text)
    new_importance = nugget.importance if importance is None else _importance(importance)
    if (new_text, new_importance) == (nugget.text, nugget.importance):
        return False
    nugget.history = [
        *nugget.history,
        {"text": nugget.text, "importance": nugget.importance, "at": timezone.now().isoformat(), "by": user.username},
    ]
    if new_text != nugget.text and nugget.origin != Nugget.Origin.ADDED:
        nugget.origin = Nugget.Origin.EDITED
    nugget.text, nugget.importance = new_text, new_importance
    nugget.save()
    nugget_bank_touch(bank=nugget.bank)
    return True


@transaction.atomic
def nugget_delete(*, nugget: Nugget, user: Any) -> None:
    """Delete a nugget nobody has assigned yet; one with labels is merged or kept (the labels would go too)."""
    _check(user, nugget.bank)
    if nugget.assignments.exists():
        raise TaskError(
            "This nugget already has labels; merge it into its duplicate instead of deleting it.", code="conflict"
        )
    Nugget.objects.filter(merged_into=nugget).update(merged_into=None)
    bank = nugget.bank
    nugget.delete()
    nugget_bank_touch(bank=bank)


@transaction.atomic
def nugget_merge(*, nugget: Nugget, into: Nugget, user: Any) -> None:
    """Mark ``nugget`` a duplicate of ``into`` (same bank and turn): it leaves queues and scores, its labels stay."""
    _check(user, nugget.bank)
    if nugget.pk == into.pk:
        raise TaskError("into: a nugget cannot be merged into itself")
    if (nugget.bank_id, nugget.turn_id) != (into.bank_id, into.turn_id):
        raise TaskError("into: merge nuggets of the same bank and turn")
    if into.merged_into_id is not None:
        raise TaskError("into: that nugget is itself merged; merge into the one it was merged into")
    Nugget.objects.filter(merged_into=nugget).update(merged_into=into)
    nugget.merged_into = into
    nugget.save(update_fields=["merged_into", "updated_at"])
    nugget_bank_touch(bank=nugget.bank)
