"""Reads of response runs, nugget banks and label sets, and their scores, live.

Scores are computed from a few ``values_list`` reads (responses, the bank's nuggets, the set's labels) by the plain
functions of :mod:`evaluation.responses.scores`, and cached under the stamps of everything they read: the label
set's ``updated_at`` (bumped by ``services.label_set_touch`` on every label write), its bank's ``updated_at``
(``services.nugget_bank_touch``) and the collection's answers (count and newest id of responses, and of sentences
for citation sets: an import, a re-import or a deletion changes them). A leaderboard read after a label arrives
therefore recomputes once, in the request, and no job is queued.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass
from typing import Any

from django.core.cache import cache
from django.db.models import BooleanField, Count, ExpressionWrapper, Max, Q, QuerySet

from ecast.core.cache import CACHE_DOWN, cache_down, cache_recently_down
from ecast.models import Collection, Passage
from evaluation.models import (
    CitationLabel,
    Nugget,
    NuggetAssignment,
    NuggetBank,
    Response,
    ResponseLabelSet,
    ResponseRun,
    ResponseSentence,
)
from evaluation.responses import scores
from evaluation.selectors.pages import turn_sort_key

CACHE_SECONDS = 24 * 3600
PAGE_SIZE = 50


# --- lists and counts --------------------------------------------------------------------------------------------


def collection_with_responses_default() -> Collection | None:
    """The collection the Responses page shows when none is asked for: the first by name with a response run, a
    nugget bank or a label set, else the first by name."""
    has = (
        Collection.objects.filter(response_runs__isnull=False)
        | Collection.objects.filter(nugget_banks__isnull=False)
        | Collection.objects.filter(response_label_sets__isnull=False)
    )
    return has.distinct().order_by("name").first() or Collection.objects.order_by("name").first()


def response_run_list(*, collection: Collection | None = None) -> QuerySet[ResponseRun]:
    """Runs (of one collection, or all) with ``n_responses``."""
    qs = ResponseRun.objects.select_related("collection").annotate(n_responses=Count("responses"))
    return qs.filter(collection=collection) if collection is not None else qs


def nugget_bank_list(*, collection: Collection | None = None) -> QuerySet[NuggetBank]:
    """Banks (of one collection, or all) with ``n_nuggets`` (merged ones left out)."""
    live = Q(nuggets__merged_into__isnull=True)
    qs = NuggetBank.objects.select_related("collection", "parent").annotate(n_nuggets=Count("nuggets", filter=live))
    return qs.filter(collection=collection) if collection is not None else qs


def label_set_list(*, collection: Collection | None = None) -> QuerySet[ResponseLabelSet]:
    """Label sets (of one collection, or all) with their bank."""
    qs = ResponseLabelSet.objects.select_related("collection", "bank")
    return qs.filter(collection=collection) if collection is not None else qs


def nugget_counts(*, bank_ids: list[int]) -> dict[int, dict[str, Any]]:
    """bank id → {"importance": {vital: n, okay: n}, "origin": {...}, "merged": n}, one grouped read."""
    rows = (
        Nugget.objects.filter(bank_id__in=bank_ids)
        .annotate(live=ExpressionWrapper(Q(merged_into__isnull=True), output_field=BooleanField()))
        .values_list("bank_id", "importance", "origin", "live")
        .annotate(n=Count("id"))
        .order_by()
    )
    out: dict[int, dict[str, Any]] = {b: {"importance": Counter(), "origin": Counter(), "merged": 0} for b in bank_ids}
    for bank, importance, origin, live, n in rows:
        if not live:
            out[bank]["merged"] += n
            continue
        out[bank]["importance"][importance] += n
        out[bank]["origin"][origin] += n
    # Plain dicts: a template's ``counts.importance.items`` would read a Counter's missing key "items" as 0.
    return {b: {k: dict(v) if isinstance(v, Counter) else v for k, v in c.items()} for b, c in out.items()}


def label_counts(*, label_sets: list[ResponseLabelSet]) -> dict[int, dict[str, dict[str, int]]]:
    """label set id → {"label": Counter, "condition": Counter}, one grouped read per kind."""
    out: dict[int, dict[str, Counter]] = {ls.pk: {"label": Counter(), "condition": Counter()} for ls in label_sets}
    ids = {kind: [ls.pk for ls in label_sets if ls.kind == kind] for kind in ResponseLabelSet.Kind.values}
    reads = [
        (NuggetAssignment, "label", ids[ResponseLabelSet.Kind.NUGGETS]),
        (CitationLabel, "support", ids[ResponseLabelSet.Kind.CITATIONS]),
    ]
    for model, field, pks in reads:
        if not pks:
            continue
        grouped = (
            model.objects.filter(label_set_id__in=pks)  # type: ignore[attr-defined]
            .values_list("label_set_id", field, "condition")
            .annotate(n=Count("id"))
            .order_by()
        )
        for pk, label, condition, n in grouped:
            out[pk]["label"][label] += n
            out[pk]["condition"][condition or "not recorded"] += n
    return {pk: {k: dict(v) for k, v in c.items()} for pk, c in out.items()}


def response_page(*, ids: list[int]) -> list[dict[str, Any]]:
    """The responses ``ids`` (one page of a run's) in turn order: pk, turn id, text, length, sentence count."""
    rows = [
        dict(r)
        for r in Response.objects.filter(pk__in=ids)
        .values("pk", "turn__turn_id", "text", "length")
        .annotate(n_sentences=Count("sentences"))
        .order_by()
    ]
    return sorted(rows, key=lambda r: turn_sort_key(r["turn__turn_id"]))


def response_ids_in_order(*, run: ResponseRun) -> list[dict[str, Any]]:
    """A run's response ids in turn order (for paging)."""
    rows = [dict(r) for r in Response.objects.filter(run=run).values("pk", "turn__turn_id")]
    return sorted(rows, key=lambda r: turn_sort_key(r["turn__turn_id"]))


@dataclass
class SentenceView:
    index: int
    text: str
    citations: list[tuple[str, str | None]]  # (passage id, its text when the corpus has it)
    labels: list[tuple[ResponseLabelSet, str, str]]  # (label set, passage id, support)


def response_detail(*, response: Response) -> dict[str, Any]:
    """A response's sentences with cited passage texts, and its labels in every label set of its collection."""
    sentences = list(ResponseSentence.objects.filter(response=response).order_by("index"))
    cited = {p for s in sentences for p in (s.citations or [])} | set(response.references or [])
    texts = dict(Passage.objects.filter(passage_id__in=cited).values_list("passage_id", "text"))
    sets = {ls.pk: ls for ls in label_set_list(collection=response.run.collection)}
    by_sentence: dict[int, list[tuple[ResponseLabelSet, str, str]]] = {}
    for sid, ls_id, passage, support in CitationLabel.objects.filter(sentence__response=response).values_list(
        "sentence_id", "label_set_id", "passage_id", "support"
    ):
        by_sentence.setdefault(sid, []).append((sets[ls_id], passage, support))
    nugget_rows: dict[int, list[dict[str, Any]]] = {}
    for ls_id, text, importance, label, condition in (
        NuggetAssignment.objects.filter(response=response)
        .order_by("label_set_id", "nugget__position", "nugget_id")
        .values_list("label_set_id", "nugget__text", "nugget__importance", "label", "condition")
    ):
        nugget_rows.setdefault(ls_id, []).append(
            {"text": text, "importance": importance, "label": label, "condition": condition}
        )
    views = [
        SentenceView(
            index=s.index,
            text=s.text,
            citations=[(p, texts.get(p)) for p in (s.citations or [])],
            labels=by_sentence.get(s.pk, []),
        )
        for s in sentences
    ]
    nugget_sets = [(sets[pk], rows) for pk, rows in nugget_rows.items()]
    return {"sentences": views, "nugget_sets": nugget_sets, "reference_texts": texts}


def bank_turns(*, bank: NuggetBank) -> list[tuple[str, list[Nugget]]]:
    """A bank's nuggets grouped by turn, turns in topic/turn order, nuggets in position order."""
    grouped: dict[str, list[Nugget]] = {}
    for n in Nugget.objects.filter(bank=bank).select_related("turn").order_by("turn_id", "position", "id"):
        grouped.setdefault(n.turn.turn_id, []).append(n)
    return sorted(grouped.items(), key=lambda kv: turn_sort_key(kv[0]))


# --- scores --------------------------------------------------------------------------------------------------------


def _answers_stamp(collection_id: int, *, sentences: bool) -> str:
    """Count and newest id of a collection's responses (and, for citation scores, of their sentences): a run
    imported, re-imported or deleted changes it, with no write of its own to remember."""
    agg = Response.objects.filter(run__collection_id=collection_id).aggregate(n=Count("id"), top=Max("id"))
    stamp = f"{agg['n']}-{agg['top']}"
    if sentences:
        agg = ResponseSentence.objects.filter(response__run__collection_id=collection_id).aggregate(
            n=Count("id"), top=Max("id")
        )
        stamp += f"-{agg['n']}-{agg['top']}"
    return stamp


def _scores_key(label_set: ResponseLabelSet) -> str:
    citations = label_set.kind == ResponseLabelSet.Kind.CITATIONS
    parts = [
        str(label_set.pk),
        label_set.updated_at.isoformat(),
        _answers_stamp(label_set.collection_id, sentences=citations),
    ]
    if label_set.bank_id is not None:
        # The bank's own stamp (nugget_bank_touch) and its nuggets' count, newest id and newest edit: a writer that
        # forgets the touch (a bulk re-import of a turn's nuggets) still moves the key.
        bank = (
            NuggetBank.objects.filter(pk=label_set.bank_id)
            .annotate(n=Count("nuggets"), top=Max("nuggets__id"), edited=Max("nuggets__updated_at"))
            .values_list("updated_at", "n", "top", "edited")
            .first()
        )
        parts.append("-".join(str(v) for v in bank) if bank else "none")
    # Hashed: the stamps hold spaces, which memcached-style keys may not.
    return f"response-scores:v2:{label_set.pk}:" + hashlib.sha256(":".join(parts).encode()).hexdigest()[:32]


def _responses(collection_id: int) -> list[tuple[int, int, int]]:
    return list(Response.objects.filter(run__collection_id=collection_id).values_list("pk", "run_id", "turn_id"))


def nugget_table_compute(*, label_set: ResponseLabelSet) -> scores.NuggetTable:
    """A nugget label set scored from three reads (no cache)."""
    nuggets = Nugget.objects.filter(bank_id=label_set.bank_id, merged_into__isnull=True).values_list(
        "pk", "turn_id", "importance"
    )
    labels = NuggetAssignment.objects.filter(label_set=label_set).values_list("response_id", "nugget_id", "label")
    return scores.nugget_table(_responses(label_set.collection_id), nuggets, labels.iterator(chunk_size=20000))


def citation_table_compute(*, label_set: ResponseLabelSet) -> scores.CitationTable:
    """A citation label set scored from four reads (no cache): only the sentences of judged topics are read."""
    labels = list(CitationLabel.objects.filter(label_set=label_set).values_list("sentence_id", "passage_id", "support"))
    judged = set(
        ResponseSentence.objects.filter(citation_labels__label_set=label_set)
        .values_list("response__turn_id", flat=True)
        .distinct()
    )
    sentences = (
        ResponseSentence.objects.filter(
            response__run__collection_id=label_set.collection_id, response__turn_id__in=judged
        )
        .order_by("response_id", "index")
        .values_list("response_id", "pk", "citations__0")
    )
    responses = _responses(label_set.collection_id)
    return scores.citation_table(responses, sentences.iterator(chunk_size=20000), labels, judged)


def label_set_scores(*, label_set: ResponseLabelSet) -> scores.NuggetTable | scores.CitationTable:
    """The scores of a label set (nugget or citation), from the cache while nothing they read has changed."""
    key = _scores_key(label_set)
    if not cache_recently_down():
        try:
            hit = cache.get(key)
        except CACHE_DOWN as exc:
            cache_down("reading response scores", exc)
            hit = None
        if hit is not None:
            return hit
    table: scores.NuggetTable | scores.CitationTable
    if label_set.kind == ResponseLabelSet.Kind.NUGGETS:
        table = nugget_table_compute(label_set=label_set)
    else:
        table = citation_table_compute(label_set=label_set)
    if not cache_recently_down():
        try:
            cache.set(key, table, CACHE_SECONDS)
        except CACHE_DOWN as exc:
            cache_down("storing response scores", exc)
    return table


def measures_of(label_set: ResponseLabelSet) -> tuple[str, ...]:
    return scores.NUGGET_MEASURES if label_set.kind == ResponseLabelSet.Kind.NUGGETS else scores.CITATION_MEASURES


@dataclass
class RunRow:
    run_id: int
    run: str
    rank: int | None
    values: dict[str, float | None]
    scored: int  # responses scored (nuggets) / judged topics answered (citations)
    labelled: int  # responses with any label (nuggets) / judged topics (citations)
    responses: int
    partly: int = 0  # answers with some labels but not all (nuggets)


def leaderboard(
    *, label_set: ResponseLabelSet, measure: str, table: scores.NuggetTable | scores.CitationTable | None = None
) -> list[RunRow]:
    """Every run of the collection with its figures, ranked by ``measure`` (runs nothing was scored for last);
    ``table``: the set's scores when the caller has already read them."""
    table = table or label_set_scores(label_set=label_set)
    names = dict(ResponseRun.objects.filter(collection_id=label_set.collection_id).values_list("pk", "name"))
    rows = []
    for run_id, name in names.items():
        figures = table.per_run.get(run_id)
        if isinstance(table, scores.NuggetTable):
            scored, labelled, total = table.run_coverage.get(run_id, (0, 0, 0))
            values = {m: (figures[m] if figures and scored else None) for m in scores.NUGGET_MEASURES}
        else:
            scored, labelled = table.run_coverage.get(run_id, (0, len(table.judged_turns)))
            total = labelled
            values = {m: (figures[m] if figures and table.judged_turns else None) for m in scores.CITATION_MEASURES}
        partly = labelled - scored if isinstance(table, scores.NuggetTable) else 0
        rows.append(RunRow(run_id, name, None, values, scored, labelled, total, partly))
    rows.sort(key=lambda r: (r.values[measure] is None, -(r.values[measure] or 0.0), r.run))
    rank = 0
    for r in rows:
        if r.values[measure] is not None:
            rank += 1
            r.rank = rank
    return rows


def run_topic_rows(*, label_set: ResponseLabelSet, run: ResponseRun) -> list[dict[str, Any]]:
    """A run's per-response figures under a label set, in turn order: response id, turn id, figures (None where the
    response is not scored yet), labels it has."""
    table = label_set_scores(label_set=label_set)
    rows = []
    for pk, turn_id in Response.objects.filter(run=run).values_list("pk", "turn__turn_id"):
        figures = table.per_response.get(pk)
        labelled = table.labelled.get(pk, 0) if isinstance(table, scores.NuggetTable) else None
        rows.append({"pk": pk, "turn_id": turn_id, "figures": figures, "labelled": labelled})
    return sorted(rows, key=lambda r: turn_sort_key(r["turn_id"]))
