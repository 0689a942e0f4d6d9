"""Import services: one entry point (``import_file``) used by the admin page, the REST API and ``import_data``.

Every import is recorded as an ImportJob: progress while it runs, then either counts (succeeded) or the full
{file, line, reason} error report (failed, with nothing else written). The kinds, their writers, options and
formats come from ``ecast.imports.registry``. Before any parsing the head of the file is sniffed
(``ecast.imports.sniff``): a file in a format the kind does not read fails with one message saying what it looks
like and what the kind reads, instead of an error for every line.
"""

from __future__ import annotations

import logging
import re
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.files.base import ContentFile
from django.db import connection, transaction
from django.utils import timezone

from ecast.core import jobs
from ecast.core.models import ACTIVE_STATUSES
from ecast.imports import registry, sniff
from ecast.imports.errors import ImportFailed, row_error
from ecast.imports.formats import irds
from ecast.imports.writing import Context
from ecast.models import Collection, ImportJob, TestSet, Turn

log = logging.getLogger(__name__)

KIND = "import"  # the job kind the heartbeat, the claim and the sweeper know imports by
MAX_WARNINGS = 500
PROGRESS_EVERY_S = 0.5


def _progress_updater(job: ImportJob) -> Callable[[int, int], None]:
    last = [0.0]

    def update(done: int, total: int) -> None:
        now = time.monotonic()
        if now - last[0] < PROGRESS_EVERY_S and done < total:
            return
        last[0] = now
        job.progress_done, job.progress_total = done, total
        ImportJob.objects.filter(pk=job.pk).update(progress_done=done, progress_total=total)

    return update


def _checked_kind(kind: str, options: dict[str, Any], name: str) -> registry.ImportKind:
    found = registry.get(kind)
    if found is None:
        choose = ", ".join(registry.names())
        raise ImportFailed([row_error(name, None, f"unknown import kind {kind!r}; choose one of {choose}")])
    unknown = sorted(set(options) - set(found.options))
    if unknown:
        allowed = ", ".join(found.options) or "none"
        raise ImportFailed([row_error(name, None, f"unknown option(s) {', '.join(unknown)} for {kind} ({allowed})")])
    return found


def _flag(value: Any) -> bool:
    return value.strip().lower() in ("1", "true", "yes", "on") if isinstance(value, str) else bool(value)


def _checked_format(
    kind: registry.ImportKind,
    sniffed: sniff.Sniffed | None,
    *,
    name: str,
    options: dict[str, Any],
    collection: Collection | None,
) -> None:
    """Refuse, with one message, a file that looks like a format the kind does not read (from its head alone).

    A file that looks like a format the kind reads, or like nothing known, goes on to the parser and its per-line
    errors. Qrels and runs whose turn ids belong to topics ecast cannot import (CAsT 2022, iKAT) are refused too
    unless such turns exist (made ad hoc) or ``create_turns`` will make them.
    """
    reads = registry.formats_of(kind.name)
    if sniffed is None or not reads:
        return
    message = ""
    if sniffed.formats & set(reads):
        if sniffed.id_scheme and not _flag(options.get("create_turns")):
            turns = Turn.objects.filter(turn_id__in=sniffed.qids)
            if collection is not None:
                turns = turns.filter(collection=collection)
            if not turns.exists():
                message = sniff.refusal(
                    sniffed,
                    kind_label=kind.label,
                    reads=list(reads),
                    unknown_ids_in=collection.name if collection is not None else "any collection",
                    create_turns="create_turns" in kind.options,
                )
    else:
        others = [k for k in registry.kinds() if k.name != kind.name]
        read_by = [k.label for k in others if sniffed.formats & set(registry.formats_of(k.name))]
        message = sniff.refusal(sniffed, kind_label=kind.label, reads=list(reads), read_by=read_by)
    if message:
        raise ImportFailed([row_error(name, None, message, kind="format")])


def _sniffed(head: sniff.Head | None) -> sniff.Sniffed | None:
    # The sniffer only sharpens the message for a file of the wrong format: a bug in it must not stop an import.
    try:
        return sniff.sniff(head)
    except Exception:  # noqa: BLE001
        log.exception("could not tell the format of an import file; leaving it to the parser")
        return None


def _sniff_upload(uploaded: Any) -> sniff.Sniffed | None:
    """What an upload looks like, from its head; the upload is rewound for storing."""
    try:
        uploaded.seek(0)
        head = sniff.read_head(uploaded)
        uploaded.seek(0)
    except (AttributeError, OSError, ValueError):
        return None
    return _sniffed(head)


@contextmanager
def _flushed_by_the_final_save() -> Iterator[None]:
    """Let the job's writes before its final save (the job, its progress, the imported rows) commit without waiting
    for the disk: the final save waits for its own commit and therefore, the WAL being written in order, for every
    commit before it, so a job shown finished always has its rows on disk. A crash in between leaves the job
    unfinished, and the sweeper restarts it from its stored upload (imports are idempotent). Two fewer disk
    flushes per file; inside a caller's transaction (tests) there is nothing to flush early."""
    if connection.vendor != "postgresql" or connection.in_atomic_block:
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute("SET synchronous_commit TO off")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("RESET synchronous_commit")


def import_job_execute(*, job: ImportJob, path: Path) -> ImportJob:
    """Run one job's import now: status running → succeeded (counts) or failed (errors, nothing written)."""
    with _flushed_by_the_final_save():
        _job_run(job, path)
    return _job_finish(job)


def _job_finish(job: ImportJob) -> ImportJob:
    """The job's final save (a synchronous commit: see ``_flushed_by_the_final_save``)."""
    if job.status == ImportJob.Status.FAILED:
        job.counts = {"errors": len(job.errors)}
    job.progress_total = max(job.progress_total, 1)
    job.progress_done = job.progress_total
    job.finished_at = timezone.now()
    job.save()
    return job


def _job_run(job: ImportJob, path: Path) -> ImportJob:
    """Check and write the job's file; the outcome goes on ``job`` (status, errors or counts), unsaved."""
    if job.status != ImportJob.Status.RUNNING:
        job.status, job.started_at = ImportJob.Status.RUNNING, timezone.now()
        job.save(update_fields=["status", "started_at"])
    options = dict(job.options or {})
    ctx = Context(
        path=path,
        name=job.file_name,
        collection=job.collection,
        options=options,
        user=job.created_by,
        max_bytes=settings.ECAST_MAX_UPLOAD_BYTES,
        progress=_progress_updater(job),
    )
    try:
        kind = _checked_kind(job.kind, options, job.file_name)
        sniffed = _sniffed(sniff.read_head_of(path))
        _checked_format(kind, sniffed, name=job.file_name, options=options, collection=job.collection)
        result = kind.writer(ctx)
    except ImportFailed as exc:
        job.status, job.errors = ImportJob.Status.FAILED, exc.errors
    except Exception as exc:  # noqa: BLE001 - an unexpected bug must still end the job visibly
        jobs.reraise_transient(exc)  # a lost connection: job_unit runs the import again (it wrote nothing)
        log.exception("import job %s crashed", job.pk)
        job.status = ImportJob.Status.FAILED
        job.errors = [row_error(job.file_name, None, f"internal error: {type(exc).__name__}: {exc}")]
    else:
        job.status, job.errors = ImportJob.Status.SUCCEEDED, []
        job.counts = {**result.counts, **result.extra}
        if ctx.warnings:
            job.counts["warnings"] = ctx.warnings[:MAX_WARNINGS]
            if len(ctx.warnings) > MAX_WARNINGS:
                job.counts["warnings_total"] = len(ctx.warnings)
        if result.collection is not None:
            job.collection = result.collection
    return job


def import_file(
    *,
    kind: str,
    path: Path,
    collection: Collection | None = None,
    options: dict | None = None,
    user: Any = None,
    file_name: str | None = None,
) -> ImportJob:
    """Import one file synchronously and atomically; returns the finished ImportJob (check its status)."""
    path = Path(path)
    with _flushed_by_the_final_save():
        # Created running: the claim below is this process's, and the job runs at once.
        job = ImportJob.objects.create(
            kind=kind,
            collection=collection,
            file_name=file_name or path.name,
            stored_path=str(path),
            options={k: (str(v) if isinstance(v, Path) else v) for k, v in (options or {}).items()},
            created_by=user if getattr(user, "pk", None) else None,
            status=ImportJob.Status.RUNNING,
            started_at=timezone.now(),
        )
        # Claimed and beating like a worker's run, so the sweeper never queues a second copy of a long import.
        ran = jobs.job_unit(KIND, job.pk, lambda: _job_run(job, path), claim=True)
    return job if ran is None else _job_finish(job)


_SAFE_NAME = re.compile(r"[^\w.\-]+")


def import_job_start(
    *,
    kind: str,
    uploaded: Any,
    collection: Collection | None = None,
    options: dict | None = None,
    user: Any = None,
    extra_uploads: dict[str, Any] | None = None,
    file_name: str | None = None,
) -> ImportJob:
    """Store an upload under MEDIA_ROOT/imports and import it in the worker; returns the pending job.

    ``extra_uploads`` maps a path option (``resolved_tsv``, ``queries``) to a second uploaded file. The size limit
    is checked against each upload's declared size before a byte is stored. ``file_name`` is the name the job
    shows, when not the upload's.
    """
    name = file_name or Path(getattr(uploaded, "name", "upload")).name or "upload"
    job = ImportJob.objects.create(
        kind=kind,
        collection=collection,
        file_name=name,
        options=dict(options or {}),
        created_by=user if getattr(user, "pk", None) else None,
    )
    extras = dict(extra_uploads or {})
    limit = settings.ECAST_MAX_UPLOAD_BYTES
    try:
        found = _checked_kind(kind, {**job.options, **extras}, name)
        second_file = found.second_file
        # A path typed into a web form would let a request read any file on the server: upload it instead.
        if second_file in job.options:
            raise ImportFailed([row_error(name, None, f"upload {second_file} as a file, not a path")])
        for upload in (uploaded, *extras.values()):
            size = getattr(upload, "size", None)
            if size is not None and size > limit:
                uname = Path(getattr(upload, "name", name)).name
                reason = f"file is {size:,} bytes; the upload limit (ECAST_MAX_UPLOAD_BYTES) is {limit:,} bytes"
                raise ImportFailed([row_error(uname, None, reason)])
        # Refused before storing, like an oversized upload: the job page and the API answer at once.
        _checked_format(found, _sniff_upload(uploaded), name=name, options=job.options, collection=collection)
    except ImportFailed as exc:
        job.status, job.errors, job.finished_at = ImportJob.Status.FAILED, exc.errors, timezone.now()
        job.save()
        return job
    job.stored_path = str(_store(uploaded, job.pk, name))
    for key, upload in extras.items():
        job.options[key] = str(_store(upload, job.pk, Path(getattr(upload, "name", key)).name))
    job.save(update_fields=["stored_path", "options"])
    transaction.on_commit(lambda: jobs.enqueue("ecast.imports.run_job", job.pk))
    return job


def _dataset_upload(dataset_id: str) -> ContentFile:
    # The id is the job's stored file, so a job whose worker died restarts like an uploaded one.
    return ContentFile(f"{dataset_id.strip()}\n".encode(), name="ir_datasets.txt")


def import_dataset_start(
    *, dataset_id: str, collection: Collection | None = None, options: dict | None = None, user: Any = None
) -> ImportJob:
    """Import an ir_datasets dataset (topics and qrels from its local cache) in the worker; returns the job."""
    return import_job_start(
        kind=irds.KIND,
        uploaded=_dataset_upload(dataset_id),
        collection=collection,
        options=options,
        user=user,
        file_name=dataset_id.strip(),
    )


def import_dataset(
    *, dataset_id: str, collection: Collection | None = None, options: dict | None = None, user: Any = None
) -> ImportJob:
    """``import_dataset_start`` run synchronously (``import_data``); returns the finished job."""
    with tempfile.TemporaryDirectory(prefix="ecast-irds-") as tmp:
        path = Path(tmp) / "ir_datasets.txt"
        path.write_text(f"{dataset_id.strip()}\n", encoding="utf-8")
        return import_file(
            kind=irds.KIND, path=path, collection=collection, options=options, user=user, file_name=dataset_id.strip()
        )


def _store(uploaded: Any, job_id: int, name: str) -> Path:
    folder = Path(settings.MEDIA_ROOT) / "imports"
    folder.mkdir(parents=True, exist_ok=True)
    stored = folder / f"{job_id}-{uuid.uuid4().hex[:8]}-{_SAFE_NAME.sub('_', name)[:100]}"
    with open(stored, "wb") as out:
        chunks = uploaded.chunks() if hasattr(uploaded, "chunks") else iter(lambda: uploaded.read(1 << 20), b"")
        for chunk in chunks:
            out.write(chunk)
    return stored


def import_job_run_by_id(*, job_id: int) -> ImportJob | None:
    """Worker entry point: run a pending job from its stored file (a redelivered finished job is left alone)."""
    job = ImportJob.objects.select_related("collection", "created_by").filter(pk=job_id).first()
    if job is None or job.status in (ImportJob.Status.SUCCEEDED, ImportJob.Status.FAILED):
        return job
    return import_job_execute(job=job, path=Path(job.stored_path))


def import_jobs_active() -> list[tuple[int, Any]]:
    """Jobs the sweeper watches: queued or running, with a stored upload to restart from."""
    active = ImportJob.objects.filter(status__in=ACTIVE_STATUSES)
    return list(active.exclude(stored_path="").values_list("pk", "created_at"))


def import_job_fail(*, job_id: int, reason: str) -> None:
    """End a job the worker cannot finish; nothing was written (imports are atomic)."""
    job = ImportJob.objects.get(pk=job_id)
    ImportJob.objects.filter(pk=job_id, status__in=ACTIVE_STATUSES).update(
        status=ImportJob.Status.FAILED,
        errors=[row_error(job.file_name, None, reason)],
        counts={"errors": 1},
        finished_at=timezone.now(),
    )


def import_job_requeue(*, job_id: int, task: str) -> str:
    """Restart a job whose worker died from its stored upload (safe: the dead run's transaction rolled back)."""
    job = ImportJob.objects.get(pk=job_id)
    if not Path(job.stored_path).is_file():
        import_job_fail(job_id=job_id, reason=f"the stored upload {job.stored_path} is gone; upload the file again")
        return "failed: the stored upload is gone"
    jobs.enqueue(task, job_id)
    return f"restarted the import of {job.file_name} from its stored upload"


def _written(job: ImportJob) -> Any:
    """What a finished job wrote, through its kind's hook; ImportFailed with the job's errors when it failed."""
    if job.status != ImportJob.Status.SUCCEEDED:
        raise ImportFailed(job.errors)
    kind = registry.get(job.kind)
    if kind is None or kind.written is None:
        raise LookupError(f"import kind {job.kind!r} does not tell what it wrote")
    return kind.written(job)


def run_import(
    *,
    collection: Collection,
    path: Path,
    name: str | None = None,
    user: Any = None,
    test_set: TestSet | None = None,
    options: dict | None = None,
) -> Any:
    """Import (or replace) a TREC run and return the Run; raises ImportFailed with every bad line."""
    opts = dict(options or {})
    if name:
        opts["name"] = name
    if test_set is not None:
        opts["test_set_id"] = test_set.pk
    job = import_file(kind="run", path=path, collection=collection, options=opts, user=user)
    return _written(job)


def qrels_import(
    *,
    collection: Collection,
    path: Path,
    version_name: str = "original",
    user: Any = None,
    options: dict | None = None,
) -> Any:
    """Import qrels into a named version and return the QrelsVersion; raises ImportFailed on bad input."""
    opts = {**(options or {}), "version": version_name}
    job = import_file(kind="qrels", path=path, collection=collection, options=opts, user=user)
    return _written(job)
