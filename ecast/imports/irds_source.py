"""Topics and qrels of an ``ir_datasets`` dataset, read from its local cache (plain Python, no Django).

ir_datasets keeps each file it knows at a fixed path under ``$IR_DATASETS_HOME`` and fetches a missing one from the
internet. An import must not reach the internet unless the site allows it, so while ``downloads(False)`` is in
effect every fetch ir_datasets attempts is refused, and the refusal becomes an error naming the file that is missing
and where to put it. Corpus documents are never read: the passage texts of CAsT are hundreds of GB.
"""

from __future__ import annotations

import contextvars
import functools
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ecast.core.errors import DomainError
from ecast.imports.errors import ImportFailed, row_error

# The conversational family ecast knows turn by turn; listed first among the offered ids.
CAST_PREFIX = "trec-cast/v1"
# Turn fields of ir_datasets' CAsT queries that the app's own CAsT topic JSON carries under the same name.
CAST_TURN_FIELDS = (
    "raw_utterance",
    "manual_rewritten_utterance",
    "automatic_rewritten_utterance",
    "manual_canonical_result_id",
    "canonical_result_id",
)
DOWNLOAD_SETTING = "ECAST_IR_DATASETS_DOWNLOAD"

_downloads_allowed: contextvars.ContextVar[bool] = contextvars.ContextVar("irds_downloads_allowed", default=True)


class DownloadRefused(DomainError):
    """ir_datasets tried to fetch ``url`` while downloads are off; ``target`` is where it wanted the file."""

    def __init__(self, url: str, target: str | None = None):
        super().__init__(url)
        self.url = url
        self.target = target


@dataclass
class Dataset:
    """What an import takes from one dataset: CAsT topics (or plain queries) and qrels."""

    dataset_id: str
    # CAsT topic JSON as the app's own CAsT import reads it; empty for a dataset that is not conversational.
    topics: list[dict[str, Any]] = field(default_factory=list)
    # (qid, text) of a dataset whose queries are not CAsT turns.
    queries: list[tuple[str, str]] = field(default_factory=list)
    qrels: list[tuple[str, str, int]] = field(default_factory=list)

    @property
    def conversational(self) -> bool:
        return bool(self.topics)

    def topics_json(self) -> str:
        return json.dumps(self.topics, ensure_ascii=False)

    def queries_tsv(self) -> str:
        return "".join(f"{qid}\t{' '.join(text.split())}\n" for qid, text in self.queries)

    def passage_ids(self) -> set[str]:
        """The judged passages and the canonical ones: the passages whose texts assessors and raters read."""
        ids = {docid for _qid, docid, _grade in self.qrels}
        for topic in self.topics:
            ids.update(
                t[k] for t in topic["turn"] for k in ("manual_canonical_result_id", "canonical_result_id") if k in t
            )
        return ids

    def qrels_text(self) -> str:
        return "".join(f"{qid} 0 {docid} {grade}\n" for qid, docid, grade in self.qrels)


def _refused_in(exc: BaseException) -> DownloadRefused | None:
    """The refusal behind ``exc``: ir_datasets wraps the failures of several mirrors in one RuntimeError."""
    if isinstance(exc, DownloadRefused):
        return exc
    for arg in exc.args:
        items = arg if isinstance(arg, list) else [arg]
        for item in items:
            for part in item if isinstance(item, tuple) else (item,):
                if isinstance(part, BaseException) and (found := _refused_in(part)):
                    return found
    return None


@functools.cache
def _guard_installed() -> bool:
    """Wrap ir_datasets' network fetchers once per process so that ``downloads(False)`` refuses them.

    ir_datasets has no offline switch; every fetch goes through one of these classes' ``stream``, and every file
    with a cache path through ``Download.path``, which is where the refusal learns the path it wanted.
    """
    from ir_datasets.util import download

    for name in ("RequestsDownload", "GoogleDriveDownload", "GoogleCloudBucketStream"):
        cls = getattr(download, name, None)
        if cls is None:
            continue

        def stream(self: Any, *args: Any, _original: Any = cls.stream, **kwargs: Any) -> Any:
            if not _downloads_allowed.get():
                raise DownloadRefused(str(getattr(self, "url", "") or type(self).__name__))
            return _original(self, *args, **kwargs)

        cls.stream = stream

    original_path = download.Download.path

    def path(self: Any, force: bool = True) -> Any:
        try:
            return original_path(self, force)
        except Exception as exc:
            refused = _refused_in(exc)
            if refused is None:
                raise
            # ir_datasets keeps the destination only on this attribute; the message needs it.
            refused.target = refused.target or getattr(self, "_cache_path", None)
            raise refused from exc

    download.Download.path = path
    return True


@contextmanager
def downloads(allowed: bool) -> Iterator[None]:
    """Let ir_datasets fetch missing files inside the block, or refuse each fetch with ``DownloadRefused``."""
    _guard_installed()
    token = _downloads_allowed.set(allowed)
    try:
        yield
    finally:
        _downloads_allowed.reset(token)


def _registry() -> Any:
    import ir_datasets

    return ir_datasets.registry


def home() -> Path:
    """The folder ir_datasets reads and downloads into (``$IR_DATASETS_HOME``, by default ~/.ir_datasets)."""
    return Path(os.environ.get("IR_DATASETS_HOME") or Path.home() / ".ir_datasets")


@functools.cache
def offered_ids() -> list[str]:
    """The ids an import can take: the CAsT v1 family first, then every other dataset with queries and qrels
    (the installed ir_datasets' registry, read once per process)."""
    registry = _registry()
    ids = []
    for dataset_id in registry:
        try:
            dataset = registry[dataset_id]
            if dataset.has_queries() and dataset.has_qrels():
                ids.append(dataset_id)
        except Exception:  # noqa: BLE001, S112 - a dataset the installed version cannot describe is not offered
            continue
    return sorted(ids, key=lambda i: (not i.startswith(CAST_PREFIX), i))


def _failed(dataset_id: str, reason: str) -> ImportFailed:
    return ImportFailed([row_error(dataset_id, None, reason)])


def _missing_file(dataset_id: str, refused: DownloadRefused) -> ImportFailed:
    target = refused.target or "ir_datasets' folder ($IR_DATASETS_HOME)"
    copy = f"put a copy of {refused.url} there" if refused.url else "put it back"
    return _failed(
        dataset_id,
        f"{target} is missing from the local ir_datasets cache and downloads are off: {copy}, "
        f"or set {DOWNLOAD_SETTING}=true to let ir_datasets download it",
    )


def passage_texts(dataset_id: str, passage_ids: set[str]) -> tuple[dict[str, str], str]:
    """The texts of ``passage_ids`` from the dataset's corpus when ir_datasets has it locally, and why not when it
    does not: a corpus is never downloaded for an import (CAsT's is hundreds of GB)."""
    source = _registry()[dataset_id]
    if not source.has_docs():
        return {}, f"{dataset_id} has no corpus"
    try:
        with downloads(False):
            found = source.docs_store().get_many(sorted(passage_ids))
    except Exception as exc:  # noqa: BLE001 - any failure to read the corpus is reported, the import goes on
        refused = _refused_in(exc)
        if refused is not None:
            return {}, f"its corpus is not in the local ir_datasets cache ({refused.target or refused.url})"
        return {}, f"its corpus could not be read: {type(exc).__name__}: {exc}"
    texts = {pid: doc.default_text() for pid, doc in found.items()}
    missing = len(passage_ids) - len(texts)
    return texts, f"{missing:,} of {len(passage_ids):,} passages are not in its corpus" if missing else ""


def _is_cast(query_cls: type) -> bool:
    fields = getattr(query_cls, "_fields", ())
    return "topic_number" in fields and "turn_number" in fields and "raw_utterance" in fields


def _cast_topics(queries: Iterator[Any]) -> list[dict[str, Any]]:
    """ir_datasets' CAsT queries back in the shape of the CAsT topic JSON (empty fields left out, as in the files)."""
    topics: dict[int, dict[str, Any]] = {}
    for q in queries:
        topic = topics.setdefault(int(q.topic_number), {"number": int(q.topic_number), "turn": []})
        for source, key in (("topic_title", "title"), ("topic_description", "description")):
            value = getattr(q, source, "")
            if value and key not in topic:
                topic[key] = value
        turn: dict[str, Any] = {"number": int(q.turn_number)}
        turn.update((name, value) for name in CAST_TURN_FIELDS if (value := getattr(q, name, "")))
        topic["turn"].append(turn)
    return list(topics.values())


def load(dataset_id: str, *, allow_downloads: bool) -> Dataset:
    """The topics (or queries) and qrels of ``dataset_id``; ImportFailed naming the id or the missing file."""
    dataset_id = dataset_id.strip()
    registry = _registry()
    if dataset_id not in registry:
        raise _failed(dataset_id, f"ir_datasets has no dataset {dataset_id!r} (for example {CAST_PREFIX}/2020/judged)")
    source = registry[dataset_id]
    if not (source.has_queries() and source.has_qrels()):
        raise _failed(dataset_id, f"ir_datasets dataset {dataset_id!r} has no queries and qrels to import")
    result = Dataset(dataset_id)
    try:
        with downloads(allow_downloads):
            if _is_cast(source.queries_cls()):
                result.topics = _cast_topics(source.queries_iter())
            else:
                result.queries = [(q.query_id, q.default_text()) for q in source.queries_iter()]
            result.qrels = [(r.query_id, r.doc_id, int(r.relevance)) for r in source.qrels_iter()]
    except Exception as exc:
        refused = _refused_in(exc)
        if refused is None and not allow_downloads and isinstance(exc, FileNotFoundError) and exc.filename:
            # ir_datasets remembers a file it found once: one removed since is opened, not fetched again.
            refused = DownloadRefused("", str(exc.filename))
        if refused is not None:
            raise _missing_file(dataset_id, refused) from exc
        raise _failed(dataset_id, f"ir_datasets could not read {dataset_id}: {type(exc).__name__}: {exc}") from exc
    return result
