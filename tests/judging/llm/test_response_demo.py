"""The response demo: the built-in baseline answers four demo turns over the demo corpus, each sentence citing a
passage of it, and the written nugget bank covers those turns; loading twice changes nothing."""

from __future__ import annotations

import io
import json

import pytest

from ecast.management.commands.load_demo import COLLECTION_CORPUS, DEMO_DIR, demo_collection_load, demo_corpus_ids
from evaluation.models import Nugget, NuggetBank, Response, ResponseRun, ResponseSentence
from judging.llm import response_demo
from judging.models import ResponseLlmJob

pytestmark = pytest.mark.django_db


def test_the_demo_has_cited_baseline_answers_and_a_bank_for_the_same_turns_once(settings, tmp_path):
    settings.ECAST_CACHE_DIR = str(tmp_path)
    demo_collection_load(stdout=io.StringIO())
    out = io.StringIO()
    response_demo.load(stdout=out)
    run = ResponseRun.objects.get(name=response_demo.RUN_NAME)
    answered = sorted(Response.objects.filter(run=run).values_list("turn__turn_id", flat=True))
    assert answered == response_demo.TURNS and run.provenance["backend"] == "extractive"
    corpus = set(demo_corpus_ids(COLLECTION_CORPUS))
    sentences = list(ResponseSentence.objects.filter(response__run=run))
    assert len(sentences) == 4 * 3 and all(len(s.citations) == 1 and s.citations[0] in corpus for s in sentences)
    bank = NuggetBank.objects.get(name__startswith="demo nuggets")
    written = json.loads((DEMO_DIR / response_demo.NUGGETS_FILE).read_text())["nuggets"]
    assert set(Nugget.objects.filter(bank=bank).values_list("turn__turn_id", flat=True)) == set(written)
    assert Nugget.objects.filter(bank=bank).count() == sum(len(v) for v in written.values()) == 16
    # Every passage a nugget names is a demo passage.
    assert {p for v in written.values() for _, _, ps in v for p in ps} <= corpus
    again = io.StringIO()
    response_demo.load(stdout=again)
    assert "already present" in again.getvalue() and ResponseLlmJob.objects.count() == 1
    assert Response.objects.filter(run=run).count() == 4 and Nugget.objects.filter(bank=bank).count() == 16
