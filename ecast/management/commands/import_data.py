"""`manage.py import_data KIND PATH [--collection NAME] [--option key=value ...]`: the same importer as the page."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from ecast.imports import registry
from ecast.imports.services import import_file
from ecast.models import Collection, ImportJob


class Command(BaseCommand):
    help = "Import one file (atomic; prints every bad row and exits non-zero on failure)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("kind", choices=sorted(registry.names()))
        parser.add_argument("path", type=Path)
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
        collection = None
        if opts["collection"]:
            defaults: dict[str, Any] = {"year": opts["year"]}
            if opts["threshold"] is not None:
                defaults["relevance_threshold"] = opts["threshold"]
            collection, created = Collection.objects.get_or_create(name=opts["collection"], defaults=defaults)
            if created:
                self.stdout.write(f"Created collection “{collection.name}”.")
        job = import_file(kind=opts["kind"], path=opts["path"], collection=collection, options=options)
        if job.status != ImportJob.Status.SUCCEEDED:
            for e in job.errors:
                where = f"{e['file']}:{e['line']}" if e.get("line") else e["file"]
                self.stderr.write(f"{where}: {e['reason']}")
            raise CommandError(f"import #{job.pk} failed with {len(job.errors)} error(s); nothing was written")
        counts = {k: v for k, v in job.counts.items() if k != "warnings"}
        for w in job.counts.get("warnings", []):
            where = f"{w['file']}:{w['line']}" if w.get("line") else w["file"]
            self.stdout.write(self.style.WARNING(f"warning: {where}: {w['reason']}"))
        target = f" into {job.collection.name}" if job.collection else ""
        summary = ", ".join(f"{k} {v}" for k, v in counts.items())
        self.stdout.write(self.style.SUCCESS(f"import #{job.pk} ({job.kind}) succeeded{target}: {summary}"))
