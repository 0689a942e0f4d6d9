"""CAsTUR turn dependencies (the ``castur`` kind): ``current_turn<TAB>relevant_turn`` with a header, ``x`` for a
self-contained turn; written as each turn's relevant earlier turns and the nearest one it depends on."""

from __future__ import annotations

from collections import defaultdict

from django.db import transaction

from ecast.core.bulk import objects_update
from ecast.imports.errors import row_error
from ecast.imports.parsing import Parsed, check_turn_id, tsv_rows
from ecast.imports.writing import Context, Result, raise_if, target_turns


def parse_castur(text: str, *, file: str) -> Parsed:
    """CAsTUR: ``current_turn<TAB>relevant_turn`` with header; ``x`` = self-contained. Records (line, cur, rel|None)."""
    p = Parsed(file)
    for n, (current, relevant) in tsv_rows(p, text, 2, header=("current_turn", "relevant_turn")):
        if not check_turn_id(p, n, current):
            continue
        if relevant.lower() == "x":
            p.records.append((n, current, None))
            continue
        if not check_turn_id(p, n, relevant):
            continue
        if relevant.split("_")[0] != current.split("_")[0]:
            p.error(n, f"{current}: relevant turn {relevant} belongs to another topic")
            continue
        if int(relevant.split("_")[1]) >= int(current.split("_")[1]):
            p.error(n, f"{current}: relevant turn {relevant} is not an earlier turn")
            continue
        p.records.append((n, current, relevant))
    p.counts = {"rows": len(p.records)}
    return p


def write_castur(ctx: Context) -> Result:
    """CAsTUR dependencies → relevant_turn_numbers (sorted) and depends_on (the nearest relevant earlier turn)."""
    parsed = ctx.parsed(parse_castur)
    all_ids = {r[1] for r in parsed.records} | {r[2] for r in parsed.records if r[2]}
    with transaction.atomic():
        collection, turns = target_turns(ctx, all_ids)
        errors = []
        relevant: dict[str, set[int]] = defaultdict(set)
        for n, cur, rel in parsed.records:
            for tid in (cur, rel):
                if tid and tid not in turns:
                    errors.append(row_error(ctx.name, n, f"unknown turn {tid} in {collection.name}"))
            relevant.setdefault(cur, set())
            if rel:
                relevant[cur].add(int(rel.split("_")[1]))
        raise_if(errors)
        changed = []
        for cur, numbers in relevant.items():
            turn = turns[cur]
            nums = sorted(numbers)
            dep = turns[f"{cur.split('_')[0]}_{nums[-1]}"].pk if nums else None
            if turn.relevant_turn_numbers != nums or turn.depends_on_id != dep:
                turn.relevant_turn_numbers, turn.depends_on_id = nums, dep
                changed.append(turn)
        objects_update(changed, ["relevant_turn_numbers", "depends_on"])
    return Result(counts={"turns": len(relevant), "turns_updated": len(changed)}, collection=collection)
