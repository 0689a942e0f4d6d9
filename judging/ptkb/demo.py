"""PTKB demo: four TREC iKAT 2023 conversations with their PTKB, and the NIST and organisers' PTKB relevance of them.

"iKAT 2023 demo" gets the topics (``ecast/demo/ikat2023_test_topics_demo.json``); its PTKB companion gets both
published assessments restricted to those turns, as the versions "NIST" and "organisers", so the agreement page
compares two real assessments and an admin can start a PTKB task on the collection. Idempotent: called by
``manage.py load_demo``; a step whose result exists is skipped.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError

from ecast.imports.registry import get as import_kind
from ecast.imports.services import import_file
from ecast.management.commands.load_demo import DEMO_DIR
from ecast.models import Collection, ImportJob, Turn

DEMO_COLLECTION = "iKAT 2023 demo"
TOPICS = "ikat2023_test_topics_demo.json"
ASSESSMENTS = (("ptkb_rel_nist_demo", "NIST"), ("ptkb_rel_org_demo", "organisers"))


def _import(kind: str, file: str, collection: Collection, options: dict[str, Any], stdout: Any) -> None:
    job: ImportJob = import_file(kind=kind, path=DEMO_DIR / file, collection=collection, options=options)
    if job.status != ImportJob.Status.SUCCEEDED:
        errors = "\n".join(f"    {e.get('file')}:{e.get('line')}: {e.get('reason')}" for e in job.errors[:20])
        raise CommandError(f"demo import of {file} ({kind}) failed:\n{errors}")
    counts = ", ".join(f"{k} {v}" for k, v in (job.counts or {}).items() if k != "version_id")
    stdout.write(f"  {kind:<13} {file}: imported ({counts})\n")


def load(*, stdout: Any) -> Collection:
    """The iKAT demo collection, its topics and the two published PTKB assessments (skips what exists)."""
    collection, _ = Collection.objects.get_or_create(
        name=DEMO_COLLECTION,
        defaults={
            "year": 2023,
            "relevance_threshold": 2,
            "corpus_note": "TREC iKAT 2023 test conversations 9-2, 14-2, 17-2 and 18-2 with each user's PTKB; passage "
            "texts of the responses' provenance are in the demo corpus.",
        },
    )
    if Turn.objects.filter(collection=collection).exists():
        stdout.write(f"  ikat_topics   {TOPICS}: already loaded\n")
    else:
        _import("ikat_topics", TOPICS, collection, {"year": 2023}, stdout)
    ptkb = import_kind("ptkb_qrels")
    for file, version in ASSESSMENTS:
        options = {"version": version}
        if ptkb is not None and ptkb.existing is not None and ptkb.existing(collection, options) is not None:
            stdout.write(f"  ptkb_qrels    {file}: already loaded\n")
            continue
        _import("ptkb_qrels", file, collection, options, stdout)
    return collection
