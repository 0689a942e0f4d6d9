"""CAsT 2019 resolved rewrites (the ``cast2019_resolved`` kind): ``turn_id<TAB>manual rewrite`` (CRLF), parsed and
written onto turns that already exist; ``cast_topics`` reads the same file as its optional second file."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import transaction

from ecast.core.bulk import objects_update
from ecast.imports.errors import row_error
from ecast.imports.parsing import Parsed, turn_rows
from ecast.imports.writing import Context, Result, raise_if, target_turns
from ecast.models import Turn


def parse_resolved_tsv(text: str, *, file: str) -> Parsed:
    """CAsT 2019 resolved utterances: ``turn_id<TAB>manual rewrite`` (CRLF). Records (line, turn_id, text)."""
    p = Parsed(file)
    rows = turn_rows(p, text, 2, bad=lambda cols: "" if cols[1] else f"{cols[0]}: empty rewrite", again="already given")
    p.records = [(n, turn_id, rewrite) for n, (turn_id, rewrite) in rows]
    p.counts = {"rewrites": len(p.records)}
    return p


def write_cast2019_resolved(ctx: Context) -> Result:
    """Resolved (manual) rewrites TSV for turns that already exist."""
    parsed = ctx.parsed(parse_resolved_tsv)
    with transaction.atomic():
        collection, turns = target_turns(ctx, (r[1] for r in parsed.records))
        errors, changed = rewrites_set(
            parsed, turns, unknown=lambda turn_id: f"unknown turn {turn_id} in {collection.name}"
        )
        raise_if(errors)
        objects_update(changed, ["manual_rewrite"])
    return Result(counts={"rewrites": len(parsed.records), "turns_updated": len(changed)}, collection=collection)


def rewrites_set(
    parsed: Parsed, turns: dict[str, Turn], *, unknown: Callable[[str], str]
) -> tuple[list[dict[str, Any]], list[Turn]]:
    """Give each turn of a parsed resolved TSV its manual rewrite (unsaved): (an error, ``unknown(turn_id)``, for each
    id not in ``turns``; the turns changed)."""
    errors, changed = [], []
    for n, turn_id, rewrite in parsed.records:
        turn = turns.get(turn_id)
        if turn is None:
            errors.append(row_error(parsed.file, n, unknown(turn_id)))
        elif turn.manual_rewrite != rewrite:
            turn.manual_rewrite = rewrite
            changed.append(turn)
    return errors, changed
