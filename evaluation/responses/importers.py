"""The ``responses``, ``nuggets`` and ``citation_support`` import kinds: their writers and their registration
(``register()``, called from ``evaluation.importers.register``). What they share, and the choices made for
re-imports, is in :mod:`evaluation.responses.importing`."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any

from django.db import transaction
from django.urls import reverse

from ecast.core.bulk import rows_insert
from ecast.imports import registry, sniff
from ecast.imports.errors import row_error
from ecast.imports.formats.nuggets import parse_citation_judgments, parse_ikat_nuggets, parse_nuggets_jsonl
from ecast.imports.formats.rag_answers import (
    ResponseRecord,
    parse_ikat_responses,
    parse_rag_answers,
    parse_responses_tsv,
)
from ecast.imports.parsing import Parsed
from ecast.imports.writing import Context, Result, raise_if
from ecast.models import Collection, ImportJob
from evaluation.models import (
    CitationLabel,
    LabelCondition,
    NuggetBank,
    ResponseLabelSet,
    ResponseRun,
    ResponseSentence,
)
from evaluation.responses import nugget_writing
from evaluation.responses.importing import (
    file_stem,
    first_json_object,
    refuse,
    response_keys,
    responses_write,
    runs_get,
    sentences_align,
    split,
    stamp,
    turns_of,
    user_of,
)

RESPONSE_OPTIONS = ("name", "description", "create_turns", "queries")
NUGGET_OPTIONS = ("bank", "label_set", "create_turns", "queries")
CITATION_OPTIONS = ("label_set", "condition", "drop_team", "create_turns", "queries")


def parser_of(text: str, parsers: dict[str, Callable[..., Parsed]], fallback: str) -> Callable[..., Parsed]:
    """The parser of the format the sniffer sees (``ecast.imports.sniff``, the one place a file's format is told
    from how it starts); ``fallback``'s when it sees none of ``parsers``, whose errors then say what is wrong."""
    sniffed = sniff.sniff_text(text)
    seen = [f for f in parsers if sniffed is not None and f in sniffed.formats]
    return parsers[seen[0] if seen else fallback]


RESPONSE_PARSERS: dict[str, Callable[..., Parsed]] = {
    "rag_answers_jsonl": parse_rag_answers,
    "ikat_responses_json": parse_ikat_responses,
    "responses_tsv": parse_responses_tsv,
}
NUGGET_PARSERS: dict[str, Callable[..., Parsed]] = {
    "nuggets_jsonl": parse_nuggets_jsonl,
    "ikat_nuggets_json": parse_ikat_nuggets,
}


def write_responses(ctx: Context) -> Result:
    """Answers into response runs, one per run id of the file (option ``name`` renames a file's only run); a run of
    the same name is replaced (see ``importing``)."""
    text = ctx.text()
    fallback = "ikat_responses_json" if text.lstrip().startswith("{") else "responses_tsv"
    parsed = parser_of(text, RESPONSE_PARSERS, fallback)(text, file=ctx.name)
    raise_if(parsed.errors)
    ctx.warnings.extend(parsed.warnings)
    records: list[ResponseRecord] = parsed.records
    names = sorted({r.run for r in records})
    rename = str(ctx.options.get("name") or "").strip()
    if rename and len(names) > 1:
        raise refuse(ctx, f"option name renames a file's only run; this file holds {len(names)} runs")
    first: dict[str, int | None] = {}
    for r in records:
        first.setdefault(r.qid, r.line)
    fmt = parsed.extra["format"]
    totals: dict[str, int] = defaultdict(int)
    run_ids: list[int] = []
    with transaction.atomic():
        collection, turns = turns_of(ctx, first, parsed.extra["queries"], kind="responses file")
        by_run: dict[str, list[ResponseRecord]] = defaultdict(list)
        for r in records:
            by_run[rename or r.run].append(r)
        before = set(
            ResponseRun.objects.filter(collection=collection, name__in=[n[:200] for n in by_run]).values_list(
                "pk", flat=True
            )
        )
        runs = runs_get(ctx, collection, by_run, fmt)
        batches = [
            (runs[name], [(turns[r.qid], r, r.sentences if r.sentences is not None else split(r.text)) for r in rows])
            for name, rows in by_run.items()
        ]
        written = responses_write(batches, replace=True)
        for run, items in batches:
            run.source_file, run.source_format = ctx.name, fmt
            report = {"responses": len(items), "sentences": sum(len(s) for _t, _r, s in items), **written[run.pk]}
            run.import_report = report
            if ctx.options.get("description"):
                run.description = str(ctx.options["description"])
            run_ids.append(run.pk)
            for key, value in report.items():
                totals[key] += value
        ResponseRun.objects.bulk_update(
            [run for run, _i in batches], ["source_file", "source_format", "import_report", "description"]
        )
        totals["runs_replaced"] = len(before)
    counts = {"format": fmt, "runs": len(by_run), **totals, "citations": parsed.counts["citations"]}
    extra = {"run_id": run_ids[0]} if len(run_ids) == 1 else {}
    return Result(counts=counts, collection=collection, extra=extra)


def write_nuggets(ctx: Context) -> Result:
    """A nugget bank (option ``bank``, default the file's name) from nuggetizer JSONL or iKAT nugget JSON; with
    assignments, also an imported nugget-assignment label set (option ``label_set``) and the answers it judges."""
    text = ctx.text()
    # Unseen: a first line that is a whole object is a JSONL row (its parser names what the row lacks).
    fallback = "nuggets_jsonl" if first_json_object(text) is not None else "ikat_nuggets_json"
    parse = parser_of(text, NUGGET_PARSERS, fallback)
    ikat = parse is parse_ikat_nuggets
    parsed = parse(text, file=ctx.name)
    raise_if(parsed.errors)
    ctx.warnings.extend(parsed.warnings)
    if ikat and ctx.flag("create_turns"):
        raise refuse(ctx, "iKAT nuggets belong to the turns of iKAT topics: import the topics first (no create_turns)")
    bank_name = str(ctx.options.get("bank") or file_stem(ctx.name))[:100]
    lines: dict[str, int | None] = {}
    for row in parsed.records:
        lines.setdefault(row.qid, row.line)
    texts = {row.qid: row.query for row in parsed.records if row.query}
    with transaction.atomic():
        collection, turns = turns_of(ctx, lines, texts, kind="nugget file")
        bank, created = NuggetBank.objects.get_or_create(
            collection=collection,
            name=bank_name,
            defaults={"source_file": ctx.name, "created_by": user_of(ctx)},
        )
        by_turn = {turns[row.qid]: row.nuggets for row in parsed.records}
        nuggets, bank_counts = nugget_writing.bank_write(bank, by_turn)
        bank.source_file = ctx.name
        bank.save()
        counts: dict[str, Any] = {**parsed.counts, "bank": bank.name, "bank_created": int(created), **bank_counts}
        extra: dict[str, Any] = {"bank_id": bank.pk}
        if parsed.counts.get("labels"):
            label_set, assigned = nugget_writing.assignments_write(ctx, collection, bank, turns, nuggets, parsed)
            counts.update(assigned)
            extra["label_set_id"] = label_set.pk
    return Result(counts=counts, collection=collection, extra=extra)


def write_citation_support(ctx: Context) -> Result:
    """TREC RAG 2024 citation support judgments into an imported citation label set (option ``label_set``, default
    the file's name; ``condition`` blind by default: the NIST file was judged without the LLM's prediction)."""
    parsed = ctx.parsed(parse_citation_judgments)
    ctx.warnings.extend(parsed.warnings)
    condition = str(ctx.options.get("condition", LabelCondition.BLIND.value))
    if condition not in LabelCondition.values:
        raise refuse(ctx, f"condition {condition!r} is not one of {', '.join(repr(v) for v in LabelCondition.values)}")
    name = str(ctx.options.get("label_set") or file_stem(ctx.name))[:100]
    drop_team = ctx.flag("drop_team")

    def run_of(run_id: str) -> str:
        # NIST names the judged runs "<team>.<run>", the nugget file "<run>": drop_team makes them meet (44 of the
        # 45 RAG 2024 runs; NIST's "webis.webis-manual" is "webis-manual-manual" there).
        return run_id.split(".", 1)[1] if drop_team and "." in run_id else run_id

    lines: dict[str, int | None] = {}
    for row in parsed.records:
        lines.setdefault(row.qid, row.line)
    with transaction.atomic():
        collection, turns = turns_of(ctx, lines, {}, kind="citation support file")
        label_set = nugget_writing.label_set_get(ctx, collection, name, ResponseLabelSet.Kind.CITATIONS, None)
        by_run: dict[str, list] = defaultdict(list)
        for row in parsed.records:
            by_run[run_of(row.run)].append(row)
        runs = runs_get(ctx, collection, by_run, "citations")
        batches = []
        for run_name, rows in by_run.items():
            items = []
            for row in rows:
                sentences = [(s.text, [ref for ref, _sup in s.citations]) for s in row.sentences]
                text = " ".join(t for t, _c in sentences if t)
                items.append((turns[row.qid], ResponseRecord(row.line, run_name, row.qid, text), sentences))
            batches.append((runs[run_name], items))
        created = sum(c["created"] for c in responses_write(batches, replace=False).values())
        responses = response_keys(runs.values())
        realigned, refused = sentences_align(batches, responses)
        errors = [
            row_error(
                ctx.name,
                record.line,
                f"{record.qid} / {record.run}: the stored answer's sentences differ from the file's and carry "
                "citation labels of another set",
            )
            for _turn, record, _sentences in refused
        ]
        raise_if(errors)
        sentence_pks = {
            (rid, index): pk
            for pk, rid, index in ResponseSentence.objects.filter(response_id__in=responses.values()).values_list(
                "pk", "response_id", "index"
            )
        }
        now, seen = stamp(), set()
        rows_out: list[tuple[Any, ...]] = []
        for row in parsed.records:
            rid = responses[(runs[run_of(row.run)].pk, turns[row.qid])]
            # Every judged sentence has its row now: the response was made, or realigned, from the file's sentences.
            for position, s in enumerate(row.sentences):
                spk = sentence_pks[(rid, position)]
                for ref, support in s.citations:
                    if support is None or (spk, ref) in seen:
                        continue
                    seen.add((spk, ref))
                    rows_out.append((label_set.pk, spk, ref, support, condition, "", {}, [], now, now))
        fields = ["label_set_id", "sentence_id", "passage_id", "support", "condition", "prompt"]
        rows_insert(
            CitationLabel, [*fields, "provenance", "history", "created_at", "updated_at"], rows_out, analyze=True
        )
        label_set.save()  # updated_at: cached scores of this set are stale
    counts = {**parsed.counts, "label_set": label_set.name, "labels_written": len(rows_out)}
    counts.update(runs=len(runs), responses_created=created, responses_realigned=realigned)
    counts["condition"] = condition or "not recorded"
    return Result(counts=counts, collection=collection, extra={"label_set_id": label_set.pk})


# ---------------------------------------------------------------- registration


def _links(job: ImportJob) -> dict[str, str]:
    """What the import wrote (its run, bank or label set) and the collection's responses page."""
    counts = job.counts or {}
    pages = {"Response run": "responses-run", "Nugget bank": "responses-bank", "Label set": "responses-label-set"}
    keys = {"Response run": "run_id", "Nugget bank": "bank_id", "Label set": "label_set_id"}
    found = {label: reverse(pages[label], args=[counts[keys[label]]]) for label in pages if counts.get(keys[label])}
    index = reverse("responses-index")
    found["Responses"] = f"{index}?collection={job.collection_id}" if job.collection_id else index
    return found


def _existing_run(collection: Collection, options: dict[str, Any]) -> ResponseRun | None:
    name = str(options.get("name") or "")[:200]
    return ResponseRun.objects.filter(collection=collection, name=name).first() if name else None


def _existing_bank(collection: Collection, options: dict[str, Any]) -> NuggetBank | None:
    name = str(options.get("bank") or "")[:100]
    return NuggetBank.objects.filter(collection=collection, name=name).first() if name else None


def register() -> None:
    """Add the three response-level kinds to ecast's import registry, after the run kind (idempotent)."""
    registry.register(
        registry.ImportKind(
            "responses",
            "Responses: TREC RAG 2024/2025 answer JSONL, iKAT run or responses JSON, or TSV (turn, run, response)",
            write_responses,
            options=RESPONSE_OPTIONS,
            second_file="queries",
            existing=_existing_run,
            links=_links,
            formats=("rag_answers_jsonl", "ikat_responses_json", "responses_tsv"),
            help=(
                "One response run per run id in the file (a run of the same name is replaced). TREC RAG citations "
                "become the cited segment ids of each sentence; iKAT and TSV responses are split into sentences. "
                "Ad hoc topics (RAG 2024 '2024-105741'): create_turns=true makes one turn each, its text from the "
                "file's topic."
            ),
        ),
        after="ptkb_qrels",
    )
    registry.register(
        registry.ImportKind(
            "nuggets",
            "Nuggets: nuggetizer JSONL (with or without assignments) or iKAT 2024 nugget JSON",
            write_nuggets,
            options=NUGGET_OPTIONS,
            second_file="queries",
            existing=_existing_bank,
            links=_links,
            formats=("nuggets_jsonl", "ikat_nuggets_json"),
            help=(
                "Nuggets into a bank (bank=…, default the file's name). A file with run_id and assignments (the "
                "TREC RAG 2024 NIST file) also makes an imported nugget-assignment label set (label_set=…) and the "
                "answers it judges, from answer_text. iKAT nuggets keep their 1–4 grade and id; their turns must "
                "exist."
            ),
        ),
        after="responses",
    )
    registry.register(
        registry.ImportKind(
            "citation_support",
            "Citation support judgments: TREC RAG 2024 JSONL (sentences, citations, support 0/1/2)",
            write_citation_support,
            options=CITATION_OPTIONS,
            second_file="queries",
            links=_links,
            formats=("citation_support_jsonl",),
            help=(
                "An imported citation-support label set (label_set=…); condition=blind (default), post_edit or "
                "empty. Runs and responses the file judges are created from its sentences when missing; "
                "drop_team=true names NIST's '<team>.<run>' runs '<run>', as the nugget file does."
            ),
        ),
        after="nuggets",
    )
