"""The import kinds: for each, its writer, label, options, second file and the hooks of kinds other apps own.

ecast registers its own kinds below. A kind whose rows live in another app is registered by that app from its
``AppConfig.ready()`` (evaluation registers qrels and runs in ``evaluation.importers.register``), so ecast never
imports that app: the kind's hooks tell ecast what a job wrote, what an import would update and where to look next.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.urls import reverse

from ecast.imports import sniff
from ecast.imports.formats import (
    cast2019_resolved,
    cast2022_topics,
    cast_topics,
    castur,
    clef_queries,
    crowd_passages,
    ecast_csv,
    ikat_topics,
    irds,
    passages,
    utterance_labels,
)
from ecast.imports.writing import Context, Result
from ecast.models import Collection, ImportJob

Writer = Callable[[Context], Result]


@dataclass(frozen=True)
class ImportKind:
    """One import format and what ecast needs to know about it."""

    name: str
    label: str
    writer: Writer
    # The options it understands; any other option is refused before a byte is read.
    options: tuple[str, ...] = ()
    # The path option that a second uploaded file fills (the resolved TSV of topics, the queries of runs).
    second_file: str | None = None
    # The object a succeeded job wrote (a Run, a QrelsVersion), for services that return it.
    written: Callable[[ImportJob], Any] | None = None
    # The object an import with these options would update (same collection and name), or None.
    existing: Callable[[Collection, dict[str, Any]], Any] | None = None
    # Pages to visit after the import, {label: url}, shown on its job page.
    links: Callable[[ImportJob], dict[str, str]] | None = None
    # The file formats it reads (names of ``sniff.READABLE``): a file that looks like another format is refused
    # with one message before it is parsed. Empty: any file goes to the parser.
    formats: tuple[str, ...] = ()
    # A sentence or two for the import page: what the kind makes of a file and the options that matter.
    help: str = ""


_KINDS: dict[str, ImportKind] = {}


def register(kind: ImportKind, *, after: str | None = None) -> None:
    """Add or replace a kind; ``after`` lists it right after another kind (the import page's order)."""
    unknown = [f for f in kind.formats if f not in sniff.READABLE]
    if unknown:
        raise ValueError(f"import kind {kind.name!r} names unknown format(s) {', '.join(unknown)}")
    items = [(name, k) for name, k in _KINDS.items() if name != kind.name]
    position = len(items)
    if after is not None:
        names = [name for name, _k in items]
        if after not in names:
            raise ValueError(f"cannot list import kind {kind.name!r} after unknown kind {after!r}")
        position = names.index(after) + 1
    items.insert(position, (kind.name, kind))
    _KINDS.clear()
    _KINDS.update(items)


def get(name: str) -> ImportKind | None:
    """The kind registered as ``name``, or None."""
    return _KINDS.get(name)


def kinds() -> list[ImportKind]:
    """Every registered kind, in listing order."""
    return list(_KINDS.values())


def names() -> list[str]:
    """The names of every registered kind, in listing order."""
    return list(_KINDS)


def second_file(name: str) -> str | None:
    """The path option a second uploaded file fills for kind ``name`` (None: the kind takes none)."""
    kind = _KINDS.get(name)
    return kind.second_file if kind else None


def formats_of(name: str) -> tuple[str, ...]:
    """The formats kind ``name`` reads (empty: unknown kind, or one that does not say)."""
    kind = _KINDS.get(name)
    if kind is None:
        return ()
    return kind.formats


def readers_of(fmt: str) -> list[ImportKind]:
    """The kinds that read format ``fmt``, in listing order."""
    return [k for k in _KINDS.values() if fmt in formats_of(k.name)]


def choices() -> list[tuple[str, str]]:
    """(name, label) of every kind, for form fields (callable, so kinds registered later are listed too)."""
    return [(k.name, k.label) for k in _KINDS.values()]


for _kind in (
    ImportKind(
        "cast_topics",
        "CAsT topics JSON (2019/2020/2021)",
        cast_topics.write_cast_topics,
        options=("year", "resolved_tsv"),
        second_file="resolved_tsv",
        formats=("cast_topics_json",),
    ),
    ImportKind(
        "cast2019_resolved",
        "CAsT 2019 resolved rewrites TSV",
        cast2019_resolved.write_cast2019_resolved,
        formats=("cast2019_resolved_tsv",),
    ),
    ImportKind(
        "cast2022_topics",
        "CAsT 2022 topics JSON (tree or flattened)",
        cast2022_topics.write_cast2022_topics,
        formats=("cast2022_tree_json", "cast2022_flattened_json"),
    ),
    ImportKind(
        "ikat_topics",
        "iKAT topics JSON (2023–2025)",
        ikat_topics.write_ikat_topics,
        options=("year",),
        formats=("ikat_topics_json",),
    ),
    ImportKind(
        "ecast_csv",
        "ECAsT paraphrase CSV",
        ecast_csv.write_ecast_csv,
        links=lambda _job: {"Release": reverse("releases")},
        formats=("ecast_csv",),
    ),
    ImportKind(
        "utterance_labels",
        "Utterance classes TSV (SE/FT/PT)",
        utterance_labels.write_utterance_labels,
        options=("skip_unknown",),
        formats=("utterance_labels_tsv",),
    ),
    ImportKind("castur", "CAsTUR turn dependencies TSV", castur.write_castur, formats=("castur_tsv",)),
    # Streamed (formats.passages): MS MARCO-size files in flat memory; only_needed keeps the pooled/judged/ranked ids.
    ImportKind(
        "passages_tsv",
        "Passages TSV (id<TAB>text)",
        passages.write_passages_tsv,
        options=passages.OPTIONS,
        formats=("passages_tsv",),
    ),
    ImportKind(
        "passages_jsonl",
        "Passages JSONL",
        passages.write_passages_jsonl,
        options=passages.OPTIONS,
        formats=("passages_jsonl",),
    ),
    ImportKind(
        "crowd_passages",
        "Passages from crowd CSV (Input.passage)",
        crowd_passages.write_crowd_passages,
        formats=("crowd_csv",),
    ),
    ImportKind(
        "clef_queries",
        "CLEF eHealth topics XML, 2016–2018 and 2021 (ad hoc turns)",
        clef_queries.write_clef_queries,
        formats=("clef_queries_xml", "clef_topics_xml"),
    ),
    ImportKind(
        irds.KIND,
        "From ir_datasets (dataset id: topics and qrels from its local cache)",
        irds.write_ir_datasets,
        options=irds.OPTIONS,
    ),
):
    register(_kind)
