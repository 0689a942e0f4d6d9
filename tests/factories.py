"""Plain factory functions for tests (no extra dependency): build valid rows of the main models with sensible
defaults, so a test says only what matters to it. Builders of a feature's richer scenes live in that test package's
helpers module and are made of these."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence

from django.contrib.auth.models import Group, User

from ecast.core.permissions import RATER
from ecast.models import Collection, Conversation, Paraphrase, Passage, TestSet, Turn
from evaluation.models import Qrel, QrelsVersion, Run, RunTurn

# --- users ------------------------------------------------------------------------------------------------------


def user(username: str, role: str | None = None, *, staff: bool = False, password: str | None = None) -> User:
    """A user in the group ``role`` (admin, rater, assessor, or none); the password is ``pass-<username>``."""
    u = User.objects.create_user(username=username, password=password or "pass-" + username, is_staff=staff)
    if role:
        u.groups.add(Group.objects.get_or_create(name=role)[0])
    return u


def users(count: int, role: str | None = RATER, *, prefix: str = "crowd") -> list[User]:
    """``count`` users ``<prefix>0``, ``<prefix>1``, … in the group ``role`` (raters unless said otherwise)."""
    return [user(f"{prefix}{i}", role) for i in range(count)]


# --- the dataset ------------------------------------------------------------------------------------------------


def collection(name: str = "Test collection", year: int = 2020, threshold: int = 1) -> Collection:
    return Collection.objects.create(name=name, year=year, relevance_threshold=threshold)


def conversation(coll: Collection, topic_id: str = "1", title: str = "") -> Conversation:
    return Conversation.objects.create(collection=coll, topic_id=topic_id, title=title or f"Topic {topic_id}")


def turn(conv: Conversation, number: int, raw: str, manual: str = "") -> Turn:
    return Turn.objects.create(
        conversation=conv,
        collection=conv.collection,
        number=number,
        turn_id=f"{conv.topic_id}_{number}",
        raw_utterance=raw,
        manual_rewrite=manual or raw,
    )


def collection_with_turns(name: str, year: int, conversations: dict[str, list[str]], threshold: int = 1):
    coll = collection(name=name, year=year, threshold=threshold)
    for topic_id, utterances in conversations.items():
        conv = conversation(coll, topic_id)
        for i, text in enumerate(utterances, start=1):
            turn(conv, i, text)
    return coll


def collection_of_turn_ids(
    name: str,
    year: int,
    turn_ids: Iterable[str],
    threshold: int = 1,
    utterances: Mapping[str, Sequence[str]] | None = None,
) -> Collection:
    """A collection with one turn per ``<topic>_<number>`` id (as in real qrels and runs), made in bulk; bare unless
    ``utterances`` gives a turn's raw utterance and manual rewrite (its first two items)."""
    coll = Collection.objects.create(name=name, year=year, relevance_threshold=threshold)
    ids = sorted(set(turn_ids))
    texts = utterances or {}
    convs = {
        t: Conversation.objects.create(collection=coll, topic_id=t) for t in sorted({i.split("_")[0] for i in ids})
    }
    Turn.objects.bulk_create(
        [
            Turn(
                conversation=convs[i.split("_")[0]],
                collection=coll,
                number=int(i.split("_")[1]),
                turn_id=i,
                raw_utterance=texts[i][0] if i in texts else "",
                manual_rewrite=texts[i][1] if i in texts else "",
            )
            for i in ids
        ]
    )
    return coll


def turns_by_id(coll: Collection) -> dict[str, Turn]:
    """The collection's turns by their ``turn_id``."""
    return {t.turn_id: t for t in Turn.objects.filter(collection=coll)}


def paraphrase(t: Turn, text: str, kind: str = "manual", status: str = "candidate", origin: str = "imported"):
    return Paraphrase.objects.create(turn=t, kind=kind, text=text, status=status, origin=origin)


def paraphrase_pair(
    t: Turn, manual: str, raw: str, *, status: str = "approved", origin: str = "generated", provenance=None
) -> tuple[Paraphrase, Paraphrase]:
    """A manual paraphrase p^m and the raw p^r made from it, each the other's pair; ``provenance`` is p^m's."""
    m = Paraphrase.objects.create(
        turn=t, kind="manual", text=manual, origin=origin, provenance=provenance or {}, status=status
    )
    r = Paraphrase.objects.create(turn=t, kind="raw", text=raw, origin=origin, pair=m, provenance={}, status=status)
    m.pair = r
    m.save()
    return m, r


def paraphrase_collection(
    name: str = "Rate2020", year: int = 2020, topics: int = 2, turns: int = 3, status: str = "approved"
):
    """Topics × turns, each turn with a canonical response and one manual/raw paraphrase pair (half tagged as
    coming from r_i), approved (campaigns sample approved pairs) unless ``status`` says otherwise."""
    coll = collection(name=name, year=year)
    k = 0
    for t in range(1, topics + 1):
        conv = conversation(coll, str(t))
        for n in range(1, turns + 1):
            row = turn(conv, n, f"raw {t}.{n}?", manual=f"manual question {t}.{n}?")
            row.canonical_response_id = f"MARCO_{t}{n}"
            row.canonical_response_text = f"Canonical answer for {t}.{n}."
            row.save()
            k += 1
            source = "automatic" if k % 2 else "manual"
            paraphrase_pair(row, f"para {t}.{n}", f"raw para {t}.{n}", status=status, provenance={"source": source})
    return coll


def passage(passage_id: str, text: str, source: str = "") -> Passage:
    return Passage.objects.create(passage_id=passage_id, text=text, source=source)


def passages(texts: Mapping[str, str], source: str = "") -> None:
    """Passage rows with these texts, replacing the text of any that exists."""
    for pid, text in texts.items():
        Passage.objects.update_or_create(passage_id=pid, defaults={"text": text, "source": source})


def testset(coll: Collection, name: str = "R^m_1", kind: str = "manual", index: int = 1, seed: int | None = None):
    """A paraphrase test set (no items); its seed is its index unless given."""
    seed = index if seed is None else seed
    return TestSet.objects.create(collection=coll, name=name, kind=kind, index=index, seed=seed)


# --- judgments and runs -----------------------------------------------------------------------------------------


def qrels_version(
    coll: Collection,
    name: str = "original",
    judgments: Mapping[str, Mapping[str, int]] | None = None,
    *,
    parent: QrelsVersion | None = None,
    source: str | None = None,
) -> QrelsVersion:
    """A qrels version, with ``judgments`` (turn id → passage id → grade) as its rows when given."""
    version = QrelsVersion.objects.create(collection=coll, name=name, parent=parent)
    if judgments:
        qrels(version, judgments, source=source)
    return version


def qrels_derived(
    parent: QrelsVersion,
    name: str,
    changes: Mapping[str, Mapping[str, int]] | None = None,
    *,
    source: str | None = None,
) -> QrelsVersion:
    """A version derived from ``parent``: a copy of its rows with ``changes`` (turn id → passage id → grade) over
    them, every row with ``source`` when given."""
    rows: dict[str, dict[str, int]] = {}
    for q in Qrel.objects.filter(version=parent).select_related("turn").order_by("pk"):
        rows.setdefault(q.turn.turn_id, {})[q.passage_id] = q.grade
    for turn_id, docs in (changes or {}).items():
        rows.setdefault(turn_id, {}).update(docs)
    return qrels_version(parent.collection, name, rows, parent=parent, source=source)


def qrels(
    version: QrelsVersion, judgments: Mapping[str, Mapping[str, int]], *, source: str | None = None
) -> list[Qrel]:
    """Rows of ``version``: turn id → passage id → grade (``source`` as given, else the model's default)."""
    turns = turns_by_id(version.collection)
    extra = {"source": source} if source else {}
    return Qrel.objects.bulk_create(
        [
            Qrel(version=version, turn=turns[q], passage_id=d, grade=g, **extra)
            for q, docs in judgments.items()
            for d, g in docs.items()
        ],
        batch_size=5000,  # real qrels files have tens of thousands of rows
    )


def run(
    coll: Collection,
    name: str,
    rankings: Mapping[str, Sequence[str]],
    *,
    test_set: TestSet | None = None,
    scores: Mapping[str, Sequence[float]] | None = None,
) -> Run:
    """A run ranking ``rankings`` (turn id → passage ids, best first), scored n, n-1, … unless ``scores`` says."""
    r = Run.objects.create(collection=coll, name=name, test_set=test_set)
    turns = turns_by_id(coll)
    RunTurn.objects.bulk_create(
        [
            RunTurn(
                run=r,
                turn=turns[q],
                doc_ids=list(docs),
                scores=list(scores[q]) if scores else [float(len(docs) - i) for i in range(len(docs))],
            )
            for q, docs in rankings.items()
        ]
    )
    return r


def run_scored(coll: Collection, name: str, scored: Mapping[str, Mapping[str, float]], *, depth: int | None = None):
    """A run from a TREC run as read (turn id → passage id → score), ranked as the run importer ranks (by score,
    ties by passage id descending: trec_eval's order) and cut at ``depth`` when given."""
    ranked = {
        q: sorted(docs.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)[:depth] for q, docs in scored.items()
    }
    return run(
        coll,
        name,
        {q: [d for d, _ in r] for q, r in ranked.items()},
        scores={q: [s for _, s in r] for q, r in ranked.items()},
    )


# --- judging ----------------------------------------------------------------------------------------------------


def rating_campaign(
    coll: Collection, *, size: int = 6, n: int = 3, measures=("semantic_similarity", "passage_relevance"), **kw
):
    """A rating campaign over ``coll``'s approved pairs, made by the service (which samples its items)."""
    from judging.rating import services

    return services.campaign_create(
        name=kw.pop("name", f"C-{uuid.uuid4().hex[:6]}"),
        collections=[coll],
        sample_size=size,
        seed=kw.pop("seed", 7),
        measure_keys=list(measures),
        raters_per_item=n,
        **kw,
    )
