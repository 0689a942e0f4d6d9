"""Demo answers to judge on "CAsT 2020 demo": the built-in baseline's answers to four turns (81_1, 81_2, 83_1, 83_2;
BM25 top 5 over the demo corpus, each sentence citing the passage it was taken from), made at load time, and a
nugget bank for those turns written for ecast from the demo passages (``ecast/demo/nuggets_demo.json``; see
DATA_LICENSES.md). Nothing from the TREC RAG or iKAT files ships.

``load(stdout=...)`` is idempotent: the run and the bank are made once, by name.
"""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

from django.contrib.auth.models import User
from django.db import transaction

from ecast.management.commands.load_demo import DEMO_ACCOUNTS, DEMO_COLLECTION, DEMO_DIR
from ecast.models import Collection, Turn
from evaluation.models import Nugget, NuggetBank, ResponseRun
from judging.llm import response_services
from judging.models import ResponseLlmJob

TURNS = ["81_1", "81_2", "83_1", "83_2"]
RUN_NAME = "ecast-baseline-bm25-top5"
NUGGETS_FILE = "nuggets_demo.json"


def load(stdout: TextIO | Any = None) -> None:
    out = stdout or sys.stdout
    collection = Collection.objects.filter(name=DEMO_COLLECTION).first()
    if collection is None:
        out.write(f"response demo: no collection {DEMO_COLLECTION!r}; skipped\n")
        return
    admin = User.objects.filter(username=DEMO_ACCOUNTS[0][0]).first()
    answers(collection, admin, out)
    bank(collection, admin, out)


def answers(collection: Collection, admin: Any, out: Any) -> ResponseRun | None:
    """The baseline's answers to the demo turns (made now unless the run exists)."""
    run = ResponseRun.objects.filter(collection=collection, name=RUN_NAME).first()
    if run is not None:
        out.write(f"response demo: {RUN_NAME} already present\n")
        return run
    if not collection.corpus.exclude(text="").exists():
        out.write("response demo: the demo corpus is not loaded; baseline answers skipped\n")
        return None
    job = response_services.response_job_create(
        task=ResponseLlmJob.Task.BASELINE,
        collection=collection,
        run_name=RUN_NAME,
        params={"k": 5, "sentences": 3},
        turns=TURNS,
        created_by=admin,
        queue=False,
    )
    response_services.response_job_run(job_id=job.pk)
    job.refresh_from_db()
    out.write(f"response demo: {RUN_NAME}: {job.progress_done} answer(s) ({job.status})\n")
    return job.run


@transaction.atomic
def bank(collection: Collection, admin: Any, out: Any) -> NuggetBank:
    """The written nugget bank (made now unless a bank of its name exists)."""
    data = json.loads((DEMO_DIR / NUGGETS_FILE).read_text(encoding="utf-8"))
    existing = NuggetBank.objects.filter(collection=collection, name=data["bank"]).first()
    if existing is not None:
        out.write(f"response demo: nugget bank {existing.name!r} already present\n")
        return existing
    made = NuggetBank.objects.create(
        collection=collection,
        name=data["bank"],
        description=data["_about"],
        source_file=NUGGETS_FILE,
        created_by=admin,
    )
    turns = dict(
        Turn.objects.filter(collection=collection, turn_id__in=list(data["nuggets"])).values_list("turn_id", "pk")
    )
    rows = [
        Nugget(
            bank=made,
            turn_id=turns[turn_id],
            position=i,
            text=text,
            importance=importance,
            origin=Nugget.Origin.ADDED,
            source_passages=passages,
        )
        for turn_id, nuggets in data["nuggets"].items()
        if turn_id in turns
        for i, (text, importance, passages) in enumerate(nuggets)
    ]
    Nugget.objects.bulk_create(rows)
    out.write(f"response demo: nugget bank {made.name!r}: {len(rows)} nugget(s)\n")
    return made
