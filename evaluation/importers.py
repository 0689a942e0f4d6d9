"""Writers for qrels and TREC runs (evaluation.models), with the domain events evaluation listens to.

``register()`` (called from ``EvaluationConfig.ready()``) adds both import kinds to ecast's import registry, and
gives ecast the qrels lookup its preprocessing needs, so ecast never imports evaluation.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from ecast.core import providers
from ecast.core.bulk import rows_insert
from ecast.imports import registry
from ecast.imports.errors import ImportFailed, row_error
from ecast.imports.formats.clef_queries import resolve_qids
from ecast.imports.formats.pyterrier_run import header_of_line, parse_pyterrier_run_file
from ecast.imports.formats.qrels import parse_qrels
from ecast.imports.formats.runs import SpooledRun, first_text_line, parse_run_file
from ecast.imports.parsing import Parsed
from ecast.imports.writing import Context, Result, raise_if
from ecast.models import Collection, ImportJob, PtkbStatement, TestSet, Turn
from ecast.services import ptkb_collection_sync
from evaluation import events, selectors
from evaluation.models import Qrel, QrelsVersion, Run, RunTurn
from evaluation.models.core import DocIdsField, ScoresField

# The relevance scale every collection is judged on (CAsT, iKAT; ECAsT Table 6): 0 fails to meet … 4 fully meets.
# A grade outside it (a typo, a file of another scale) would skew every graded measure, so the import refuses it.
RELEVANCE_GRADES = range(0, 5)
GRADES_SHOWN = "0–4"
MAX_GRADE_ERRORS = 200


def write_qrels(ctx: Context) -> Result:
    """Qrels into a version (option ``version``, default "original"); re-import replaces its imported rows.

    Unknown turn ids are errors (judgments for turns that do not exist cannot be evaluated) unless
    ``create_turns`` makes each unknown qid a single-turn conversation. Assessed rows in the version are kept.
    """
    parsed = parse_qrels(ctx.text(), file=ctx.name, progress=ctx.progress)
    raise_if(parsed.errors)
    if not parsed.records:
        raise ImportFailed([row_error(ctx.name, None, "no qrels lines found")])
    raise_if(
        [
            row_error(ctx.name, n, f"grade {grade} of {docid} is outside the relevance scale {GRADES_SHOWN}")
            for n, _qid, docid, grade in parsed.records
            if grade not in RELEVANCE_GRADES
        ][:MAX_GRADE_ERRORS]
    )
    version_name = str(ctx.options.get("version") or "original")
    with transaction.atomic():
        qids = {r[1] for r in parsed.records}
        collection, turns, unknown = resolve_qids(ctx, qids, kind="qrels file")
        if unknown:
            first: dict[str, int] = {}
            for n, qid, _d, _g in parsed.records:
                first.setdefault(qid, n)
            raise_if(
                [
                    row_error(ctx.name, first[q], f"unknown turn {q} in {collection.name} (import its topics first)")
                    for q in sorted(unknown, key=first.__getitem__)
                ]
            )
        version, created, wanted, changed_turns = _replace_imported_qrels(
            ctx, collection, version_name, [(turns[q], d, g) for _n, q, d, g in parsed.records]
        )
    counts = {"qrels": len(wanted), **_import_counts(parsed, wanted, changed_turns, created)}
    return Result(counts=counts, collection=collection, extra={"version_id": version.pk})


def _ptkb_source(ctx: Context, qids: set[str]) -> Collection:
    """The iKAT collection a PTKB file is about: the chosen one (or the one its companion mirrors), else the one
    holding most of its turn ids."""
    collection = ctx.collection or resolve_qids(ctx, qids, kind="PTKB relevance file")[0]
    return collection.ptkb_source


def write_ptkb_qrels(ctx: Context) -> Result:
    """iKAT PTKB relevance (``9-1_1 0 <statement number> <0|1>``) into a qrels version of the collection's PTKB
    companion (option ``version``, default the file's name, e.g. "ptkb_rel_nist"); re-import replaces its imported
    rows. Unknown turns, statement numbers the turn's PTKB lacks and grades other than 0/1 are errors."""
    parsed = parse_qrels(ctx.text(), file=ctx.name, progress=ctx.progress)
    raise_if(parsed.errors)
    if not parsed.records:
        raise ImportFailed([row_error(ctx.name, None, "no PTKB relevance lines found")])
    version_name = str(ctx.options.get("version") or Path(ctx.name).stem)[:100]
    with transaction.atomic():
        source = _ptkb_source(ctx, {r[1] for r in parsed.records})
        turns = {t.turn_id: t for t in Turn.objects.filter(collection=source)}
        statements: dict[int, set[str]] = {}
        for conv_pk, number in PtkbStatement.objects.filter(conversation__collection=source).values_list(
            "conversation_id", "number"
        ):
            statements.setdefault(conv_pk, set()).add(str(number))
        errors, reported = [], set()
        for n, qid, item, grade in parsed.records:
            turn = turns.get(qid)
            if turn is None:
                if qid not in reported:
                    reported.add(qid)
                    errors.append(row_error(ctx.name, n, f"unknown turn {qid} in {source.name} (import its topics)"))
                continue
            known = statements.get(turn.conversation_id, set())
            if item not in known:
                have = f"statements {', '.join(sorted(known, key=int))}" if known else "no PTKB"
                errors.append(
                    row_error(ctx.name, n, f"unknown PTKB statement {item!r} for {qid} (its user has {have})")
                )
            elif grade not in (0, 1):
                errors.append(row_error(ctx.name, n, f"PTKB relevance is 0 or 1, got {grade}"))
        raise_if(errors)
        try:
            companion = ptkb_collection_sync(collection=source)
        except ValidationError as exc:
            raise ImportFailed([row_error(ctx.name, None, "; ".join(exc.messages))]) from exc
        mirrored = dict(Turn.objects.filter(collection=companion).values_list("turn_id", "pk"))
        version, created, wanted, changed_turns = _replace_imported_qrels(
            ctx, companion, version_name, [(mirrored[q], d, g) for _n, q, d, g in parsed.records]
        )
    counts = {
        "judgments": len(wanted),
        "relevant": sum(1 for g in wanted.values() if g > 0),
        **_import_counts(parsed, wanted, changed_turns, created),
    }
    return Result(counts=counts, collection=companion, extra={"version_id": version.pk})


def _import_counts(
    parsed: Parsed, wanted: dict[tuple[int, str], int], changed_turns: set[int], created: bool
) -> dict[str, int]:
    """What a qrels-like import reports besides its rows: turns, duplicates, rows an assessor's grade kept."""
    return {
        "turns": len({t for t, _ in wanted}),
        "duplicate_lines": parsed.counts.get("duplicate_lines", 0),
        "kept_assessed": len(parsed.records) - len(wanted),
        "turns_changed": len(changed_turns),
        "version_created": int(created),
    }


def _replace_imported_qrels(
    ctx: Context, collection: Collection, version_name: str, records: list[tuple[int, str, int]]
) -> tuple[QrelsVersion, bool, dict[tuple[int, str], int], set[int]]:
    """Make a version's imported rows exactly ``records`` (turn pk, item, grade), keeping its assessed rows (an
    assessor's grade wins over the file's); tells evaluation which turns changed. Call inside a transaction."""
    version, created = QrelsVersion.objects.get_or_create(
        collection=collection,
        name=version_name,
        defaults={"source_file": ctx.name, "created_by": ctx.user if getattr(ctx.user, "pk", None) else None},
    )
    old_turns = set(Qrel.objects.filter(version=version, source=Qrel.Source.IMPORTED).values_list("turn_id", flat=True))
    current = {
        (t, p): g for t, p, g in Qrel.objects.filter(version=version).values_list("turn_id", "passage_id", "grade")
    }
    assessed = set(
        Qrel.objects.filter(version=version, source=Qrel.Source.ASSESSED).values_list("turn_id", "passage_id")
    )
    wanted = {(t, d): g for t, d, g in records if (t, d) not in assessed}
    imported_now = {k: v for k, v in current.items() if k not in assessed}
    changed_turns: set[int] = set()
    if imported_now != wanted:
        # Turns with a row added, removed or regraded (the symmetric difference of the items, without building
        # two sets of 40,000 pairs for it).
        changed_turns = {key[0] for key, grade in wanted.items() if imported_now.get(key) != grade}
        changed_turns.update(key[0] for key in imported_now.keys() - wanted.keys())
        Qrel.objects.filter(version=version, source=Qrel.Source.IMPORTED).delete()
        now, version_pk, imported = timezone.now(), version.pk, Qrel.Source.IMPORTED.value  # not once per row
        rows_insert(
            Qrel,
            ["version_id", "turn_id", "passage_id", "grade", "source", "created_at"],
            [(version_pk, t, p, g, imported, now) for (t, p), g in wanted.items()],
            analyze=True,
        )
        version.source_file = ctx.name
        version.save(update_fields=["source_file", "updated_at"])
        events.qrels_changed(version_id=version.pk, turn_ids=changed_turns | (old_turns - {t for t, _ in wanted}))
    return version, created, wanted, changed_turns


def write_run(ctx: Context) -> Result:
    """A TREC run or a PyTerrier results CSV, normalised (deduplicated, re-ranked); a run of the same name in the
    collection is replaced.

    Unknown turn ids are reported as warnings and their lines skipped, or fail the import with ``strict``. The file
    is read twice, with flat memory: first checked whole and each turn's ranking spooled to disk (nothing is
    written on a bad line), then the spool is written turn by turn inside the transaction.
    """
    first = first_text_line(ctx.path, name=ctx.name, max_bytes=ctx.max_bytes)
    parse = parse_pyterrier_run_file if header_of_line(first) is not None else parse_run_file
    with tempfile.TemporaryFile(prefix="ecast-run-") as spool:
        data = parse(ctx.path, name=ctx.name, spool=spool, max_bytes=ctx.max_bytes, progress=ctx.progress)
        return _run_write(ctx, data)


def _run_write(ctx: Context, data: SpooledRun) -> Result:
    """Store a checked, spooled run: the run row, then its rankings read back from the spool one turn at a time."""
    report: dict[str, Any] = dict(data.report)
    name = str(ctx.options.get("name") or (report["tags"][0] if report["tags"] else Path(ctx.name).stem))[:200]
    test_set = None
    with transaction.atomic():
        collection, turns, unknown = resolve_qids(ctx, set(data.first_line), kind="run")
        if ctx.options.get("test_set_id"):
            test_set = TestSet.objects.filter(pk=int(ctx.options["test_set_id"]), collection=collection).first()
            if test_set is None:
                raise ImportFailed([row_error(ctx.name, None, "test set not found in this collection")])
        unknown_sorted = sorted(unknown, key=data.first_line.__getitem__)
        if unknown and ctx.flag("strict"):
            where = collection.name
            raise_if([row_error(ctx.name, data.first_line[q], f"unknown turn {q} in {where}") for q in unknown_sorted])
        skipped_lines = sum(data.sizes[q] for q in unknown)
        for q in unknown_sorted:
            reason = f"unknown turn {q} in {collection.name}: its lines were skipped"
            ctx.warnings.append(row_error(ctx.name, data.first_line[q], reason, kind="unknown turn"))
        if report["duplicate_lines"]:
            reason = f"{report['duplicate_lines']} duplicate (qid, docid) line(s); kept the best"
            ctx.warnings.append(row_error(ctx.name, None, reason, kind="duplicate lines"))
        report.update(unknown_turns=unknown_sorted, skipped_documents=skipped_lines, name=name)
        user = ctx.user if getattr(ctx.user, "pk", None) else None
        values: dict[str, Any] = {"source_file": ctx.name, "import_report": report}
        if ctx.options.get("description"):
            values["description"] = str(ctx.options["description"])
        if test_set is not None:
            values["test_set"] = test_set
        run, created = Run.objects.get_or_create(
            collection=collection, name=name, defaults={**values, "created_by": user, "test_set": test_set}
        )
        if not created:
            RunTurn.objects.filter(run=run).delete()
            for key, value in values.items():
                setattr(run, key, value)
            run.save()
        # Rows without model objects, in the fields' stored layout (newline-joined ids, packed doubles), streamed
        # from the spool into one COPY on PostgreSQL. Every turn id was resolved in this transaction (unknown ones
        # are skipped above).
        run_pk = run.pk
        rows_insert(
            RunTurn,
            ["run_id", "turn_id", "doc_ids", "scores"],
            (
                (run_pk, turns[q], DocIdsField.pack(docs), ScoresField.pack(scores))
                for q, docs, scores in data.rankings(turns)
            ),
            analyze=True,
        )
        events.run_imported(run_id=run.pk)
    counts = {
        "turns": len(data.first_line) - len(unknown),
        "documents": report["documents"] - skipped_lines,
        "duplicate_lines": report["duplicate_lines"],
        "unknown_turns": len(unknown),
        "replaced": int(not created),
    }
    return Result(counts=counts, collection=collection, extra={"run_id": run.pk})


def _links(job: ImportJob) -> dict[str, str]:
    run_id = (job.counts or {}).get("run_id")
    run = {"Run": reverse("evaluation-run", args=[run_id])} if run_id else {}
    return {**run, "Leaderboard": reverse("evaluation-leaderboard")}


def _written_version(job: ImportJob) -> QrelsVersion:
    return QrelsVersion.objects.get(pk=job.counts["version_id"])


def _written_run(job: ImportJob) -> Run:
    return Run.objects.get(pk=job.counts["run_id"])


def _existing_version(collection: Collection, options: dict[str, Any]) -> QrelsVersion | None:
    return QrelsVersion.objects.filter(collection=collection, name=str(options.get("version") or "original")).first()


def _existing_ptkb_version(collection: Collection, options: dict[str, Any]) -> QrelsVersion | None:
    # Without a version option the version is named after the file, which only the upload tells.
    name = str(options.get("version") or "")[:100]
    companion = collection if collection.ptkb_of_id else Collection.objects.filter(ptkb_of=collection).first()
    if not name or companion is None:
        return None
    return QrelsVersion.objects.filter(collection=companion, name=name).first()


def _ptkb_links(job: ImportJob) -> dict[str, str]:
    collection = f"?collection={job.collection_id}" if job.collection_id else ""
    return {
        "Agreement": reverse("evaluation-agreement") + collection,
        "Leaderboard": reverse("evaluation-leaderboard") + collection,
    }


def _existing_run(collection: Collection, options: dict[str, Any]) -> Run | None:
    # Without a name option the run is named after its tag, which only the file tells.
    name = str(options.get("name") or "")[:200]
    return Run.objects.filter(collection=collection, name=name).first() if name else None


def register() -> None:
    """Register the qrels and run import kinds and the qrels lookup with ecast (idempotent)."""
    registry.register(
        registry.ImportKind(
            "qrels",
            "Qrels (qid iter docid grade)",
            write_qrels,
            options=("version", "create_turns", "queries"),
            second_file="queries",
            written=_written_version,
            existing=_existing_version,
            links=_links,
            formats=("trec_qrels",),
        ),
        after="castur",
    )
    registry.register(
        registry.ImportKind(
            "ptkb_qrels",
            "iKAT PTKB relevance (turn 0 statement 0|1)",
            write_ptkb_qrels,
            options=("version",),
            written=_written_version,
            existing=_existing_ptkb_version,
            links=_ptkb_links,
            formats=("ikat_ptkb_qrels",),
        ),
        after="qrels",
    )
    registry.register(
        registry.ImportKind(
            "run",
            "Run: TREC (qid Q0 docid rank score tag) or PyTerrier CSV (qid,docno,score,rank)",
            write_run,
            options=("name", "description", "test_set_id", "strict", "create_turns", "queries"),
            second_file="queries",
            written=_written_run,
            existing=_existing_run,
            links=_links,
            formats=("trec_run", "pyterrier_run_csv"),
        ),
        after="qrels",
    )
    providers.qrels_lookup_register(selectors.turn_qrels)
    # Answers of RAG systems, nugget banks and their label sets (issue 33): their own module, same registry.
    from evaluation.responses import importers as response_importers

    response_importers.register()
