"""Runs from outside: an uploaded TREC run imported and evaluated in the background; a run's test set and
description."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from ecast.imports.errors import ImportFailed
from ecast.imports.services import run_import
from ecast.models import Collection, TestSet
from evaluation.models import (
    EvaluationJob,
    Run,
)
from evaluation.services.jobs import evaluation_job_create


def _error_text(error: Any, default_file: str) -> str:
    """``file:line: reason`` (line left out when the error is about the whole file)."""
    if not isinstance(error, dict):
        return str(error)
    where = str(error.get("file") or default_file)
    if error.get("line"):
        where += f":{error['line']}"
    return f"{where}: {error.get('reason', error)}"


def run_upload(
    *,
    collection: Collection,
    uploaded: Any,
    name: str | None = None,
    test_set: TestSet | None = None,
    user: Any = None,
    link_hook: Callable[[Run], None] | None = None,
) -> tuple[Run, EvaluationJob]:
    """Import an uploaded TREC run via the importer and start its evaluation in the background.

    ``link_hook`` lets another feature (permutations) attach the new run to its own objects.
    Raises ``ValidationError`` with the importer's file/line/reason messages on bad input.
    """
    if test_set is not None and test_set.collection_id != collection.pk:
        raise ValidationError(f"test_set: {test_set.name!r} belongs to another collection")
    suffix = Path(getattr(uploaded, "name", "run.txt")).name
    with tempfile.TemporaryDirectory(prefix="ecast-run-") as tmp:
        path = Path(tmp) / suffix
        with path.open("wb") as fh:
            for chunk in uploaded.chunks() if hasattr(uploaded, "chunks") else [uploaded.read()]:
                fh.write(chunk)
        try:
            run = run_import(collection=collection, path=path, name=name or None, user=user, test_set=test_set)
        except ImportFailed as exc:
            messages = [_error_text(e, suffix) for e in getattr(exc, "errors", [])] or [str(exc)]
            raise ValidationError(messages) from exc
    if link_hook is not None:
        link_hook(run)
    # The importer's run_created event may already have queued (or, with eager tasks, finished) the evaluation.
    job = EvaluationJob.objects.filter(run=run, kind=EvaluationJob.Kind.RUN).order_by("-id").first()
    if job is None:
        job = evaluation_job_create(collection=collection, kind=EvaluationJob.Kind.RUN, run=run, user=user)
    return run, job


@transaction.atomic
def run_update(*, run: Run, test_set: TestSet | None, description: str | None = None) -> Run:
    """Link a run to a paraphrase test set (or unlink it) and edit its description."""
    if test_set is not None and test_set.collection_id != run.collection_id:
        raise ValidationError(f"test_set: {test_set.name!r} belongs to another collection")
    run.test_set = test_set
    if description is not None:
        run.description = description
    run.full_clean()
    run.save(update_fields=["test_set", "description"])
    return run
