"""Reads for the agreement report: two qrels versions as item grades, their item-level report (cached), and the
system rankings each gives, from the scores the leaderboard shows."""

from __future__ import annotations

import time
from typing import Any

from django.core.cache import cache
from django.db.models import Count, Max

from ecast.core.errors import DomainError
from ecast.models import Collection, Turn
from evaluation import metrics
from evaluation import selectors as sel
from evaluation.agreement import algorithms
from evaluation.models import Qrel, QrelsVersion

# Bump when the cached report's shape changes, so old entries are never read back.
CACHE_SCHEMA = 2
CACHE_SECONDS = 7 * 24 * 3600


class AgreementError(DomainError):
    """Two versions that cannot be compared (another collection, or the same version twice)."""


def version_items(*, version: QrelsVersion) -> dict[algorithms.Item, int]:
    """The version's judgments as {(turn_id, passage_id): grade}, the input of the agreement algorithms."""
    return {(t, p): g for t, docs in sel.qrels_dict(version=version).items() for p, g in docs.items()}


def topic_lookup(*, collection_id: int) -> dict[str, str]:
    """{turn_id: topic id of its conversation} for a collection."""
    return dict(Turn.objects.filter(collection_id=collection_id).values_list("turn_id", "conversation__topic_id"))


def version_fingerprint(*, version: QrelsVersion) -> str:
    """What changes whenever a version's judgments do: its ``updated_at`` (bumped by the judging services) plus
    its row count and newest row id (which also move when rows are written without touching the version)."""
    agg = Qrel.objects.filter(version=version).aggregate(n=Count("id"), last=Max("id"))
    return f"{version.pk}@{version.updated_at.isoformat()}#{agg['n']}/{agg['last']}"


def collections_with_versions() -> list[Collection]:
    """Collections that have at least one qrels version, by name."""
    return list(Collection.objects.filter(qrels_versions__isnull=False).distinct().order_by("name"))


def default_pair(
    *, collection: Collection, a: QrelsVersion | None = None
) -> tuple[QrelsVersion | None, QrelsVersion | None]:
    """A = the given version, else the one named "original" (else the oldest); B = A's newest derived version, else
    the newest other version (None when the collection has a single version)."""
    versions = list(sel.qrels_version_list_for_collection(collection_id=collection.pk))
    if not versions:
        return None, None
    if a is None:
        a = next((v for v in versions if v.name == "original"), versions[0])
    children = [v for v in versions if v.parent_id == a.pk]
    others = [v for v in versions if v.pk != a.pk]
    return a, (children[-1] if children else (others[-1] if others else None))


def check_pair(*, a: QrelsVersion, b: QrelsVersion) -> None:
    """Refuse pairs that are not two assessments of one collection."""
    if a.collection_id != b.collection_id:
        raise AgreementError(f"{a.name!r} and {b.name!r} belong to different collections")
    if a.pk == b.pk:
        raise AgreementError("pick two different qrels versions: a version always agrees with itself")


def adjudicated_version_name(*, a: QrelsVersion, b: QrelsVersion) -> str:
    """The name of the version an adjudication of A and B writes into: "adjudicated: A vs B" (cut to the field)."""
    limit = QrelsVersion._meta.get_field("name").max_length or 100
    return f"adjudicated: {a.name} vs {b.name}"[:limit].strip()


def adjudicated_version(*, a: QrelsVersion, b: QrelsVersion) -> QrelsVersion | None:
    """The adjudicated version of A and B when one was made (named for both and made from A), else None."""
    return QrelsVersion.objects.filter(
        collection_id=a.collection_id, parent=a, name=adjudicated_version_name(a=a, b=b)
    ).first()


def disagreements(report: dict[str, Any]) -> int:
    """How many items both versions judged with different grades (the off-diagonal of the confusion table)."""
    rows, columns = report["scale_a"], report["scale_b"]
    return sum(
        count
        for ga, row in zip(rows, report["confusion"], strict=True)
        for gb, count in zip(columns, row, strict=True)
        if ga != gb
    )


def item_agreement(*, a: QrelsVersion, b: QrelsVersion) -> dict[str, Any]:
    """The item-level report of two versions (κ, confusion, binarised, per topic), cached until either changes.

    Reading and pairing tens of thousands of judgments takes about a second, so the report is kept in the shared
    cache under both versions' fingerprints and the relevance threshold: a new judgment makes a new key.
    """
    check_pair(a=a, b=b)
    threshold = int(Collection.objects.values_list("relevance_threshold", flat=True).get(pk=a.collection_id))
    key = (
        f"evaluation:agreement:{CACHE_SCHEMA}:{version_fingerprint(version=a)}:{version_fingerprint(version=b)}"
        f":t{threshold}"
    )
    cached = cache.get(key)
    if cached is not None:
        return {**cached, "cached": True}
    started = time.perf_counter()
    topics = topic_lookup(collection_id=a.collection_id)
    data = algorithms.agreement(
        version_items(version=a),
        version_items(version=b),
        threshold=threshold,
        topic=lambda turn_id: topics.get(turn_id) or algorithms.topic_of(turn_id),
    )
    data["seconds"] = round(time.perf_counter() - started, 3)
    cache.set(key, data, CACHE_SECONDS)
    return {**data, "cached": False}


def judged_turns(*, version: QrelsVersion) -> set[str]:
    """The turn ids a version holds at least one judgment for."""
    return set(Qrel.objects.filter(version=version).values_list("turn__turn_id", flat=True).distinct())


def ranking_agreement(*, a: QrelsVersion, b: QrelsVersion, measure: str) -> dict[str, Any]:
    """Kendall τ between the run rankings of the two versions by ``measure``, each run scored by its mean stored
    per-turn value over the turns both versions judged (the leaderboard's means when both judged the same turns)."""
    runs = list(sel.run_list_for_collection(collection_id=a.collection_id))
    names = {r.pk: r.name for r in runs}

    def by_name(matrix: dict[int, dict[str, float]]) -> dict[str, dict[str, float]]:
        return {names[run_id]: values for run_id, values in matrix.items() if run_id in names}

    res = algorithms.shared_turn_ranking(
        by_name(sel.per_turn_matrix(version=a, measure=measure)),
        by_name(sel.per_turn_matrix(version=b, measure=measure)),
        turns_a=judged_turns(version=a),
        turns_b=judged_turns(version=b),
    )
    scored = {s["system"] for s in res["systems"]}
    status_a, status_b = sel.status_for_version(version=a), sel.status_for_version(version=b)
    return {
        **res,
        "measure": measure,
        "runs": len(runs),
        "run_ids": {r.name: r.pk for r in runs},
        "unscored": sorted(r.name for r in runs if r.name not in scored),
        "stored": sel.scores_exist(version_ids=[a.pk, b.pk], measure=measure),
        "pending": status_a["pending_turns"] + status_b["pending_turns"] + len(status_a["jobs"]),
    }


def agreement_report(*, a: QrelsVersion, b: QrelsVersion, measure: str = metrics.HEADLINE) -> dict[str, Any]:
    """Everything the agreement page, its JSON API and downloads show for versions A and B of one collection."""
    items = item_agreement(a=a, b=b)
    collection = a.collection
    relabelled = b.parent_id == a.pk and Qrel.objects.filter(version=b, source=Qrel.Source.LLM).exists()
    return {
        "collection": {"id": collection.pk, "name": collection.name},
        "a": {"id": a.pk, "name": a.name},
        "b": {"id": b.pk, "name": b.name},
        "threshold": int(collection.relevance_threshold),
        # A version derived from A by copying (the judging services' "<parent> + new") keeps every judgment of A,
        # so the items both judged agree by construction. A version only made from A (LLM pre-judgments name the
        # human version they labelled as parent) holds its own grades: its agreement with A is measured, not built.
        "derived": b.parent_id == a.pk and items["only_a"] == 0 and not relabelled,
        "made_from_a": b.parent_id == a.pk,
        # A model's labels of A's items (LLM pre-judgments): B re-graded them on its own, whatever it covers.
        "relabelled": relabelled,
        **items,
        "ranking": ranking_agreement(a=a, b=b, measure=measure),
    }


def agreement_items(
    *,
    a: QrelsVersion,
    b: QrelsVersion,
    topic: str | None = None,
    grade_a: int | None = None,
    grade_b: int | None = None,
    binary: bool = False,
    only: str | None = None,
) -> list[dict[str, Any]]:
    """The per-item pairs behind a number of the report: all of them, one topic's, one confusion cell's
    (``binary`` reads the grades as binarised labels), or the items only one side judged (``only`` = a | b)."""
    check_pair(a=a, b=b)
    threshold = int(a.collection.relevance_threshold)
    items_a, items_b = version_items(version=a), version_items(version=b)
    topics = topic_lookup(collection_id=a.collection_id)

    def topic_of(turn_id: str) -> str:
        return topics.get(turn_id) or algorithms.topic_of(turn_id)

    paired = algorithms.paired_items(items_a, items_b, topic=topic_of)
    # The same cuts as the report's, so a confusion cell's link lists exactly the items it counts.
    cut_a, cut_b = algorithms.cuts([p.a for p in paired], [p.b for p in paired], threshold=threshold)
    if only in ("a", "b"):
        mine, theirs = (items_a, items_b) if only == "a" else (items_b, items_a)
        keys = sorted(set(mine) - set(theirs), key=lambda k: (algorithms.natural_key(k[0]), k[1]))
        rows: list[dict[str, Any]] = [
            {
                "topic": topic_of(t),
                "turn": t,
                "item": i,
                "a": mine[(t, i)] if only == "a" else None,
                "b": mine[(t, i)] if only == "b" else None,
            }
            for t, i in keys
        ]
    else:
        rows = [{"topic": p.topic, "turn": p.turn, "item": p.item, "a": p.a, "b": p.b} for p in paired]
    out = []
    for row in rows:
        rel_a = None if row["a"] is None else algorithms.binarise(row["a"], cut_a)
        rel_b = None if row["b"] is None else algorithms.binarise(row["b"], cut_b)
        if topic is not None and row["topic"] != topic:
            continue
        if grade_a is not None and (rel_a if binary else row["a"]) != grade_a:
            continue
        if grade_b is not None and (rel_b if binary else row["b"]) != grade_b:
            continue
        out.append({**row, "relevant_a": rel_a, "relevant_b": rel_b, "threshold": max(cut_a, cut_b)})
    return out
