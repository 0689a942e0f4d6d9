"""Downloads of nugget banks, label sets and their scores (pages and API share them), streamed."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from django.http import Http404, StreamingHttpResponse

from ecast.core.csvfiles import CSV_CONTENT_TYPE
from evaluation.exports.downloads import attachment, file_stem
from evaluation.models import (
    CitationLabel,
    Nugget,
    NuggetAssignment,
    NuggetBank,
    Response,
    ResponseLabelSet,
    ResponseSentence,
)
from evaluation.responses import formats, scores
from evaluation.responses import selectors as sel
from evaluation.selectors.pages import turn_sort_key

JSONL = "application/jsonl; charset=utf-8"
# what → (kinds of label set it exists for, content type)
LABEL_SET_FILES = {
    "assignments.jsonl": ((ResponseLabelSet.Kind.NUGGETS,), JSONL),
    "citations.jsonl": ((ResponseLabelSet.Kind.CITATIONS,), JSONL),
    "per-response.csv": (tuple(ResponseLabelSet.Kind.values), CSV_CONTENT_TYPE),
    "per-run.csv": (tuple(ResponseLabelSet.Kind.values), CSV_CONTENT_TYPE),
}


def files_for(label_set: ResponseLabelSet) -> list[str]:
    """The downloads a label set offers."""
    return [what for what, (kinds, _) in LABEL_SET_FILES.items() if label_set.kind in kinds]


def _live_nuggets(bank_id: int | None) -> dict[int, list[tuple[int, str, str]]]:
    """turn pk → [(nugget pk, text, importance)] of a bank's nuggets not merged away, in position order."""
    out: dict[int, list[tuple[int, str, str]]] = {}
    rows = (
        Nugget.objects.filter(bank_id=bank_id, merged_into__isnull=True)
        .order_by("turn_id", "position", "id")
        .values_list("turn_id", "pk", "text", "importance")
    )
    for turn, pk, text, importance in rows:
        out.setdefault(turn, []).append((pk, text, importance))
    return out


def _turns(turn_pks: Iterable[int]) -> dict[int, tuple[str, str]]:
    """turn pk → (turn id, query text)."""
    from ecast.models import Turn

    return {
        pk: (tid, raw)
        for pk, tid, raw in Turn.objects.filter(pk__in=set(turn_pks)).values_list("pk", "turn_id", "raw_utterance")
    }


def bank_nuggets_rows(*, bank: NuggetBank) -> Iterator[tuple[str, str, list[tuple[str, str]]]]:
    """(qid, query, [(text, importance)]) per turn of a bank, turns in topic/turn order."""
    nuggets = _live_nuggets(bank.pk)
    turns = _turns(nuggets)
    for pk in sorted(nuggets, key=lambda t: turn_sort_key(turns[t][0])):
        yield turns[pk][0], turns[pk][1], [(text, imp) for _, text, imp in nuggets[pk]]


def bank_download(*, bank: NuggetBank) -> StreamingHttpResponse:
    """A bank as nuggetizer nuggets JSONL."""
    body = formats.nuggets_jsonl(bank_nuggets_rows(bank=bank))
    return attachment(body, file_stem(bank.collection.name, bank.name) + ".nuggets.jsonl", JSONL)


def _labelled_responses(
    label_set: ResponseLabelSet, model: Any, path: str
) -> list[tuple[int, str, str, int, str, int | None]]:
    """(response pk, run name, text, turn pk, turn id, length) of the responses with a label in the set, by run and
    turn."""
    ids = model.objects.filter(label_set=label_set).values_list(path, flat=True).distinct()
    rows = list(
        Response.objects.filter(pk__in=ids).values_list("pk", "run__name", "text", "turn_id", "turn__turn_id", "length")
    )
    return sorted(rows, key=lambda r: (r[1], turn_sort_key(r[4])))


def assignments_rows(*, label_set: ResponseLabelSet) -> Iterator[tuple[str, str, str, str, int | None, list]]:
    """nuggetizer assignment rows of a nugget label set: each labelled response with its turn's labelled nuggets."""
    nuggets = _live_nuggets(label_set.bank_id)
    responses = _labelled_responses(label_set, NuggetAssignment, "response_id")
    turns = _turns(r[3] for r in responses)
    for start in range(0, len(responses), 200):
        part = responses[start : start + 200]
        labels: dict[int, dict[int, str]] = {}
        for rid, nid, label in NuggetAssignment.objects.filter(
            label_set=label_set, response_id__in=[r[0] for r in part]
        ).values_list("response_id", "nugget_id", "label"):
            labels.setdefault(rid, {})[nid] = label
        for rid, run, text, turn, turn_id, length in part:
            got = labels.get(rid, {})
            listed = [(t, imp, got[pk]) for pk, t, imp in nuggets.get(turn, []) if pk in got]
            yield turn_id, turns[turn][1], run, text, length, listed


def citation_rows(*, label_set: ResponseLabelSet) -> Iterator[tuple[str, str, list]]:
    """TREC support rows of a citation label set: every response to a judged topic, every sentence and citation."""
    table = sel.label_set_scores(label_set=label_set)
    assert isinstance(table, scores.CitationTable)
    responses = sorted(
        Response.objects.filter(run__collection_id=label_set.collection_id, turn_id__in=table.judged_turns).values_list(
            "pk", "run__name", "turn__turn_id"
        ),
        key=lambda r: (turn_sort_key(r[2]), r[1]),
    )
    for start in range(0, len(responses), 200):
        part = responses[start : start + 200]
        ids = [r[0] for r in part]
        labels: dict[int, dict[str, str]] = {}
        for sid, passage, support in CitationLabel.objects.filter(
            label_set=label_set, sentence__response_id__in=ids
        ).values_list("sentence_id", "passage_id", "support"):
            labels.setdefault(sid, {})[passage] = support
        sentences: dict[int, list] = {}
        for rid, sid, index, text, cited in (
            ResponseSentence.objects.filter(response_id__in=ids)
            .order_by("response_id", "index")
            .values_list("response_id", "pk", "index", "text", "citations")
        ):
            sentences.setdefault(rid, []).append((index, text, list(cited or []), labels.get(sid, {})))
        for rid, run, turn_id in part:
            yield turn_id, run, sentences.get(rid, [])


PER_RESPONSE_EXTRA = {"nuggets": ("labels", "nuggets"), "citations": ("sentences", "cited", "judged")}
PER_RUN_EXTRA = {
    "nuggets": ("responses_scored", "responses_labelled", "responses"),
    "citations": ("judged_topics_answered", "judged_topics"),
}


def per_response_rows(*, label_set: ResponseLabelSet) -> Iterator[list[Any]]:
    """label set, run, topic, each measure, then coverage counts, for every scored response (by run and turn)."""
    table = sel.label_set_scores(label_set=label_set)
    measures = sel.measures_of(label_set)
    rows = Response.objects.filter(pk__in=list(table.per_response)).values_list(
        "pk", "run__name", "turn_id", "turn__turn_id"
    )
    per_turn = {t: len(v) for t, v in _live_nuggets(label_set.bank_id).items()} if label_set.bank_id else {}
    for pk, run, turn, turn_id in sorted(rows, key=lambda r: (r[1], turn_sort_key(r[3]))):
        figures = table.per_response[pk]
        if isinstance(table, scores.NuggetTable):
            extra = [table.labelled.get(pk, 0), per_turn.get(turn, 0)]
        else:
            extra = [int(figures["sentences"]), int(figures["cited"]), int(figures["judged"])]
        yield [label_set.name, run, turn_id, *(figures[m] for m in measures), *extra]


def per_run_rows(*, label_set: ResponseLabelSet) -> Iterator[list[Any]]:
    """label set, run, each measure (empty where nothing is scored), coverage counts, in leaderboard order."""
    measures = sel.measures_of(label_set)
    for r in sel.leaderboard(label_set=label_set, measure=measures[0]):
        values = ["" if r.values[m] is None else r.values[m] for m in measures]
        if label_set.kind == ResponseLabelSet.Kind.NUGGETS:
            extra = [r.scored, r.labelled, r.responses]
        else:
            extra = [r.scored, r.labelled]
        yield [label_set.name, r.run, *values, *extra]


def label_set_download(*, label_set: ResponseLabelSet, what: str) -> StreamingHttpResponse:
    """One of a label set's files (:data:`LABEL_SET_FILES`), streamed; 404 for a file its kind has not."""
    if what not in files_for(label_set):
        raise Http404(f"this label set's downloads are {', '.join(files_for(label_set))}")
    content_type = LABEL_SET_FILES[what][1]
    measures = sel.measures_of(label_set)
    body: Iterator[str]
    if what == "assignments.jsonl":
        body = formats.assignments_jsonl(assignments_rows(label_set=label_set))
    elif what == "citations.jsonl":
        body = formats.citations_jsonl(citation_rows(label_set=label_set))
    elif what == "per-response.csv":
        header = ["label_set", "run", "topic", *measures, *PER_RESPONSE_EXTRA[label_set.kind]]
        body = formats.score_csv(header, per_response_rows(label_set=label_set))
    else:
        header = ["label_set", "run", *measures, *PER_RUN_EXTRA[label_set.kind]]
        body = formats.score_csv(header, per_run_rows(label_set=label_set))
    return attachment(body, file_stem(label_set.collection.name, label_set.name) + "." + what, content_type)
