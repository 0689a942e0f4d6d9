"""What the writers of the response-level imports share (``evaluation.responses.importers``: answers of RAG
systems, nugget banks with or without their assignments, citation support judgments). The parse side of each is an
ecast format module (``ecast.imports.formats.rag_answers`` and ``.nuggets``).

Every writer follows the import contract: parse everything, then inside one transaction check every row against
the database and raise with *all* bad rows before anything is kept; bulk inserts; the same file imported again
changes nothing.

Choices, for a re-import and for files that bring answers beside their labels:

- a response run of the same name is replaced: a response whose text and sentences are unchanged is kept (with
  every label on it), a changed one is rewritten (its sentence labels go with its old sentences), one the file
  no longer holds is deleted;
- a nugget bank of the same name gets the file's nuggets for the turns the file gives: a turn whose nuggets are
  unchanged keeps them (and their assignments); other turns of the bank are left alone;
- a label set of the same name is replaced when it was imported, and refused when it was assessed or made by an
  LLM (an import never overwrites someone's work);
- the nugget-assignment and citation files carry the answers they judge: a run or a response they name that does
  not exist is created from the file (``answer_text`` split into sentences with NLTK Punkt, as preprocessing
  splits turns; the citation file's own sentences); an existing response keeps its text, and the citation file
  gives it its judged sentences when they differ (an answer made from ``answer_text`` has Punkt's split and no
  citations) unless a sentence of it carries citation labels of another set: that file is then refused.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from django.utils import timezone

from ecast.core.bulk import rows_insert
from ecast.imports.errors import ImportFailed, row_error
from ecast.imports.formats.clef_queries import resolve_qids
from ecast.imports.formats.rag_answers import ResponseRecord
from ecast.imports.writing import Context, raise_if
from ecast.models import Collection
from ecast.pipeline.preprocess import split_sentences
from evaluation.models import CitationLabel, Response, ResponseRun, ResponseSentence

Sentences = list[tuple[str, list[str]]]


def user_of(ctx: Context) -> Any:
    return ctx.user if getattr(ctx.user, "pk", None) else None


def file_stem(name: str) -> str:
    """A file's name without its extensions (``nugget_assignment.20241108.jl.gz`` → ``nugget_assignment.20241108``)."""
    stem = Path(name).name
    for ext in (".gz", ".jsonl", ".jl", ".json", ".tsv", ".txt", ".fixed"):
        stem = stem.removesuffix(ext)
    return stem


def first_json_object(text: str) -> dict[str, Any] | None:
    """The first line of a file as a JSON object (a JSONL file's first row), or None."""
    line = text.lstrip().split("\n", 1)[0]
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def turns_of(
    ctx: Context, first_line: dict[str, int | None], texts: dict[str, str], *, kind: str
) -> tuple[Collection, dict[str, int]]:
    """The target collection and qid → turn pk; every unknown qid is an error with the line that names it first
    (with ``create_turns``, unknown qids become single-turn conversations, their texts from the file)."""
    collection, turns, unknown = resolve_qids(ctx, set(first_line), kind=kind, texts=texts)
    if unknown:
        hint = "import its topics first, or use create_turns=true for ad hoc topics"
        raise_if(
            [
                row_error(ctx.name, first_line[q], f"unknown turn {q} in {collection.name} ({hint})")
                for q in sorted(unknown, key=lambda q: (first_line[q] or 0, q))
            ]
        )
    return collection, turns


def split(text: str) -> Sentences:
    """An answer given as one text, as sentences citing nothing (NLTK Punkt, the project's sentence splitter)."""
    return [(s, []) for s in split_sentences(text)] or [(text, [])]


def runs_get(ctx: Context, collection: Collection, names: Iterable[str], fmt: str) -> dict[str, ResponseRun]:
    """The response runs of these names in the collection, those missing created (from this file): two queries
    for a file of 45 runs, not 45."""
    wanted = {name: name[:200] for name in names}
    found = {r.name: r for r in ResponseRun.objects.filter(collection=collection, name__in=set(wanted.values()))}
    missing = sorted(set(wanted.values()) - set(found))
    ResponseRun.objects.bulk_create(
        [
            ResponseRun(collection=collection, name=n, source_file=ctx.name, source_format=fmt, created_by=user_of(ctx))
            for n in missing
        ]
    )
    if missing:
        found.update((r.name, r) for r in ResponseRun.objects.filter(collection=collection, name__in=missing))
    return {name: found[short] for name, short in wanted.items()}


Item = tuple[int, ResponseRecord, Sentences]
COUNTS = ("created", "rewritten", "unchanged", "deleted", "kept")


def responses_write(batches: Sequence[tuple[ResponseRun, Sequence[Item]]], *, replace: bool) -> dict[int, dict]:
    """Make each run's responses those of its items (turn pk, record, sentences), all runs in one set of queries.
    ``replace``: the file is the run (changed responses rewritten, missing ones deleted); else only responses a run
    lacks are created. Returns counts by run pk."""
    runs = [run for run, _items in batches]
    existing = {
        (run, turn): (pk, text, refs, length, meta)
        for pk, run, turn, text, refs, length, meta in Response.objects.filter(run__in=runs).values_list(
            "pk", "run_id", "turn_id", "text", "references", "length", "metadata"
        )
    }
    old_sentences: dict[int, Sentences] = defaultdict(list)
    if replace and existing:
        for rid, text, cites in ResponseSentence.objects.filter(response__run__in=runs).values_list(
            "response_id", "text", "citations"
        ):
            old_sentences[rid].append((text, cites))
    new: list[tuple[Response, Sentences]] = []
    rewrite: list[tuple[Response, Sentences]] = []
    touched: list[Response] = []
    gone: list[int] = []
    counts = {run.pk: dict.fromkeys(COUNTS, 0) for run in runs}
    for run, items in batches:
        tally = counts[run.pk]
        for turn, record, sentences in items:
            values: dict[str, Any] = {"text": record.text, "references": record.references, "length": record.length}
            values["metadata"] = record.metadata
            if (run.pk, turn) not in existing:
                new.append((Response(run=run, turn_id=turn, **values), sentences))
                tally["created"] += 1
                continue
            pk, text, refs, length, meta = existing[(run.pk, turn)]
            if not replace:
                tally["kept"] += 1
            elif text == record.text and old_sentences[pk] == [(t, list(c)) for t, c in sentences]:
                if (refs, length, meta) != (record.references, record.length, record.metadata):
                    touched.append(Response(pk=pk, run=run, turn_id=turn, **values))
                tally["unchanged"] += 1
            else:
                rewrite.append((Response(pk=pk, run=run, turn_id=turn, **values), sentences))
                tally["rewritten"] += 1
        if replace:
            wanted = {turn for turn, _r, _s in items}
            dropped = [v[0] for (r, turn), v in existing.items() if r == run.pk and turn not in wanted]
            gone += dropped
            tally["deleted"] = len(dropped)
    if gone:
        Response.objects.filter(pk__in=gone).delete()
    if rewrite:
        ResponseSentence.objects.filter(response_id__in=[r.pk for r, _s in rewrite]).delete()
    Response.objects.bulk_update(
        [r for r, _s in rewrite] + touched, ["text", "references", "length", "metadata"], batch_size=1000
    )
    Response.objects.bulk_create([r for r, _s in new], batch_size=1000)
    rows = [
        (response.pk, i, text, cites)
        for response, sentences in (*new, *rewrite)
        for i, (text, cites) in enumerate(sentences)
    ]
    rows_insert(ResponseSentence, ["response_id", "index", "text", "citations"], rows, analyze=True)
    return counts


def sentences_align(
    batches: Sequence[tuple[ResponseRun, Sequence[Item]]], keys: dict[tuple[int, int], int]
) -> tuple[int, list[Item]]:
    """Give the stored responses of ``batches`` the file's sentences where theirs differ (an answer made from a
    nugget file's ``answer_text`` was split by Punkt, the citation file has the system's own sentences), unless a
    sentence there carries citation labels; those items are returned, for the caller to refuse. Returns (responses
    rewritten, refused items)."""
    wanted = {keys[(run.pk, item[0])]: item for run, items in batches for item in items}
    stored: dict[int, Sentences] = defaultdict(list)
    for rid, text, cites in ResponseSentence.objects.filter(response_id__in=list(wanted)).values_list(
        "response_id", "text", "citations"
    ):
        stored[rid].append((text, cites))
    differ = [rid for rid, (_t, _r, sentences) in wanted.items() if stored[rid] != [(t, list(c)) for t, c in sentences]]
    labelled = set(
        CitationLabel.objects.filter(sentence__response_id__in=differ).values_list("sentence__response_id", flat=True)
    )
    rewrite = [rid for rid in differ if rid not in labelled]
    ResponseSentence.objects.filter(response_id__in=rewrite).delete()
    rows = [(rid, i, text, cites) for rid in rewrite for i, (text, cites) in enumerate(wanted[rid][2])]
    rows_insert(ResponseSentence, ["response_id", "index", "text", "citations"], rows, analyze=True)
    return len(rewrite), [wanted[rid] for rid in differ if rid in labelled]


def response_keys(runs: Iterable[ResponseRun]) -> dict[tuple[int, int], int]:
    """(run pk, turn pk) → response pk of these runs."""
    return {
        (run, turn): pk
        for pk, run, turn in Response.objects.filter(run__in=list(runs)).values_list("pk", "run_id", "turn_id")
    }


def stamp() -> Any:
    """One timestamp for every row of an import (not one call per row)."""
    return timezone.now()


def refuse(ctx: Context, reason: str) -> ImportFailed:
    return ImportFailed([row_error(ctx.name, None, reason)])
