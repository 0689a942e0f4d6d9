"""What every writer shares: the context it is given, the result it reports, and the lookups of turns and the
one way passage texts are written.

Each format of ``ecast.imports.formats`` writes with these: it parses first (pure Python, progress reported), then
inside one ``transaction.atomic`` checks every record against the database, raises ``ImportFailed`` with *all* bad
rows before writing anything, and writes with bulk operations. Re-importing the same file changes nothing
(idempotent).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ecast.core.bulk import objects_update, rows_insert
from ecast.imports.errors import ImportFailed, row_error
from ecast.imports.parsing import Parsed
from ecast.imports.readers import read_text
from ecast.models import Collection, Passage, Turn

CHUNK = 2000


@dataclass
class Context:
    """Everything a writer needs: the file, its display name, the target collection and the options."""

    path: Path
    name: str
    collection: Collection | None
    options: dict[str, Any]
    user: Any = None
    max_bytes: int | None = None
    progress: Callable[[int, int], None] | None = None
    warnings: list[dict[str, Any]] = field(default_factory=list)

    def text(self, path: Path | None = None, name: str | None = None) -> str:
        """The decoded text of the file (or of ``path``, a second file), within the upload limit."""
        return read_text(path or self.path, name=name or self.name, max_bytes=self.max_bytes)

    def parsed(self, parse: Callable[..., Parsed]) -> Parsed:
        """``parse`` of the file's text; ImportFailed with every bad row when it has any (nothing is written then)."""
        parsed = parse(self.text(), file=self.name)
        raise_if(parsed.errors)
        return parsed

    def flag(self, key: str) -> bool:
        """A boolean option: true for True, 1, "true", "yes" or "on"."""
        value = self.options.get(key, False)
        if isinstance(value, str):
            return value.strip().lower() in ("1", "true", "yes", "on")
        return bool(value)


@dataclass
class Result:
    """What a writer reports: counts for the job page, the collection written to, and ids for the caller."""

    counts: dict[str, Any]
    collection: Collection | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def raise_if(errors: list[dict[str, Any]]) -> None:
    """Raise ``ImportFailed`` with every error when there is any (writers validate everything before writing)."""
    if errors:
        raise ImportFailed(errors)


def chunks(items: list, size: int = CHUNK) -> Iterable[list]:
    """``items`` in slices of ``size`` (the lookups of many ids go by chunks)."""
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _turns_by_id(turn_ids: Iterable[str], collection: Collection | None) -> tuple[dict[str, Turn], set[str]]:
    """turn_id → Turn within the collection, or across collections when none is given; and the ambiguous ids."""
    ids = sorted(set(turn_ids))
    found: dict[str, list[Turn]] = defaultdict(list)
    for chunk in chunks(ids):
        qs = Turn.objects.filter(turn_id__in=chunk)
        if collection is not None:
            qs = qs.filter(collection=collection)
        for t in qs:
            found[t.turn_id].append(t)
    ambiguous = {tid for tid, ts in found.items() if len(ts) > 1}
    return {tid: ts[0] for tid, ts in found.items() if len(ts) == 1}, ambiguous


def turn_keys(turn_ids: Iterable[str], collection: Collection | None) -> list[tuple[str, int, int]]:
    """(turn_id, pk, collection pk) of the turns with these ids, in the collection or in any: plain values, for
    writers that only point rows at turns (loading Turn objects with their texts was a tenth of a run import)."""
    ids = sorted(set(turn_ids))
    keys: list[tuple[str, int, int]] = []
    for chunk in chunks(ids):
        qs = Turn.objects.filter(turn_id__in=chunk)
        if collection is not None:
            qs = qs.filter(collection=collection)
        keys += qs.values_list("turn_id", "pk", "collection_id")
    return keys


def _infer_collection(turn_ids: Iterable[str]) -> Collection | None:
    """The collection holding most of these turn ids (ids collide across collections, e.g. 81_1)."""
    ids = sorted(set(turn_ids))
    votes: Counter[int] = Counter()
    for chunk in chunks(ids):
        votes.update(Turn.objects.filter(turn_id__in=chunk).values_list("collection_id", flat=True))
    if not votes:
        return None
    return Collection.objects.get(pk=votes.most_common(1)[0][0])


def target_turns(ctx: Context, turn_ids: Iterable[str]) -> tuple[Collection, dict[str, Turn]]:
    """The chosen collection, else the one holding most of these turn ids (ImportFailed when there is none), and its
    turns with these ids, by id."""
    ids = set(turn_ids)
    collection = ctx.collection or _infer_collection(ids)
    if collection is None:
        raise ImportFailed([row_error(ctx.name, None, "no collection given and none of its turn ids is known")])
    turns, _ambiguous = _turns_by_id(ids, collection)  # none: one collection
    return collection, turns


def fields_set(obj: Any, values: dict[str, Any]) -> bool:
    """Give ``obj`` these field values (unsaved) when any differs; whether it did (a re-import changes nothing)."""
    if all(getattr(obj, k) == v for k, v in values.items()):
        return False
    for k, v in values.items():
        setattr(obj, k, v)
    return True


def passages_upsert(
    records: Iterable[tuple[str, str]], *, source: str, collection: Collection | None = None
) -> tuple[int, int]:
    """Create or update passages by id, ``records`` being (id, text); returns (created, updated). Same text:
    untouched. Each passage joins ``collection``'s corpus (whatever its text). The one way passage texts are written
    (topic files, crowd CSVs, streamed corpora)."""
    texts = dict(records)
    source = source[:300]
    created = updated = 0
    link = Passage.collections.through
    for chunk in chunks(list(texts)):
        existing = {p.passage_id: p for p in Passage.objects.filter(passage_id__in=chunk)}
        new = [(pid, texts[pid], source) for pid in chunk if pid not in existing]
        changed = []
        for pid, row in existing.items():
            if row.text != texts[pid]:
                row.text, row.source = texts[pid], source
                changed.append(row)
        # Rows without model objects: bulk_create spends most of a large import in Python per value.
        rows_insert(Passage, ["passage_id", "text", "source"], new, analyze=True)
        objects_update(changed, ["text", "source"])
        created, updated = created + len(new), updated + len(changed)
        if collection is not None:
            pks = Passage.objects.filter(passage_id__in=chunk).values_list("pk", flat=True)
            link.objects.bulk_create(
                [link(passage_id=pk, collection_id=collection.pk) for pk in pks], ignore_conflicts=True
            )
    return created, updated
