"""The robustness demo: ecast's BM25 over the demo corpus for the original turns and every test set, and Table 11."""

from __future__ import annotations

import io

import pytest

from ecast.generation import demo as generation_demo
from ecast.management.commands.load_demo import COLLECTION_CORPUS, demo_collection_load, demo_corpus_ids
from ecast.models import Collection, Passage, TestSet
from evaluation import demo as evaluation_demo
from evaluation.models import QrelsVersion, Run, RunTurn
from evaluation.robustness import demo as robustness_demo
from evaluation.robustness import selectors as rsel
from evaluation.robustness import services

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo() -> Collection:
    """The demo collection as load_demo imports it, with its paraphrase test sets (no other feature demos)."""
    out = io.StringIO()
    collection = demo_collection_load(stdout=out)
    generation_demo.test_sets_load(collection=collection, stdout=out)
    return collection


def test_it_runs_bm25_for_the_raw_manual_and_automatic_turns_and_every_test_set(demo):
    made = robustness_demo.load(stdout=io.StringIO())
    names = {r.name for r in made}
    sets = {f"ecast-bm25-R{k}_{i}" for k in "mr" for i in (1, 2, 3)}
    assert names == {"ecast-bm25-raw", "ecast-bm25-manual", "ecast-bm25-auto"} | sets
    corpus = set(demo_corpus_ids(COLLECTION_CORPUS))
    for run in made:
        rankings = list(RunTurn.objects.filter(run=run).values_list("doc_ids", flat=True))
        assert len(rankings) == 26 and all(0 < len(docs) <= services.DEPTH for docs in rankings)
        assert set().union(*map(set, rankings)) <= corpus  # every retrieved passage is of CAsT 2020 and has text
        assert "built-in BM25" in run.description
    for ts in TestSet.objects.filter(collection=demo):
        letter = "r" if ts.kind == TestSet.Kind.RAW else "m"
        assert Run.objects.get(collection=demo, name=f"ecast-bm25-R{letter}_{ts.index}").test_set == ts
    assert Run.objects.get(name="ecast-bm25-raw").test_set is None


def test_the_runs_search_the_cast_2020_passages_and_not_the_other_corpora_shipped_beside_them(demo):
    ids = demo_corpus_ids()
    assert len(ids) == 2356 == Passage.objects.filter(passage_id__in=ids).exclude(text="").count()
    assert any(i.startswith("KILT_") for i in ids) and any(i.startswith("clueweb22-") for i in ids)
    searched, _texts = services.corpus_with_text(collection=demo)
    assert searched == demo_corpus_ids(COLLECTION_CORPUS)
    assert any(i.startswith("CAR_") for i in searched) and any(i.startswith("MARCO_") for i in searched)
    assert not any(i.startswith(("MARCO_D", "KILT_", "WAPO_", "clueweb22-")) for i in searched)


def test_raw_test_sets_are_reformulated_and_manual_ones_are_not(demo):
    made = [services.test_set_plan(test_set=ts) for ts in TestSet.objects.filter(collection=demo)]
    plans = {plan.name: plan for plan in made}
    changed = {}
    for run_name, set_name in (("ecast-bm25-Rm_1", "Rm_1 (seed 0)"), ("ecast-bm25-Rr_1", "Rr_1 (seed 0)")):
        texts = dict(TestSet.objects.get(name=set_name).items.values_list("turn__turn_id", "paraphrase__text"))
        queries = plans[run_name].queries
        changed[run_name] = {tid for tid, text in texts.items() if queries[tid] != [(text, 1.0)]}
    assert not changed["ecast-bm25-Rm_1"]
    # The rule CQR puts the history's noun phrase in place of a pronoun; first turns have no history.
    assert changed["ecast-bm25-Rr_1"] and not any(tid.endswith("_1") for tid in changed["ecast-bm25-Rr_1"])


def test_loading_twice_makes_no_new_run(demo):
    robustness_demo.load(stdout=io.StringIO())
    before = Run.objects.count(), RunTurn.objects.count()
    out = io.StringIO()
    assert robustness_demo.load(stdout=out) == []
    assert (Run.objects.count(), RunTurn.objects.count()) == before and "already present" in out.getvalue()


def test_table_11_has_a_row_per_test_set_against_the_bm25_originals(demo):
    robustness_demo.load(stdout=io.StringIO())
    evaluation_demo.load(stdout=io.StringIO())
    base = QrelsVersion.objects.get(collection=demo, name="original")
    baselines = {k: rsel.default_baseline(collection=demo, kind=k) for k in rsel.KINDS}
    assert {k: r.name for k, r in baselines.items() if r} == {"manual": "ecast-bm25-manual", "raw": "ecast-bm25-auto"}
    params = rsel.RobustnessParams(collection=demo, base=base, baselines={k: r for k, r in baselines.items() if r})
    rows = [r for r in rsel.table11(params)["rows"] if not r["average"]]
    assert len(rows) == 6
    for row in rows:
        ndcg = row["values"]["nDCG@3"]
        assert ndcg["value"] is not None and ndcg["baseline"] is not None and ndcg["change_pct"] is not None


def test_it_skips_without_the_demo_collection():
    out = io.StringIO()
    assert robustness_demo.load(stdout=out) == [] and "skipped" in out.getvalue()


def test_one_click_runs_bm25_on_a_test_set_without_a_run_and_table_11_gains_its_row(demo, admin_client):
    from django.urls import reverse

    robustness_demo.load(stdout=io.StringIO())
    evaluation_demo.load(stdout=io.StringIO())
    ts = TestSet.objects.get(collection=demo, name="Rm_2 (seed 0)")
    Run.objects.filter(test_set=ts).delete()
    page = admin_client.get(reverse("evaluation-robustness"), {"collection": demo.pk}).content.decode()
    assert "Run BM25 on Rm_2 (seed 0)" in page

    response = admin_client.post(
        reverse("evaluation-robustness-baseline", args=[ts.pk]), {"query": f"collection={demo.pk}"}, follow=True
    )  # tasks run inline here; in the product the worker makes the run

    text = response.content.decode()
    assert "BM25 run “ecast-bm25-Rm_2” of Rm_2 (seed 0) is being made" in text
    run = Run.objects.get(test_set=ts)
    assert run.name == "ecast-bm25-Rm_2" and RunTurn.objects.filter(run=run).count() == 26
    assert "Run BM25 on Rm_2" not in text and "over the corpus of CAsT 2020 demo" in run.description


def test_one_click_without_passage_texts_of_the_collection_says_to_import_them(demo, admin_client):
    from django.urls import reverse

    ts = TestSet.objects.filter(collection=demo).first()
    demo.corpus.clear()  # the texts stay stored, for no collection
    response = admin_client.post(reverse("evaluation-robustness-baseline", args=[ts.pk]), follow=True)
    assert "no passage of CAsT 2020 demo&#x27;s corpus has text yet: import passage texts for it" in (
        response.content.decode()
    )
    assert not Run.objects.filter(test_set=ts).exists()
