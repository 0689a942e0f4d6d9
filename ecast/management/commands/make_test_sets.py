"""Draw random paraphrase test sets R^r_1..n / R^m_1..n and optionally export them as CAsT topic JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from ecast.generation.testsets import test_set_export, test_sets_create
from ecast.models import Collection


class Command(BaseCommand):
    help = "Create R^r / R^m random paraphrase test sets (each paraphrase used at most once)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("collection", help="collection name")
        parser.add_argument("--kinds", nargs="+", default=["raw", "manual"], choices=["raw", "manual"])
        parser.add_argument("-n", "--n-sets", type=int, default=3)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--statuses", nargs="+", default=["approved"])
        parser.add_argument("--export-dir", type=Path, default=None)

    def handle(self, *args: Any, **o: Any) -> None:
        try:
            collection = Collection.objects.get(name=o["collection"])
        except Collection.DoesNotExist as exc:
            raise CommandError(f"no collection named {o['collection']!r}") from exc
        for kind in o["kinds"]:
            try:
                sets = test_sets_create(
                    collection=collection, kind=kind, n_sets=o["n_sets"], seed=o["seed"], statuses=tuple(o["statuses"])
                )
            except ValidationError as exc:
                raise CommandError(" ".join(exc.messages)) from exc
            for ts in sets:
                line = f"{ts.name}: {ts.items.count()} turns with a paraphrase"
                if o["export_dir"]:
                    o["export_dir"].mkdir(parents=True, exist_ok=True)
                    path = o["export_dir"] / f"{ts.kind}_{ts.index}.json"
                    path.write_text(json.dumps(test_set_export(test_set=ts), indent=2))
                    line += f" → {path}"
                self.stdout.write(line)
