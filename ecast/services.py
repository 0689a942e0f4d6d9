"""Dataset writes: collections and paraphrase curation. Keyword-only, atomic, validated before saving.

Paraphrases are never overwritten: an edit makes a new row (origin=edited, ``edited_from`` → old row) and retires the
old one (``is_current=False``), so the history chain stays queryable and releases can cite exactly what was rated.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from ecast.models import Collection, Conversation, Paraphrase, PtkbStatement, Turn

_COLLECTION_FIELDS = ("name", "year", "corpus_note", "relevance_threshold")


@transaction.atomic
def collection_create(
    *, name: str, year: int | None = None, corpus_note: str = "", relevance_threshold: int = 1
) -> Collection:
    """Create a collection; the name must be unique and the threshold a relevance grade 0–4."""
    _check_threshold(relevance_threshold)
    collection = Collection(
        name=name.strip(), year=year, corpus_note=corpus_note, relevance_threshold=relevance_threshold
    )
    collection.full_clean()
    collection.save()
    return collection


@transaction.atomic
def collection_update(*, collection: Collection, **fields: Any) -> Collection:
    """Change name, year, corpus note or relevance threshold of a collection."""
    unknown = set(fields) - set(_COLLECTION_FIELDS)
    if unknown:
        raise ValidationError(f"Unknown collection field(s): {', '.join(sorted(unknown))}")
    if "relevance_threshold" in fields:
        _check_threshold(fields["relevance_threshold"])
    if "name" in fields:
        fields["name"] = str(fields["name"]).strip()
    for key, value in fields.items():
        setattr(collection, key, value)
    collection.full_clean()
    collection.save()
    return collection


@transaction.atomic
def collection_delete(*, collection: Collection) -> None:
    """Delete a collection with its conversations, turns, paraphrases, qrels and runs."""
    collection.delete()


def _check_threshold(value: Any) -> None:
    if not isinstance(value, int) or not 0 <= value <= 4:
        raise ValidationError({"relevance_threshold": "The relevance threshold must be a grade between 0 and 4."})


def _lock(paraphrase: Paraphrase) -> Paraphrase:
    # Re-read under a row lock so two curators acting on the same row cannot interleave.
    return Paraphrase.objects.select_for_update().get(pk=paraphrase.pk)


def _set_status(paraphrase: Paraphrase, status: str) -> Paraphrase:
    """Give a current paraphrase and its pair partner one status: a manual/raw pair is decided as a unit, so a release
    never meets a half-approved pair made by a single click."""
    ids = sorted({paraphrase.pk, *([paraphrase.pair_id] if paraphrase.pair_id else [])})
    # Both rows locked in primary-key order, so curators acting on either member at once cannot deadlock.
    rows = {p.pk: p for p in Paraphrase.objects.select_for_update().filter(pk__in=ids).order_by("pk")}
    row = rows[paraphrase.pk]
    if not row.is_current:
        raise ValidationError("This paraphrase has been edited since; act on its current version.")
    members = [row.pk]
    if row.pair_id:
        if row.pair_id not in rows:  # re-pointed by an edit between the read and the lock
            rows[row.pair_id] = Paraphrase.objects.select_for_update().get(pk=row.pair_id)
        if rows[row.pair_id].is_current:
            members.append(row.pair_id)
    Paraphrase.objects.filter(pk__in=members).update(status=status, updated_at=timezone.now())
    row.refresh_from_db()
    return row


@transaction.atomic
def paraphrase_approve(*, paraphrase: Paraphrase, user: Any = None) -> Paraphrase:
    """Approve a current paraphrase together with its pair partner."""
    return _set_status(paraphrase, Paraphrase.Status.APPROVED)


@transaction.atomic
def paraphrase_reject(*, paraphrase: Paraphrase, user: Any = None) -> Paraphrase:
    """Reject a current paraphrase together with its pair partner."""
    return _set_status(paraphrase, Paraphrase.Status.REJECTED)


@transaction.atomic
def paraphrase_reset(*, paraphrase: Paraphrase, user: Any = None) -> Paraphrase:
    """Put a current paraphrase and its pair partner back to candidate (undo approve/reject)."""
    return _set_status(paraphrase, Paraphrase.Status.CANDIDATE)


BULK_STATUSES = (Paraphrase.Status.APPROVED, Paraphrase.Status.REJECTED, Paraphrase.Status.CANDIDATE)


@transaction.atomic
def paraphrase_bulk_status(*, paraphrases: QuerySet[Paraphrase], status: str, user: Any = None) -> dict[str, int]:
    """Give every current paraphrase of ``paraphrases`` and its pair partner ``status``, in one transaction.

    Returns the number of pairs (a lone paraphrase counts as one) and of paraphrase rows changed."""
    if status not in BULK_STATUSES:
        raise ValidationError(f"status must be one of {', '.join(BULK_STATUSES)}")
    chosen = paraphrases.filter(is_current=True)
    ids = set(chosen.values_list("pk", flat=True))
    ids |= set(chosen.filter(pair__is_current=True).values_list("pair_id", flat=True))
    ordered = sorted(ids)
    if not ordered:
        return {"pairs": 0, "paraphrases": 0}
    locked = Paraphrase.objects.select_for_update().filter(pk__in=ordered).order_by("pk")
    pairs = {min(pk, pair) if pair in ids else pk for pk, pair in locked.values_list("pk", "pair_id")}
    stale = Paraphrase.objects.filter(pk__in=ordered).exclude(status=status)
    changed = stale.update(status=status, updated_at=timezone.now())
    return {"pairs": len(pairs), "paraphrases": changed}


def _clean_text(text: str, field: str) -> str:
    cleaned = " ".join((text or "").split())
    if not cleaned:
        raise ValidationError({field: "The paraphrase text may not be empty."})
    return cleaned


@transaction.atomic
def paraphrase_edit(*, paraphrase: Paraphrase, text: str, user: Any = None, status: str | None = None) -> Paraphrase:
    """Replace a paraphrase's text by a new row (origin=edited) and return it; the old row stops being current.

    The new row keeps the old row's status unless ``status`` is given, its provenance (plus who edited) and its
    pair link; the partner row is re-pointed at the new row so the manual/raw pair stays intact.
    """
    old = _lock(paraphrase)
    if not old.is_current:
        raise ValidationError("This paraphrase has already been edited; edit its current version.")
    new_text = _clean_text(text, "text")
    if new_text == old.text:
        raise ValidationError({"text": "The text is unchanged."})
    provenance = dict(old.provenance or {})
    provenance["edit"] = {
        "from_id": old.pk,
        "from_origin": old.origin,
        "by": getattr(user, "username", None),
    }
    new = Paraphrase(
        turn_id=old.turn_id,
        kind=old.kind,
        text=new_text,
        status=status or old.status,
        origin=Paraphrase.Origin.EDITED,
        provenance=provenance,
        edited_from=old,
        pair_id=old.pair_id,
        is_current=True,
        created_by=user if getattr(user, "is_authenticated", False) else None,
    )
    new.full_clean(exclude=["turn", "edited_from", "pair", "created_by"])
    old.is_current = False
    old.save(update_fields=["is_current", "updated_at"])
    new.save()
    if old.pair_id:
        Paraphrase.objects.filter(pk=old.pair_id).update(pair=new)
    return new


@transaction.atomic
def paraphrase_add(
    *,
    turn: Turn,
    manual_text: str,
    raw_text: str | None = None,
    user: Any = None,
    origin: str = Paraphrase.Origin.ADDED,
    status: str = Paraphrase.Status.CANDIDATE,
    provenance: dict | None = None,
) -> tuple[Paraphrase, Paraphrase]:
    """Add a manual + raw paraphrase pair to a turn and return (manual, raw).

    First turns carry full context, so their raw paraphrase defaults to the manual one (ECAsT); later turns need
    an explicit raw (context-dependent) paraphrase. System turns of a conversation tree take none.
    """
    if turn.is_system:
        raise ValidationError(
            {
                "turn": f"Turn {turn.turn_id} is a System turn, the system's side of the conversation: it has no "
                "utterance to paraphrase, so it takes no paraphrase pairs."
            }
        )
    manual = _clean_text(manual_text, "manual_text")
    if raw_text is None or not raw_text.strip():
        if turn.number != 1:
            raise ValidationError({"raw_text": "A raw (context-dependent) paraphrase is required after turn 1."})
        raw = manual
    else:
        raw = _clean_text(raw_text, "raw_text")
    if origin not in Paraphrase.Origin.values:
        raise ValidationError({"origin": f"Unknown origin {origin!r}."})
    if status not in Paraphrase.Status.values:
        raise ValidationError({"status": f"Unknown status {status!r}."})
    prov = dict(provenance or {})
    if origin == Paraphrase.Origin.ADDED:
        prov.setdefault("added_by", getattr(user, "username", None))
    creator = user if getattr(user, "is_authenticated", False) else None
    rows = []
    for kind, text in ((Paraphrase.Kind.MANUAL, manual), (Paraphrase.Kind.RAW, raw)):
        row = Paraphrase(
            turn=turn, kind=kind, text=text, status=status, origin=origin, provenance=prov, created_by=creator
        )
        row.full_clean(exclude=["turn", "edited_from", "pair", "created_by"])
        row.save()
        rows.append(row)
    manual_row, raw_row = rows
    manual_row.pair = raw_row
    raw_row.pair = manual_row
    manual_row.save(update_fields=["pair"])
    raw_row.save(update_fields=["pair"])
    return manual_row, raw_row


# ---------------------------------------------------------------- PTKB companion collections (TREC iKAT)

# Turn fields that tie a turn to its place; everything else is copied, so fields other features add travel too.
_TURN_PLACE = ("id", "conversation", "collection")


def ptkb_companion_name(collection: Collection) -> str:
    """The name of a collection's PTKB companion: "<name> PTKB" (cut to the field's length)."""
    limit = Collection._meta.get_field("name").max_length or 100
    return f"{collection.name[: limit - 5]} PTKB"


@transaction.atomic
def ptkb_collection_sync(*, collection: Collection) -> Collection:
    """The PTKB companion of an iKAT collection, created or brought in line with it: the same conversations (topic
    ids), turns (turn ids and texts) and PTKB statements; its items are statement numbers, graded 0/1.

    Assessments of which statements matter for a turn are then qrels versions of the companion and statement
    rankings its runs, so judging, evaluation and agreement treat them like any collection's. Given a companion,
    its source is synced. Turns the source lost stay in the companion with their judgments.
    """
    source = collection.ptkb_source
    if not PtkbStatement.objects.filter(conversation__collection=source).exists():
        raise ValidationError(f"{source.name} has no PTKB statements: import its iKAT topics first.")
    companion = Collection.objects.select_for_update().filter(ptkb_of=source).first()
    if companion is None:
        name = ptkb_companion_name(source)
        if Collection.objects.filter(name=name).exists():
            raise ValidationError(f"A collection named {name!r} exists and is not the PTKB of {source.name}.")
        companion = Collection(
            name=name,
            year=source.year,
            ptkb_of=source,
            corpus_note=f"PTKB statements of {source.name}: item ids are statement numbers within a conversation.",
            relevance_threshold=1,
        )
        companion.full_clean()
        companion.save()
    convs = _ptkb_sync_conversations(source, companion)
    _ptkb_sync_turns(source, companion, convs)
    return companion


def _ptkb_sync_conversations(source: Collection, companion: Collection) -> dict[int, int]:
    """Mirror conversations and their statements; returns {source conversation pk: companion conversation pk}."""
    mine = {c.topic_id: c for c in Conversation.objects.filter(collection=companion)}
    mapping: dict[int, int] = {}
    for conv in Conversation.objects.filter(collection=source).order_by("id"):
        copy = mine.get(conv.topic_id)
        if copy is None:
            copy = Conversation.objects.create(
                collection=companion, topic_id=conv.topic_id, title=conv.title, description=conv.description
            )
        elif (copy.title, copy.description) != (conv.title, conv.description):
            copy.title, copy.description = conv.title, conv.description
            copy.save(update_fields=["title", "description"])
        mapping[conv.pk] = copy.pk
    wanted: dict[int, list[tuple[int, str]]] = {pk: [] for pk in mapping.values()}
    for conv_pk, number, text in PtkbStatement.objects.filter(conversation__collection=source).values_list(
        "conversation_id", "number", "text"
    ):
        wanted[mapping[conv_pk]].append((number, text))
    have: dict[int, list[tuple[int, str]]] = {pk: [] for pk in mapping.values()}
    for conv_pk, number, text in PtkbStatement.objects.filter(conversation__collection=companion).values_list(
        "conversation_id", "number", "text"
    ):
        have.setdefault(conv_pk, []).append((number, text))
    stale = [pk for pk in wanted if sorted(wanted[pk]) != sorted(have.get(pk, []))]
    PtkbStatement.objects.filter(conversation_id__in=stale).delete()
    PtkbStatement.objects.bulk_create(
        [PtkbStatement(conversation_id=pk, number=n, text=t) for pk in stale for n, t in wanted[pk]]
    )
    return mapping


def _ptkb_sync_turns(source: Collection, companion: Collection, convs: dict[int, int]) -> None:
    """Mirror turns by turn id, copying every field but their place (links between turns are re-pointed)."""
    fields = [f for f in Turn._meta.concrete_fields if f.name not in _TURN_PLACE]
    links = [f for f in fields if f.is_relation and f.related_model is Turn]
    plain = [f for f in fields if f not in links]
    src = list(Turn.objects.filter(collection=source).order_by("conversation_id", "number"))
    mine = {t.turn_id: t for t in Turn.objects.filter(collection=companion)}
    to_create, to_update = [], []
    for turn in src:
        values = {f.attname: getattr(turn, f.attname) for f in plain}
        copy = mine.get(turn.turn_id)
        if copy is None:
            to_create.append(Turn(collection=companion, conversation_id=convs[turn.conversation_id], **values))
        elif any(getattr(copy, k) != v for k, v in values.items()):
            for k, v in values.items():
                setattr(copy, k, v)
            to_update.append(copy)
    Turn.objects.bulk_create(to_create, batch_size=500)
    if to_update:
        Turn.objects.bulk_update(to_update, [f.name for f in plain], batch_size=500)
    if not links:
        return
    by_pk = {t.pk: t.turn_id for t in src}
    mine = {t.turn_id: t for t in Turn.objects.filter(collection=companion)}
    relinked = []
    for turn in src:
        copy = mine[turn.turn_id]
        changed = False
        for f in links:
            target = getattr(turn, f.attname)
            value = mine[by_pk[target]].pk if target in by_pk else None
            if getattr(copy, f.attname) != value:
                setattr(copy, f.attname, value)
                changed = True
        if changed:
            relinked.append(copy)
    if relinked:
        Turn.objects.bulk_update(relinked, [f.name for f in links], batch_size=500)
