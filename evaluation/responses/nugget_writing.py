"""Writing nugget banks and imported label sets (the ``nuggets`` and ``citation_support`` kinds); the choices for
re-imports are in :mod:`evaluation.responses.importing`."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from ecast.core.bulk import rows_insert
from ecast.imports.formats.nuggets import ASSIGNMENTS, NuggetItem, NuggetRow
from ecast.imports.formats.rag_answers import ResponseRecord
from ecast.imports.parsing import Parsed
from ecast.imports.writing import Context
from ecast.models import Collection
from evaluation.models import Nugget, NuggetAssignment, NuggetBank, ResponseLabelSet
from evaluation.responses.importing import refuse, response_keys, responses_write, runs_get, split, stamp, user_of


def _key(item: NuggetItem) -> tuple[Any, ...]:
    return (item.text, item.importance, item.grade, item.origin, item.external_id)


def bank_write(bank: NuggetBank, by_turn: dict[int, list[NuggetItem]]) -> tuple[dict[int, list[int]], dict[str, int]]:
    """Give the bank's turns in ``by_turn`` exactly these nuggets, in order: an unchanged turn keeps its rows (and
    their assignments), a changed one is rewritten. Returns turn pk → nugget pks (file order), and counts."""
    current: dict[int, list[tuple[int, tuple[Any, ...]]]] = defaultdict(list)
    for pk, turn, text, importance, grade, origin, external in Nugget.objects.filter(
        bank=bank, turn_id__in=list(by_turn)
    ).values_list("pk", "turn_id", "text", "importance", "grade", "origin", "external_id"):
        current[turn].append((pk, (text, importance, grade, origin, external)))
    kept: dict[int, list[int]] = {}
    stale: list[int] = []
    new: list[Nugget] = []
    for turn, items in by_turn.items():
        have = current.get(turn, [])
        if [k for _pk, k in have] == [_key(i) for i in items]:
            kept[turn] = [pk for pk, _k in have]
            continue
        stale += [pk for pk, _k in have]
        for position, item in enumerate(items):
            provenance = dict(item.metadata)
            new.append(
                Nugget(
                    bank=bank,
                    turn_id=turn,
                    position=position,
                    text=item.text,
                    importance=item.importance,
                    grade=item.grade,
                    origin=item.origin,
                    external_id=item.external_id,
                    provenance=provenance,
                )
            )
    Nugget.objects.filter(pk__in=stale).delete()
    Nugget.objects.bulk_create(new, batch_size=1000)
    for nugget in new:
        kept.setdefault(nugget.turn_id, []).append(nugget.pk)
    counts = {
        "nuggets_created": len(new),
        "nuggets_replaced": len(stale),
        "turns_unchanged": len(by_turn) - len({n.turn_id for n in new}),
    }
    return kept, counts


def label_set_get(
    ctx: Context, collection: Collection, name: str, kind: str, bank: NuggetBank | None
) -> ResponseLabelSet:
    """The imported label set ``name`` emptied for this import, or a new one; one assessed here or made by an LLM
    under that name is refused (an import never overwrites someone's labels)."""
    label_set = ResponseLabelSet.objects.filter(collection=collection, name=name).first()
    if label_set is None:
        return ResponseLabelSet.objects.create(
            collection=collection,
            name=name,
            kind=kind,
            source=ResponseLabelSet.Source.IMPORTED,
            bank=bank,
            source_file=ctx.name,
            created_by=user_of(ctx),
        )
    if label_set.source != ResponseLabelSet.Source.IMPORTED or label_set.kind != kind:
        raise refuse(
            ctx,
            f"label set {name!r} exists as {label_set.get_kind_display().lower()} "
            f"({label_set.get_source_display().lower()}): choose another name with label_set=…",
        )
    label_set.assignments.all().delete()
    label_set.citation_labels.all().delete()
    label_set.bank, label_set.source_file = bank, ctx.name
    return label_set


def assignments_write(
    ctx: Context,
    collection: Collection,
    bank: NuggetBank,
    turns: dict[str, int],
    nuggets: dict[int, list[int]],
    parsed: Parsed,
) -> tuple[ResponseLabelSet, dict[str, Any]]:
    """The imported nugget-assignment label set of a nuggetizer file with assignments, and the runs and responses
    it judges (created from ``answer_text`` when missing)."""
    name = str(ctx.options.get("label_set") or f"{bank.name} assignments")[:100]
    label_set = label_set_get(ctx, collection, name, ResponseLabelSet.Kind.NUGGETS, bank)
    rows: list[NuggetRow] = parsed.records
    by_run: dict[str, list[NuggetRow]] = defaultdict(list)
    for row in rows:
        by_run[row.run].append(row)
    runs = runs_get(ctx, collection, by_run, "nuggetizer")
    existing = set(response_keys(runs.values()))
    batches = [
        (
            runs[run_name],
            [
                (
                    turns[row.qid],
                    ResponseRecord(row.line, run_name, row.qid, row.answer_text, length=row.length),
                    # Punkt only for the answers to create: a re-import splits nothing.
                    [] if (runs[run_name].pk, turns[row.qid]) in existing else split(row.answer_text),
                )
                for row in run_rows
            ],
        )
        for run_name, run_rows in by_run.items()
    ]
    created = sum(c["created"] for c in responses_write(batches, replace=False).values())
    responses = response_keys(runs.values())
    now = stamp()
    out: list[tuple[Any, ...]] = [
        (label_set.pk, responses[(runs[row.run].pk, turns[row.qid])], nugget, label, "", "", {}, [], now, now)
        for row in rows
        for nugget, label in zip(nuggets[turns[row.qid]], row.assignments or [], strict=True)
    ]
    fields = ["label_set_id", "response_id", "nugget_id", "label", "condition", "prompt", "provenance", "history"]
    rows_insert(NuggetAssignment, [*fields, "created_at", "updated_at"], out, analyze=True)
    label_set.save()  # updated_at: cached scores of this set are stale
    labels = [r[3] for r in out]
    counts: dict[str, Any] = {"label_set": label_set.name, "labels_written": len(out), "responses_created": created}
    counts.update({f"written_{a}": labels.count(a) for a in ASSIGNMENTS})
    return label_set, counts
