"""`manage.py import_run FILE --collection NAME [--name N] [--test-set NAME]`: import a run and evaluate it."""

from __future__ import annotations

from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from ecast.management.commands.import_data import write_warnings
from ecast.models import Collection, ImportJob, TestSet
from evaluation import services


class _Upload:
    def __init__(self, path: Path) -> None:
        self.name = path.name
        self._path = path

    def chunks(self):
        with self._path.open("rb") as fh:
            while chunk := fh.read(1 << 20):
                yield chunk


class Command(BaseCommand):
    help = "Import a TREC run file into a collection (optionally linked to a test set) and evaluate it now."

    def add_arguments(self, parser):
        parser.add_argument("file")
        parser.add_argument("--collection", required=True)
        parser.add_argument("--name")
        parser.add_argument("--test-set", dest="test_set")

    def handle(self, *args, **opts):
        path = Path(opts["file"])
        if not path.is_file():
            raise CommandError(f"{path}: no such file")
        coll = Collection.objects.filter(name=opts["collection"]).first()
        if coll is None:
            raise CommandError(f"no collection {opts['collection']!r}")
        ts = None
        if opts["test_set"]:
            ts = TestSet.objects.filter(collection=coll, name=opts["test_set"]).first()
            if ts is None:
                raise CommandError(f"no test set {opts['test_set']!r} in {coll.name}")
        try:
            run, job = services.run_upload(collection=coll, uploaded=_Upload(path), name=opts["name"], test_set=ts)
        except ValidationError as exc:
            raise CommandError("\n".join(exc.messages)) from exc
        imported = ImportJob.objects.filter(kind="run", counts__run_id=run.pk).order_by("-pk").first()
        if imported is not None:
            write_warnings(self, imported)  # unknown turns, duplicate lines: what was skipped, not silently
        job = services.evaluation_job_execute(job_id=job.pk)  # synchronous here: the command waits for it
        self.stdout.write(
            f"run {run.name} (id {run.pk}) imported; evaluation {job.status} ({job.progress_done}/{job.progress_total})"
        )
