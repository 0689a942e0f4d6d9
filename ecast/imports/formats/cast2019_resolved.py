"""CAsT 2019 resolved rewrites (the ``cast2019_resolved`` kind): ``turn_id<TAB>manual rewrite`` (CRLF), parsed and
written onto turns that already exist; ``cast_topics`` reads the same file as its optional second file."""

from __future__ import annotations

from django.db import transaction

from ecast.core.bulk import objects_update
from ecast.imports.errors import row_error
from ecast.imports.parsing import Parsed, check_turn_id, tsv_rows
from ecast.imports.writing import Context, Result, raise_if, target_collection, turns_by_id


def parse_resolved_tsv(text: str, *, file: str) -> Parsed:
    """CAsT 2019 resolved utterances: ``turn_id<TAB>manual rewrite`` (CRLF). Records (line, turn_id, text)."""
    p = Parsed(file)
    seen: dict[str, int] = {}
    for n, (turn_id, rewrite) in tsv_rows(p, text, 2):
        if not check_turn_id(p, n, turn_id):
            continue
        if not rewrite:
            p.error(n, f"{turn_id}: empty rewrite")
            continue
        if turn_id in seen:
            p.error(n, f"{turn_id}: already given on line {seen[turn_id]}")
            continue
        seen[turn_id] = n
        p.records.append((n, turn_id, rewrite))
    p.counts = {"rewrites": len(p.records)}
    return p


def write_cast2019_resolved(ctx: Context) -> Result:
    """Resolved (manual) rewrites TSV for turns that already exist."""
    parsed = parse_resolved_tsv(ctx.text(), file=ctx.name)
    raise_if(parsed.errors)
    with transaction.atomic():
        collection = target_collection(ctx, (r[1] for r in parsed.records))
        turns, _ = turns_by_id((r[1] for r in parsed.records), collection)
        errors, changed = [], []
        for n, turn_id, rewrite in parsed.records:
            turn = turns.get(turn_id)
            if turn is None:
                errors.append(row_error(ctx.name, n, f"unknown turn {turn_id} in {collection.name}"))
            elif turn.manual_rewrite != rewrite:
                turn.manual_rewrite = rewrite
                changed.append(turn)
        raise_if(errors)
        objects_update(changed, ["manual_rewrite"])
    return Result(counts={"rewrites": len(parsed.records), "turns_updated": len(changed)}, collection=collection)
