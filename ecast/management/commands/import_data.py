"""`manage.py import_data KIND PATH [--collection NAME] [--option key=value ...]`: the same importer as the page.

For kind ``ir_datasets`` PATH is the dataset id (``import_data ir_datasets trec-cast/v1/2020/judged``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from ecast.imports import registry
from ecast.imports.errors import row_where, warnings_summary_lines
from ecast.imports.formats import irds
from ecast.imports.services import import_dataset, import_file
from ecast.models import Collection, ImportJob


def write_warnings(command: BaseCommand, job: ImportJob) -> None:
    """An import's warnings as a summary by kind (count and examples), with where to find the full list."""
    warnings = (job.counts or {}).get("warnings", [])
    if not warnings:
        return
    total = (job.counts or {}).get("warnings_total", len(warnings))
    command.stdout.write(command.style.WARNING(f"{total} warning(s) (the import went ahead):"))
    for line in warnings_summary_lines(warnings):
        command.stdout.write(command.style.WARNING(f"  {line}"))
    command.stdout.write(f"  full list: /imports/{job.pk}/warnings.csv (or the import page /imports/{job.pk}/)")


class Command(BaseCommand):
    help = "Import one file (atomic; prints every bad row and exits non-zero on failure)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("kind", choices=sorted(registry.names()))
        parser.add_argument("path", type=Path, help="the file; for kind ir_datasets, the dataset id")
        parser.add_argument("--collection", help="collection name (created when missing)")
        parser.add_argument("--year", type=int, help="year of a collection created by --collection")
        parser.add_argument("--threshold", type=int, help="relevance threshold of a collection created here")
        parser.add_argument(
            "--option",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="importer option, repeatable: "
            + "; ".join(f"{k.name}: {', '.join(k.options)}" for k in registry.kinds() if k.options),
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        options: dict[str, str] = {}
        for item in opts["option"]:
            if "=" not in item:
                raise CommandError(f"--option {item!r} is not KEY=VALUE")
            key, value = item.split("=", 1)
            options[key.strip()] = value.strip()
        collection, created = None, False
        if opts["collection"]:
            defaults: dict[str, Any] = {"year": opts["year"]}
            if opts["threshold"] is not None:
                defaults["relevance_threshold"] = opts["threshold"]
            collection, created = Collection.objects.get_or_create(name=opts["collection"], defaults=defaults)
        if opts["kind"] == irds.KIND:
            job = import_dataset(dataset_id=str(opts["path"]), collection=collection, options=options)
        else:
            job = import_file(kind=opts["kind"], path=opts["path"], collection=collection, options=options)
        if job.status != ImportJob.Status.SUCCEEDED:
            for e in job.errors:
                self.stderr.write(f"{row_where(e)}: {e['reason']}")
            removed = ""
            if created and collection is not None:
                # The import wrote nothing, so the collection made for it would stay empty: take it away again.
                collection.delete()
                removed = f"; the new collection “{opts['collection']}” was not kept"
            raise CommandError(f"import #{job.pk} failed with {len(job.errors)} error(s); nothing was written{removed}")
        if created and collection is not None:
            self.stdout.write(f"Created collection “{collection.name}”.")
        counts = {k: v for k, v in job.counts.items() if k not in ("warnings", "warnings_total")}
        write_warnings(self, job)
        target = f" into {job.collection.name}" if job.collection else ""
        summary = ", ".join(f"{k} {v}" for k, v in counts.items())
        self.stdout.write(self.style.SUCCESS(f"import #{job.pk} ({job.kind}) succeeded{target}: {summary}"))
