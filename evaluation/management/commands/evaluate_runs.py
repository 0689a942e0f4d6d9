"""`manage.py evaluate_runs --collection NAME [--run NAME] [--qrels-version NAME]`: (re)compute stored scores now."""

from __future__ import annotations

import time

from django.core.management.base import BaseCommand, CommandError

from ecast.models import Collection
from evaluation import scoring, services
from evaluation.models import QrelsVersion, Run


class Command(BaseCommand):
    help = "Recompute stored metric scores of runs under qrels versions (synchronously, in this process)."

    def add_arguments(self, parser):
        parser.add_argument("--collection", required=True, help="Collection name or id")
        parser.add_argument("--run", help="Only this run (name); default: every run")
        parser.add_argument("--qrels-version", dest="qrels_version", help="Only this qrels version (name)")

    def handle(self, *args, **opts):
        key = opts["collection"]
        coll = Collection.objects.filter(pk=int(key)).first() if key.isdigit() else None
        coll = coll or Collection.objects.filter(name=key).first()
        if coll is None:
            raise CommandError(f"no collection {key!r}")
        versions = QrelsVersion.objects.filter(collection=coll).select_related("collection")
        if opts["qrels_version"]:
            versions = versions.filter(name=opts["qrels_version"])
            if not versions.exists():
                raise CommandError(f"no qrels version {opts['qrels_version']!r} in {coll.name}")
        runs = Run.objects.filter(collection=coll)
        if opts["run"]:
            runs = runs.filter(name=opts["run"])
            if not runs.exists():
                raise CommandError(f"no run {opts['run']!r} in {coll.name}")
        run_ids = list(runs.values_list("pk", flat=True))
        for version in versions:
            start = time.perf_counter()
            written = scoring.scores_write(version=version, run_ids=run_ids)
            services.leaderboard_snapshot_create(version=version, trigger="manage.py evaluate_runs", counts=written)
            self.stdout.write(
                f"{version.name}: {written.values} scores for {len(run_ids)} run(s) in "
                f"{time.perf_counter() - start:.2f} s "
                f"(threshold {coll.relevance_threshold})"
            )
