"""Import by ir_datasets id (the ``ir_datasets`` kind): topics and qrels read from ir_datasets' local cache.

The dataset is read by ``ecast.imports.irds_source`` and written by the app's own writers, so a CAsT year imported
this way gives the very conversations, turns and judgments its files give: the topics through the CAsT topics writer,
the qrels through the qrels kind (evaluation's, looked up in the registry). A dataset that is not conversational
becomes one single-turn conversation per query, as a qrels import with ``create_turns`` makes them. Everything is
written in one transaction: a missing file or a bad row leaves nothing behind. Passage texts (option ``passages``)
come from the dataset's corpus only where ir_datasets has it locally; otherwise the job warns that they were not
imported.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from django.conf import settings
from django.db import transaction

from ecast.imports import irds_source
from ecast.imports.errors import ImportFailed, row_error
from ecast.imports.formats.cast_topics import write_cast_topics
from ecast.imports.writing import Context, Result, passages_upsert
from ecast.models import Collection

KIND = "ir_datasets"
OPTIONS = ("dataset", "version", "passages")
PASSAGES_SKIPPED = "passage texts not imported"
PASSAGES_HOW = (
    "option passages=true reads the judged and canonical passages from the dataset's corpus when ir_datasets has it "
    "locally; or import their texts with a passages import"
)


def dataset_of(ctx: Context) -> str:
    """The dataset id of a job: its ``dataset`` option, else the first line of its file (what the import page and
    ``import_data`` store, so that a job whose worker died is restarted like any other)."""
    if ctx.options.get("dataset"):
        return str(ctx.options["dataset"]).strip()
    lines = ctx.text().strip().splitlines()
    return lines[0].strip() if lines else ""


def parse_ir_datasets(dataset_id: str, *, allow_downloads: bool) -> irds_source.Dataset:
    """The parse side of the format: the dataset's queries and qrels, read from ir_datasets' local cache (fetched
    only when ``allow_downloads``); a missing file or an unknown id fails naming it."""
    return irds_source.load(dataset_id, allow_downloads=allow_downloads)


def write_ir_datasets(ctx: Context) -> Result:
    """Topics (or queries) and qrels of the ``dataset`` option's ir_datasets id, from the local cache."""
    # The qrels writer is evaluation's, registered after this module is imported.
    from ecast.imports import registry

    dataset_id = dataset_of(ctx)
    if not dataset_id:
        raise ImportFailed([row_error(ctx.name, None, "no ir_datasets id given (option dataset)")])
    data = parse_ir_datasets(dataset_id, allow_downloads=settings.ECAST_IR_DATASETS_DOWNLOAD)
    qrels_kind = registry.get("qrels")
    if qrels_kind is None:
        raise ImportFailed([row_error(dataset_id, None, "qrels cannot be imported here (no qrels import kind)")])
    version = str(ctx.options.get("version") or "original")
    counts: dict = {}
    with tempfile.TemporaryDirectory(prefix="ecast-irds-") as tmp, transaction.atomic():
        folder = Path(tmp)
        qrels_options: dict = {"version": version}
        if data.conversational:
            topics_path = folder / "topics.json"
            topics_path.write_text(data.topics_json(), encoding="utf-8")
            topics_ctx = _sub(ctx, topics_path, dataset_id, ctx.collection, {})
            topics = write_cast_topics(topics_ctx)
            ctx.warnings.extend(topics_ctx.warnings)
            collection = topics.collection
            counts.update(topics.counts)
        else:
            collection = ctx.collection or Collection.objects.get_or_create(name=dataset_id[:100])[0]
            queries_path = folder / "queries.tsv"
            queries_path.write_text(data.queries_tsv(), encoding="utf-8")
            qrels_options.update(create_turns=True, queries=str(queries_path))
        qrels_path = folder / "qrels.txt"
        qrels_path.write_text(data.qrels_text(), encoding="utf-8")
        qrels_ctx = _sub(ctx, qrels_path, dataset_id, collection, qrels_options)
        qrels = qrels_kind.writer(qrels_ctx)
        ctx.warnings.extend(qrels_ctx.warnings)
        counts.update(qrels.counts)
        skipped = PASSAGES_HOW
        if ctx.flag("passages"):
            texts, skipped = irds_source.passage_texts(dataset_id, data.passage_ids())
            if texts:
                created, updated = passages_upsert(texts.items(), source=dataset_id, collection=collection)
                counts.update(passages_created=created, passages_updated=updated)
    if skipped:
        ctx.warnings.append(row_error(dataset_id, None, f"{PASSAGES_SKIPPED}: {skipped}", kind="passage texts"))
    return Result(counts={"dataset": dataset_id, **counts}, collection=collection, extra=qrels.extra)


def _sub(ctx: Context, path: Path, name: str, collection: Collection | None, options: dict) -> Context:
    """The context of one of the app's writers, on a file made from the dataset (no upload limit: not an upload)."""
    return Context(path=path, name=name, collection=collection, options=options, user=ctx.user, progress=ctx.progress)
