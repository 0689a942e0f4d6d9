"""Dataset reads for the curation pages and the API, and what every job page shows about worker loss."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from django.db.models import Count, F, OuterRef, Prefetch, Q, QuerySet, Subquery

from ecast import curation, trees
from ecast.models import Collection, Conversation, ImportJob, Paraphrase, Participant, PtkbStatement, Turn


def collection_list() -> QuerySet[Collection]:
    """Collections with conversation, turn and current-paraphrase counts."""
    return Collection.objects.annotate(
        n_conversations=Count("conversations", distinct=True),
        n_turns=Count("turns", distinct=True),
    ).order_by("-year", "name")


def paraphrase_counts(*, collection: Collection) -> dict[str, int]:
    """Current paraphrases of a collection by status."""
    rows = (
        Paraphrase.objects.filter(turn__collection=collection, is_current=True).values("status").annotate(n=Count("id"))
    )
    counts = {status: 0 for status in Paraphrase.Status.values}
    counts.update({row["status"]: row["n"] for row in rows})
    return counts


def conversation_list(*, collection: Collection) -> QuerySet[Conversation]:
    """A collection's conversations with turn and current-paraphrase counts, and the first turn's question (what a
    page shows when the topic file gave no title: CAsT 2020 and 2021 topics have none)."""
    first = Turn.objects.filter(conversation=OuterRef("pk")).order_by("number").values("raw_utterance")[:1]
    return (
        Conversation.objects.filter(collection=collection)
        .annotate(
            first_question=Subquery(first),
            n_turns=Count("turns", distinct=True),
            n_paraphrases=Count("turns__paraphrases", filter=Q(turns__paraphrases__is_current=True)),
            n_approved=Count(
                "turns__paraphrases",
                filter=Q(turns__paraphrases__is_current=True, turns__paraphrases__status="approved"),
            ),
        )
        .order_by("id")
    )


def turn_list(*, conversation: Conversation) -> QuerySet[Turn]:
    """A conversation's turns with counts of current paraphrases by status."""
    current = Q(paraphrases__is_current=True)
    current_rows = Prefetch(
        "paraphrases", queryset=Paraphrase.objects.filter(is_current=True).order_by("id"), to_attr="current_paraphrases"
    )
    return (
        Turn.objects.filter(conversation=conversation)
        .select_related("parent")
        .prefetch_related(current_rows)
        .annotate(
            n_paraphrases=Count("paraphrases", filter=current),
            n_approved=Count("paraphrases", filter=current & Q(paraphrases__status="approved")),
            n_rejected=Count("paraphrases", filter=current & Q(paraphrases__status="rejected")),
        )
        .order_by("number")
    )


def paraphrase_search(
    *,
    collection: Collection | None = None,
    q: str = "",
    status: str = "",
    kind: str = "",
    origin: str = "",
    utterance_class: str = "",
    include_history: bool = False,
    half_decided: bool = False,
    job: int | None = None,
) -> QuerySet[Paraphrase]:
    """Paraphrases whose text, or whose turn's utterance or rewrites, contain ``q``; filtered and ordered by turn.

    ``half_decided`` keeps paraphrases whose pair partner has another status (e.g. approved manual, candidate raw);
    ``job`` keeps what one generation job wrote (its id is in each output's provenance)."""
    qs = Paraphrase.objects.select_related("turn", "turn__conversation", "turn__collection", "pair")
    if half_decided:
        qs = qs.filter(pair__isnull=False, pair__is_current=True).exclude(status=F("pair__status"))
    if collection is not None:
        qs = qs.filter(turn__collection=collection)
    if not include_history:
        qs = qs.filter(is_current=True)
    if q.strip():
        term = q.strip()
        qs = qs.filter(
            Q(text__icontains=term)
            | Q(turn__raw_utterance__icontains=term)
            | Q(turn__manual_rewrite__icontains=term)
            | Q(turn__automatic_rewrite__icontains=term)
        )
    if status:
        qs = qs.filter(status=status)
    if kind:
        qs = qs.filter(kind=kind)
    if origin:
        qs = qs.filter(origin=origin)
    if utterance_class:
        qs = qs.filter(turn__utterance_class=utterance_class)
    if job is not None:
        qs = qs.filter(provenance__job=job)
    return qs.order_by("turn__collection_id", "turn__conversation_id", "turn__number", "id")


def paraphrase_history(*, paraphrase: Paraphrase) -> list[Paraphrase]:
    """The edit chain containing ``paraphrase``, oldest first (follows ``edited_from`` back and edits forward)."""
    root = paraphrase
    seen = {root.pk}
    while root.edited_from_id and root.edited_from_id not in seen:
        root = Paraphrase.objects.select_related("created_by").get(pk=root.edited_from_id)
        seen.add(root.pk)
    chain = [root]
    current = root
    while True:
        nxt = Paraphrase.objects.select_related("created_by").filter(edited_from=current).order_by("id").first()
        if nxt is None or nxt.pk in {p.pk for p in chain}:
            break
        chain.append(nxt)
        current = nxt
    return chain


def provenance_summary(provenance: dict | None) -> str:
    """A one-line summary of what produced a paraphrase: stage, backend, model, seed, job, or source file + line."""
    if not provenance:
        return ""
    # Who added or edited a row is shown from created_by; this line says what produced the text.
    p = provenance
    parts = []
    if p.get("stage"):
        parts.append(str(p["stage"]))
    for key in ("backend", "model", "model_id", "revision", "seed"):
        if p.get(key) not in (None, "", [], {}):
            parts.append(f"{key}={p[key]}")
    if p.get("job") not in (None, ""):
        parts.append(f"job {p['job']}")
    source = p.get("source") or p.get("source_file") or p.get("file")
    if source in ("r", "m"):
        parts.append(f"from {source}_i")
    elif source:
        where = str(source) + (f" line {p['line']}" if p.get("line") else "")
        parts.append(f"{p['format']}: {where}" if p.get("format") else where)
    return " · ".join(parts)


@dataclass
class ParaphraseRow:
    """One paraphrase as shown on the turn page, with its highlighted text and edit history."""

    paraphrase: Paraphrase
    highlighted: str
    provenance: str
    history: list[Paraphrase] = field(default_factory=list)


class PairRow(NamedTuple):
    """One row of the turn page: a manual/raw pair (a lone member fills one side)."""

    manual: ParaphraseRow | None
    raw: ParaphraseRow | None

    @property
    def undecided(self) -> bool:
        """Whether a member is still a candidate: the rows a curator still has to decide."""
        return pair_undecided(tuple(row.paraphrase if row else None for row in self))


@dataclass
class TurnPage:
    """Everything the per-turn curation page shows."""

    turn: Turn
    history: list[Turn]
    pairs: list[PairRow]
    retired: list[Paraphrase]
    repeated: dict[tuple[str, ...], int]
    previous_turn: Turn | None
    next_turn: Turn | None
    # Self-BLEU of manual paraphrases: as imported/generated, and now (current, not rejected). Lower = more diverse.
    self_bleu_before: float | None = None
    self_bleu_now: float | None = None
    # The conversation's PTKB (iKAT), each statement marked when this turn's response used it.
    ptkb: list[dict[str, Any]] = field(default_factory=list)


def pair_undecided(pair: Sequence[Paraphrase | None]) -> bool:
    """Whether a manual/raw pair still has a member that is a candidate (neither approved nor rejected)."""
    return any(p is not None and p.status == Paraphrase.Status.CANDIDATE for p in pair)


def _edit_roots(rows: Iterable[Paraphrase]) -> dict[int, int]:
    """pk → pk of the first version of its edit chain (the row imported, generated or added), for one turn's rows.

    An edit is a new row with a later id; the first version's id keeps a pair where it was on the page."""
    parent = {p.pk: p.edited_from_id for p in rows}
    roots: dict[int, int] = {}
    for pk in parent:
        root, seen = pk, {pk}
        while (up := parent.get(root)) is not None and up in parent and up not in seen:
            root = up
            seen.add(up)
        roots[pk] = root
    return roots


def _pair_up(rows: list[Paraphrase]) -> list[tuple[Paraphrase | None, Paraphrase | None]]:
    """A turn's current paraphrases as (manual, raw) pairs in page order; a lone member fills one side.

    ``rows`` are all the turn's rows, edited-away versions included: a pair keeps the place of its members' first
    versions, so editing a paraphrase never moves its pair."""
    roots = _edit_roots(rows)
    current = sorted((p for p in rows if p.is_current), key=lambda p: (roots[p.pk], p.pk))
    by_id = {p.pk: p for p in current}
    pairs: list[tuple[Paraphrase | None, Paraphrase | None]] = []
    placed: set[int] = set()
    for p in current:
        if p.pk in placed:
            continue
        partner = by_id.get(p.pair_id) if p.pair_id else None
        if partner is not None and partner.pk in placed:
            partner = None
        placed.add(p.pk)
        if partner is not None:
            placed.add(partner.pk)
        pairs.append((p, partner) if p.kind == Paraphrase.Kind.MANUAL else (partner, p))
    return pairs


def ptkb_for_conversation(*, conversation_id: int, cited: Iterable[int] = ()) -> list[dict[str, Any]]:
    """A conversation's PTKB (iKAT) as ``{number, text, cited}`` in number order, ``cited`` marking the statement
    numbers given; empty for conversations without one (CAsT)."""
    marked = set(cited)
    rows = PtkbStatement.objects.filter(conversation_id=conversation_id).order_by("number")
    return [{"number": n, "text": text, "cited": n in marked} for n, text in rows.values_list("number", "text")]


def ptkb_for_turn(*, turn: Turn) -> list[dict[str, Any]]:
    """The PTKB of the turn's conversation, the statements the turn's response used (``ptkb_provenance``) marked."""
    return ptkb_for_conversation(conversation_id=turn.conversation_id, cited=turn.ptkb_provenance or [])


def turn_paths(turns: Sequence[Turn]) -> dict[int, list[Turn]]:
    """turn pk → its path: the turns from the first one down to it (itself last), for one conversation's turns.

    The one place histories are made. A conversation tree (CAsT 2022) follows ``parent``, so a turn's path holds
    its User and System ancestors and never a turn of a sibling branch; a linear conversation's path is every
    turn numbered before it, as it has always been.
    """
    by_pk, parents = _turn_parents(turns)
    return {pk: [by_pk[p] for p in trees.path_to(parents, pk)] for pk in by_pk}


def leaf_paths(turns: Sequence[Turn]) -> list[list[Turn]]:
    """One conversation's root-to-leaf paths (``trees.root_to_leaf_paths`` over the turns' parents), in leaf order:
    the conversations a tree holds; a linear conversation is its one path."""
    by_pk, parents = _turn_parents(turns)
    return [[by_pk[p] for p in path] for path in trees.root_to_leaf_paths(parents)]


def conversation_tree(*, turns: Sequence[Turn]) -> list[trees.Stretch[Turn]]:
    """A conversation tree's turns (CAsT 2022) as nested stretches (``trees.stretches``), the way its page draws
    them; empty for a linear conversation, which a page lists as it always has."""
    if not any(t.tree_number for t in turns):
        return []
    by_pk, parents = _turn_parents(turns)

    def with_turns(stretch: trees.Stretch[int]) -> trees.Stretch[Turn]:
        return trees.Stretch([by_pk[pk] for pk in stretch.nodes], [with_turns(b) for b in stretch.branches])

    return [with_turns(stretch) for stretch in trees.stretches(parents)]


def _turn_parents(turns: Sequence[Turn]) -> tuple[dict[int, Turn], dict[int, int | None]]:
    """({pk: turn}, {pk: parent pk}) in turn-number order: a tree's ``parent`` links, else the linear chain."""
    ordered = sorted(turns, key=lambda t: t.number)
    by_pk = {t.pk: t for t in ordered}
    if any(t.tree_number for t in ordered):
        return by_pk, {t.pk: (t.parent_id if t.parent_id in by_pk else None) for t in ordered}
    return by_pk, trees.linear_parents([t.pk for t in ordered])


def turn_history(*, turn: Turn, users_only: bool = False) -> list[Turn]:
    """The turns before ``turn`` on its path (the history h_i), first turn first; ``users_only`` drops the System
    turns of a tree (what a rewriter reads as h_i: the user's earlier utterances)."""
    turns = list(Turn.objects.filter(conversation_id=turn.conversation_id).order_by("number"))
    path = turn_paths(turns)[turn.pk][:-1]
    return [t for t in path if not (users_only and t.is_system)]


def path_entry(turn: Turn) -> dict[str, Any]:
    """What a history block shows of a turn: its text (a System turn's response) and, in a tree, its branch-aware
    number, participant and mixed initiative; a linear turn gets exactly the {number, text} it always had."""
    entry: dict[str, Any] = {
        "number": turn.number,
        "text": turn.canonical_response_text if turn.is_system else turn.raw_utterance,
    }
    if turn.tree_number:
        entry.update(label=turn.tree_number, participant=turn.participant, mixed_initiative=turn.mixed_initiative)
    return entry


def _curated_turns(turn: Turn) -> QuerySet[Turn]:
    # A System turn of a conversation tree is the system's side, with nothing to paraphrase: curators pass it by.
    return Turn.objects.filter(collection_id=turn.collection_id).exclude(participant=Participant.SYSTEM)


def turn_after(*, turn: Turn) -> Turn | None:
    """The next User turn of the collection: later in the conversation, else the first of the next conversation."""
    siblings = _curated_turns(turn)
    nxt = siblings.filter(conversation_id=turn.conversation_id, number__gt=turn.number).order_by("number").first()
    if nxt is None:
        nxt = siblings.filter(conversation_id__gt=turn.conversation_id).order_by("conversation_id", "number").first()
    return nxt


def turn_before(*, turn: Turn) -> Turn | None:
    """The User turn before ``turn`` in its conversation (None on the first)."""
    siblings = _curated_turns(turn).filter(conversation_id=turn.conversation_id, number__lt=turn.number)
    return siblings.order_by("-number").first()


def curation_next(*, paraphrase: Paraphrase) -> tuple[Turn | None, Paraphrase | None]:
    """Where a curator goes after deciding ``paraphrase``'s pair: the next pair of its turn with a member still a
    candidate (wrapping to the top), as (its turn, its first member); else (the next turn, None); (None, None) at the
    end of the collection."""
    turn = paraphrase.turn
    pairs = _pair_up(list(Paraphrase.objects.filter(turn=turn).order_by("id")))
    here = next((i for i, pair in enumerate(pairs) if any(p is not None and p.pk == paraphrase.pk for p in pair)), -1)
    order = pairs[here + 1 :] + pairs[: here + 1]
    for pair in order:
        if pair_undecided(pair):
            return turn, next(p for p in pair if p is not None)
    return turn_after(turn=turn), None


def turn_page(*, turn: Turn) -> TurnPage:
    """Current paraphrases grouped as manual/raw pairs, repeated n-grams marked, conversation history, neighbours."""
    all_rows = list(Paraphrase.objects.filter(turn=turn).select_related("created_by").order_by("id"))
    current = [p for p in all_rows if p.is_current]
    retired = [p for p in all_rows if not p.is_current]
    repeated = curation.repeated_ngrams([p.text for p in current])
    by_id = {p.pk: p for p in all_rows}

    def history_of(p: Paraphrase) -> list[Paraphrase]:
        chain = [p]
        while chain[0].edited_from_id and chain[0].edited_from_id in by_id and len(chain) < 100:
            chain.insert(0, by_id[chain[0].edited_from_id])
        return chain if len(chain) > 1 else []

    def row(p: Paraphrase | None) -> ParaphraseRow | None:
        if p is None:
            return None
        return ParaphraseRow(p, curation.highlight(p.text, repeated), provenance_summary(p.provenance), history_of(p))

    pairs = [PairRow(row(manual), row(raw)) for manual, raw in _pair_up(all_rows)]
    history = turn_history(turn=turn)
    previous_turn = turn_before(turn=turn)
    next_turn = turn_after(turn=turn)
    kind_m = Paraphrase.Kind.MANUAL
    original = [p.text for p in all_rows if p.kind == kind_m and p.origin in ("imported", "generated")]
    now = [p.text for p in current if p.kind == kind_m and p.status != Paraphrase.Status.REJECTED]
    return TurnPage(
        turn,
        history,
        pairs,
        retired,
        repeated,
        previous_turn,
        next_turn,
        self_bleu_before=curation.self_bleu(original),
        self_bleu_now=curation.self_bleu(now),
        ptkb=ptkb_for_turn(turn=turn),
    )


def import_job_recent(*, limit: int = 10) -> QuerySet[ImportJob]:
    """The most recent import jobs, newest first."""
    return ImportJob.objects.select_related("collection", "created_by").order_by("-created_at")[:limit]
