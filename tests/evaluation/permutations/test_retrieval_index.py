"""The BM25 index cache: concurrent writers of one key on a shared cache, and a quiet bm25s."""

from __future__ import annotations

import logging
import sys
import threading
import warnings

from evaluation.permutations import retrieval

DOCS = ["d1", "d2", "d3"]
TEXTS = ["bees are dying from pesticides", "throat cancer treatment options", "garage door opener repair"]


def test_two_workers_saving_the_same_index_both_succeed_and_leave_one_complete_copy(tmp_path):
    index = retrieval.Bm25Index.build(DOCS, TEXTS)
    target = tmp_path / "shared" / "key"
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def save() -> None:
        try:
            start.wait()
            index.save(target)
        except BaseException as exc:  # noqa: BLE001 - the test reports whatever a writer raised
            errors.append(exc)

    threads = [threading.Thread(target=save) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(p.name for p in target.parent.iterdir()) == ["key"]  # no temporary directory left behind
    loaded = retrieval.Bm25Index.load(target)
    assert loaded.doc_ids == DOCS


def test_building_an_index_logs_nothing_below_warning(caplog):
    with caplog.at_level(logging.DEBUG):
        retrieval.Bm25Index.build(DOCS, TEXTS)
    assert not [r for r in caplog.records if r.name.startswith("bm25s")]


def test_a_starting_worker_warms_the_retrieval_and_starts_even_when_warming_fails():
    from unittest import mock

    from celery.signals import worker_init

    from evaluation.permutations import retrieval, tasks

    with mock.patch.object(retrieval, "warm") as warm, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Celery's Django fixup, also listening, warns of the missing worker instance
        worker_init.send(sender=None)
    warm.assert_called_once_with()
    with mock.patch.object(retrieval, "warm", side_effect=LookupError("tagger data missing")):
        tasks.retrieval_warm(sender=None)  # logged, not raised: the worker still starts


def test_warming_loads_what_the_first_rewrite_query_needs():
    retrieval.warm()
    assert "nltk.stem" in sys.modules and retrieval.queries_for_order("rewrite", [1], {1: "What is it?"})
