"""`manage.py import_crowd_campaign PATH... --name NAME [--collection NAME]`: crowd CSVs → a rating campaign."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from ecast.models import Collection
from judging.rating import selectors
from judging.rating.crowd import CrowdImportError, crowd_campaign_import


class Command(BaseCommand):
    help = "Import MTurk batch CSVs (.csv or .csv.gz; files or directories) as a closed relevance-style campaign."

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="+", help="CSV files or directories holding *.csv / *.csv.gz")
        parser.add_argument("--name", required=True, help="Campaign name (must be new)")
        parser.add_argument("--collection", help="Collection whose turns the turn ids refer to (optional)")
        parser.add_argument("--raters-per-item", type=int, default=None, help="N for Fleiss' kappa (default: max)")

    def handle(self, *args, **opts):
        files: list[Path] = []
        for raw in opts["paths"]:
            p = Path(raw)
            if p.is_dir():
                files.extend(sorted([*p.glob("*.csv"), *p.glob("*.csv.gz")]))
            elif p.is_file():
                files.append(p)
            else:
                raise CommandError(f"{raw}: no such file or directory")
        if not files:
            raise CommandError("no CSV files found")
        collection = None
        if opts["collection"]:
            collection = Collection.objects.filter(name=opts["collection"]).first()
            if collection is None:
                raise CommandError(f"unknown collection {opts['collection']!r}")
        try:
            campaign = crowd_campaign_import(
                paths=files, name=opts["name"], collection=collection, raters_per_item=opts["raters_per_item"]
            )
        except CrowdImportError as exc:
            for e in exc.errors[:50]:
                self.stderr.write(f"{e['file']}:{e['line']}: {e['reason']}")
            raise CommandError(f"nothing imported: {len(exc.errors)} error(s)") from exc
        report = selectors.campaign_agreement(campaign=campaign)
        rep = report["measures"]["answer_confidence"]
        self.stdout.write(
            f"campaign {campaign.pk} {campaign.name!r}: {campaign.items.count()} items, {report['n_ratings']} ratings, "
            f"{campaign.rater_statuses.count()} workers; Fleiss kappa {rep['kappa_raw']}, after ECAsT filtering "
            f"{rep['kappa_grouped']} on {rep['n_kept']} items; alpha {rep['alpha']['alpha']}"
        )
