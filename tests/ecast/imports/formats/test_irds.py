"""Import by ir_datasets id: CAsT from ir_datasets' local cache equals the app's own import of the same files."""

from __future__ import annotations

import pytest

from ecast.imports.services import import_dataset
from ecast.models import Collection, Conversation, ImportJob, Passage, Turn
from evaluation.models import Qrel
from tests.ecast.imports.conftest import ok

pytestmark = pytest.mark.django_db


def turns_of(collection):
    return [
        (
            t.turn_id,
            t.number,
            t.conversation.topic_id,
            t.raw_utterance,
            t.manual_rewrite,
            t.automatic_rewrite,
            t.canonical_response_id,
            t.canonical_response_text,
        )
        for t in Turn.objects.filter(collection=collection).select_related("conversation").order_by("turn_id")
    ]


def conversations_of(collection):
    rows = Conversation.objects.filter(collection=collection).order_by("topic_id")
    return list(rows.values_list("topic_id", "title", "description"))


def qrels_of(collection):
    rows = Qrel.objects.filter(turn__collection=collection, version__name="original")
    return sorted(rows.values_list("turn__turn_id", "passage_id", "grade"))


def own_import(cast, topics, qrels, name):
    collection = Collection.objects.create(name=name)
    ok("cast_topics", cast / topics, collection=collection)
    ok("qrels", cast / qrels, collection=collection)
    return collection


def irds_import(dataset_id, name=None, **kw):
    collection = Collection.objects.create(name=name) if name else None
    job = import_dataset(dataset_id=dataset_id, collection=collection, **kw)
    assert job.status == ImportJob.Status.SUCCEEDED, job.errors
    return job


@pytest.mark.parametrize(
    ("dataset_id", "topics", "qrels"),
    [
        ("trec-cast/v1/2019", "2019/evaluation_topics_v1.0.json", "2019/2019qrels.txt"),
        ("trec-cast/v1/2020", "2020/2020_manual_evaluation_topics_v1.0.json", "2020/2020qrels.txt"),
    ],
)
def test_a_cast_year_from_ir_datasets_equals_the_apps_own_import_turn_for_turn(
    ir_datasets_home, cast, dataset_id, topics, qrels
):
    own = own_import(cast, topics, qrels, "own")
    job = irds_import(dataset_id, "from ir_datasets")
    mine = job.collection
    assert mine.name == "from ir_datasets"
    assert turns_of(mine) == turns_of(own) and len(turns_of(mine)) in (479, 216)
    assert conversations_of(mine) == conversations_of(own)
    assert qrels_of(mine) == qrels_of(own) and len(qrels_of(mine)) > 29000
    assert job.file_name == dataset_id and job.counts["dataset"] == dataset_id


def test_the_judged_2020_subset_imports_from_the_local_cache_into_the_cast_2020_collection(ir_datasets_home, cast):
    job = irds_import("trec-cast/v1/2020/judged")
    assert job.collection.name == "CAsT 2020" and job.collection.relevance_threshold == 2
    own = own_import(cast, "2020/2020_manual_evaluation_topics_v1.0.json", "2020/2020qrels.txt", "own")
    judged = {q[0] for q in qrels_of(own)}
    assert turns_of(job.collection) == [t for t in turns_of(own) if t[0] in judged]
    assert len(turns_of(job.collection)) == 208
    assert qrels_of(job.collection) == qrels_of(own)
    turn = Turn.objects.get(collection=job.collection, turn_id="81_2")
    assert turn.manual_rewrite == "Now my garage door opener stopped working. Why?"
    assert turn.canonical_response_id == "MARCO_3942603"
    # The passage texts are in the corpus, which is not read: the job says so.
    assert any("passage texts not imported" in w["reason"] for w in job.counts["warnings"])
    again = irds_import("trec-cast/v1/2020/judged")
    assert again.counts["turns_created"] == 0 and again.counts["turns_updated"] == 0


def test_a_file_missing_from_the_cache_fails_naming_it_and_writes_nothing(ir_datasets_home, settings):
    settings.ECAST_IR_DATASETS_DOWNLOAD = False
    job = import_dataset(dataset_id="trec-cast/v0/train")
    assert job.status == ImportJob.Status.FAILED
    (error,) = job.errors
    expected = ir_datasets_home / "trec-cast" / "2019" / "train_topics_v1.0.json"
    assert str(expected) in error["reason"]
    assert "ECAST_IR_DATASETS_DOWNLOAD=true" in error["reason"]
    assert not expected.exists()
    assert not Turn.objects.exists() and not Collection.objects.exists()


def test_an_unknown_dataset_id_fails_with_a_clear_error(ir_datasets_home):
    job = import_dataset(dataset_id="trec-cast/v9/nothing")
    assert job.status == ImportJob.Status.FAILED
    assert "ir_datasets has no dataset 'trec-cast/v9/nothing'" in job.errors[0]["reason"]
    assert not Turn.objects.exists()


def test_a_dataset_without_qrels_is_refused(ir_datasets_home):
    job = import_dataset(dataset_id="trec-cast/v1")
    assert job.status == ImportJob.Status.FAILED
    assert "has no queries and qrels" in job.errors[0]["reason"]


def test_passages_true_reports_a_corpus_that_is_not_local_and_still_imports(ir_datasets_home):
    job = irds_import("trec-cast/v1/2019/judged", options={"passages": "true"})
    assert job.counts["turns_created"] == 173 and "passages_created" not in job.counts
    (warning,) = [w["reason"] for w in job.counts["warnings"] if "passage texts" in w["reason"]]
    assert "its corpus is not in the local ir_datasets cache" in warning
    assert not Passage.objects.exists()


@pytest.fixture
def tiny_dataset(tmp_path):
    """A non-conversational dataset (queries, qrels and a corpus, all local) registered with ir_datasets."""
    import ir_datasets
    from ir_datasets.datasets.base import Dataset
    from ir_datasets.formats import TrecQrels, TsvDocs, TsvQueries
    from ir_datasets.util import LocalDownload

    queries = tmp_path / "queries.tsv"
    queries.write_text("q1\tthroat cancer treatment\nq2\tgarage door   opener\n", encoding="utf-8")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 2\nq1 0 d2 0\nq2 0 d3 1\n", encoding="utf-8")
    docs = tmp_path / "docs.tsv"
    docs.write_text("d1\tThroat cancer is treatable.\nd2\tLungs.\n", encoding="utf-8")
    dataset = Dataset(
        TsvQueries(LocalDownload(queries)), TrecQrels(LocalDownload(qrels), {}), TsvDocs(LocalDownload(docs))
    )
    name = f"ecast-test/tiny/{tmp_path.name}"  # ir_datasets never unregisters: one name per test
    ir_datasets.registry.register(name, dataset)
    return name


def test_a_dataset_that_is_not_conversational_becomes_single_turn_conversations(tiny_dataset):
    job = irds_import(tiny_dataset, options={"passages": "true"})
    assert job.collection.name == tiny_dataset
    turns = {t.turn_id: t for t in Turn.objects.filter(collection=job.collection)}
    assert sorted(turns) == ["q1", "q2"] and turns["q2"].raw_utterance == "garage door opener"
    assert qrels_of(job.collection) == [("q1", "d1", 2), ("q1", "d2", 0), ("q2", "d3", 1)]
    assert Passage.objects.get(passage_id="d1").text == "Throat cancer is treatable."
    assert job.counts["passages_created"] == 2
    (warning,) = [w["reason"] for w in job.counts["warnings"] if "passage texts" in w["reason"]]
    assert "1 of 3 passages are not in its corpus" in warning
