"""The ECAsT release CSV (the ``ecast_csv`` kind): ``TURN_ID,MANUAL PARAPHRASE,RAW PARAPHRASE``, parsed and written
as approved manual + raw paraphrase pairs of imported turns."""

from __future__ import annotations

import csv
import io
from collections import Counter
from typing import Any

from django.db import transaction
from django.utils import timezone

from ecast.core.bulk import ids_reserve, rows_insert
from ecast.core.csvfiles import restore_cell
from ecast.imports.errors import row_error
from ecast.imports.parsing import Parsed, check_turn_id
from ecast.imports.writing import CHUNK, Context, Result, raise_if, turn_keys
from ecast.models import Collection, Paraphrase

ECAST_HEADER = ["TURN_ID", "MANUAL PARAPHRASE", "RAW PARAPHRASE"]


def parse_ecast_csv(text: str, *, file: str) -> Parsed:
    """ECAsT CSV ``TURN_ID,MANUAL PARAPHRASE,RAW PARAPHRASE``. Records (line, turn_id, manual, raw)."""
    p = Parsed(file)
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except (StopIteration, csv.Error) as exc:
        p.error(1, f"cannot read the CSV header: {exc}")
        return p
    if [h.strip().upper() for h in header] != ECAST_HEADER:
        p.error(1, f"header must be {','.join(ECAST_HEADER)}, found {','.join(header)}")
        return p
    start = reader.line_num + 1
    try:
        for row in reader:
            n = start
            start = reader.line_num + 1
            if not row or not any(c.strip() for c in row):
                continue
            if len(row) != 3:
                p.error(n, f"expected 3 columns (turn id, manual, raw), found {len(row)}")
                continue
            # Texts are kept byte for byte (some published rows end in a space) so a release round-trips exactly;
            # the apostrophe the app's CSV writer puts before formula-like text is removed (ecast.core.csvfiles rule).
            turn_id, manual, raw = row[0].strip(), restore_cell(row[1]), restore_cell(row[2])
            if not check_turn_id(p, n, turn_id):
                continue
            if not manual.strip() or not raw.strip():
                p.error(n, f"{turn_id}: empty {'manual' if not manual else 'raw'} paraphrase")
                continue
            p.records.append((n, turn_id, manual, raw))
    except csv.Error as exc:
        p.error(reader.line_num, f"malformed CSV: {exc}")
    p.counts = {"rows": len(p.records)}
    return p


def _norm(text: str) -> str:
    return " ".join(text.split())


def write_ecast_csv(ctx: Context) -> Result:
    """ECAsT CSV rows → approved manual + raw Paraphrase pairs; identical rows are kept as separate pairs.

    Idempotency key: (turn, manual text, raw text, occurrence number of that row within the turn), compared with
    the pairs an earlier import created, so re-importing adds nothing and a round trip keeps the multiset of rows.
    """
    parsed = ctx.parsed(parse_ecast_csv)
    ids = {r[1] for r in parsed.records}
    with transaction.atomic():
        keys = turn_keys(ids, ctx.collection)
        found = Counter(tid for tid, _pk, _c in keys)
        ambiguous = {tid for tid, n in found.items() if n > 1}
        turns = {tid: (pk, cid) for tid, pk, cid in keys if tid not in ambiguous}
        errors = []
        for n, turn_id, _m, _r in parsed.records:
            if turn_id in ambiguous:
                errors.append(row_error(ctx.name, n, f"turn {turn_id} exists in several collections; choose one"))
            elif turn_id not in turns:
                where = f" in {ctx.collection.name}" if ctx.collection else ""
                errors.append(row_error(ctx.name, n, f"unknown turn {turn_id}{where}: import its topics first"))
        raise_if(errors)
        turn_pks = {pk for pk, _c in turns.values()}
        existing: Counter[tuple[int, str, str]] = Counter()
        pairs = (
            Paraphrase.objects.filter(
                turn_id__in=turn_pks, kind=Paraphrase.Kind.MANUAL, origin=Paraphrase.Origin.IMPORTED
            )
            .exclude(pair=None)
            .values_list("turn_id", "text", "pair__text")
        )
        for turn_pk, manual, raw in pairs.iterator(chunk_size=CHUNK):
            existing[(turn_pk, _norm(manual), _norm(raw))] += 1
        seen: Counter[tuple[int, str, str]] = Counter()
        # (turn pk, manual text, raw text, provenance): rows without model objects, 18k of them for the full file
        new_pairs: list[tuple[int, str, str, dict[str, Any]]] = []
        for n, turn_id, manual, raw in parsed.records:
            turn_pk = turns[turn_id][0]
            key = (turn_pk, _norm(manual), _norm(raw))
            seen[key] += 1
            if seen[key] <= existing[key]:
                continue
            new_pairs.append((turn_pk, manual, raw, {"source": ctx.name, "line": n, "format": "ECAsT CSV"}))
        user_id = ctx.user.pk if ctx.user is not None and getattr(ctx.user, "pk", None) else None
        _insert_pairs(new_pairs, user_id)
    counts = {"rows": len(parsed.records), "pairs_created": len(new_pairs), "already_present": len(parsed.records)}
    counts["already_present"] -= len(new_pairs)
    counts["turns"] = len(ids)
    collection = ctx.collection
    if collection is None and turns:
        cids = {cid for _pk, cid in turns.values()}
        collection = Collection.objects.get(pk=cids.pop()) if len(cids) == 1 else None
    return Result(counts=counts, collection=collection)


def _insert_pairs(pairs: list[tuple[int, str, str, dict[str, Any]]], user_id: int | None) -> None:
    """Insert approved imported manual/raw paraphrase pairs, each row pointing at its partner.

    Both ids of every pair are reserved first, in one statement (``ids_reserve``), so both halves and both links go
    in one load: no second pass to find the manual rows again and point them at their partners. Every turn pk
    was resolved in the caller's transaction.
    """
    if not pairs:
        return
    now = timezone.now()
    cols = ["id", "turn_id", "kind", "text", "status", "origin", "provenance", "is_current", "created_at"]
    cols += ["updated_at", "created_by_id", "pair_id"]
    approved, imported = Paraphrase.Status.APPROVED.value, Paraphrase.Origin.IMPORTED.value
    manual_kind, raw_kind = Paraphrase.Kind.MANUAL.value, Paraphrase.Kind.RAW.value
    ids = ids_reserve(Paraphrase, 2 * len(pairs))
    rows = []
    for (turn_pk, manual, raw, prov), m_id, r_id in zip(pairs, ids[::2], ids[1::2], strict=True):
        rows += [
            (m_id, turn_pk, manual_kind, manual, approved, imported, prov, True, now, now, user_id, r_id),
            (r_id, turn_pk, raw_kind, raw, approved, imported, prov, True, now, now, user_id, m_id),
        ]
    rows_insert(Paraphrase, cols, rows, analyze=True)
