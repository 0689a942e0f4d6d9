"""`manage.py export_release [--format csv|jsonl] [--collection NAME] [--status approved] [--output FILE]`."""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from ecast import releases
from ecast.models import Collection


class Command(BaseCommand):
    help = "Write the ECAsT-format CSV or the provenance JSONL release (streamed) to a file or stdout."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--format", choices=["csv", "jsonl"], default="csv")
        parser.add_argument("--collection", help="collection name or id (default: all)")
        parser.add_argument("--status", choices=list(releases.STATUSES), default="approved")
        parser.add_argument("--output", "-o", help="file to write (default: stdout)")

    def handle(self, *args: Any, **opts: Any) -> None:
        collection = None
        if opts["collection"]:
            value = opts["collection"]
            collection = Collection.objects.filter(name=value).first()
            if collection is None and value.isdigit():
                collection = Collection.objects.filter(pk=int(value)).first()
            if collection is None:
                raise CommandError(f"no collection {value!r}")
        qs = releases.release_pairs(collection=collection, status=opts["status"])
        if opts["format"] == "csv":
            lines = releases.release_csv_lines(pairs_queryset=qs)
        else:
            lines = releases.jsonl_lines(releases.release_jsonl_rows(pairs_queryset=qs))
        n = -1 if opts["format"] == "csv" else 0
        out = open(opts["output"], "w", encoding="utf-8", newline="") if opts["output"] else sys.stdout  # noqa: SIM115
        try:
            for line in lines:
                out.write(line)
                n += 1
        finally:
            if opts["output"]:
                out.close()
        if opts["output"]:
            self.stdout.write(self.style.SUCCESS(f"wrote {n} pair(s) to {opts['output']}"))
