"""Utterance classes (the ``utterance_labels`` kind, Mele et al. 2021): ``qid<TAB>utterance<TAB>SE|FT|PT``, parsed
and written as each turn's class."""

from __future__ import annotations

from django.db import transaction

from ecast.core.bulk import objects_update
from ecast.imports.errors import row_error
from ecast.imports.parsing import Parsed, turn_rows
from ecast.imports.writing import Context, Result, raise_if, target_turns

UTTERANCE_CLASSES = ("SE", "FT", "PT")


def parse_utterance_labels(text: str, *, file: str) -> Parsed:
    """SE/FT/PT labels (Mele et al. 2021): ``qid<TAB>utterance<TAB>SE|FT|PT``. Records (line, qid, label)."""
    p = Parsed(file)

    def bad(cols: list[str]) -> str:
        return "" if cols[2].upper() in UTTERANCE_CLASSES else f"{cols[0]}: label {cols[2]!r} is not one of SE, FT, PT"

    rows = turn_rows(p, text, 3, bad=bad, again="already labelled")
    p.records = [(n, qid, label.upper()) for n, (qid, _utterance, label) in rows]
    p.counts = {"labels": len(p.records)}
    return p


def write_utterance_labels(ctx: Context) -> Result:
    """SE/FT/PT labels; rows for unknown turns are errors, or skipped and counted with option skip_unknown."""
    parsed = ctx.parsed(parse_utterance_labels)
    with transaction.atomic():
        collection, turns = target_turns(ctx, (r[1] for r in parsed.records))
        skip = ctx.flag("skip_unknown")
        errors, changed, skipped = [], [], 0
        for n, qid, label in parsed.records:
            turn = turns.get(qid)
            if turn is None:
                if skip:
                    skipped += 1
                    continue
                errors.append(
                    row_error(ctx.name, n, f"unknown turn {qid} in {collection.name} (use skip_unknown=true to skip)")
                )
            elif turn.is_system:
                errors.append(row_error(ctx.name, n, f"{qid} is a System turn: only User turns have a class"))
            elif turn.utterance_class != label:
                turn.utterance_class = label
                changed.append(turn)
        raise_if(errors)
        objects_update(changed, ["utterance_class"])
    if skipped:
        reason = f"skipped {skipped} row(s) for turns not in {collection.name}"
        ctx.warnings.append(row_error(ctx.name, None, reason, kind="unknown turn"))
    counts = {"labels": len(parsed.records) - skipped, "turns_updated": len(changed), "skipped_unknown": skipped}
    return Result(counts=counts, collection=collection)
