"""Permutation experiments end to end (eager tasks): sampling, retrieval per order, scoring, rescoring."""

import json

import pytest
from django.core.exceptions import ValidationError

from ecast.core import jobs
from ecast.models import Passage
from evaluation.events import qrels_changed
from evaluation.models import Permutation, PermutationExperiment, PermutationQuery, PermutationResult, Qrel
from evaluation.permutations import retrieval
from evaluation.permutations import selectors as sel
from evaluation.permutations import services as svc
from evaluation.permutations.runs import permutation_run_import
from evaluation.permutations.services import chunks, experiments, recovery
from evaluation.permutations.tasks import permutation_experiment_score_task
from tests import factories
from tests.concurrency_helpers import require_postgres

from .helpers import labelled_collection

pytestmark = pytest.mark.django_db


@pytest.fixture
def cache_dir(settings, tmp_path):
    settings.ECAST_CACHE_DIR = tmp_path / "cache"
    return settings.ECAST_CACHE_DIR


def experiment_ready_to_run(systems):
    """An experiment planned (its orders not sampled yet) with its index pinned, no chunk queued; and its first
    conversation."""
    coll, version = labelled_collection()
    exp = svc.permutation_experiment_create(
        collection=coll, name="exp", qrels_version=version, systems=systems, k=5, seed=1, start=False
    )
    svc.permutation_index_prepare(experiment=exp)
    return exp, sel.experiment_conversation_ids(experiment=exp)[0]


def run_experiment(coll, version, capture, systems=("current", "fu", "cu", "lp"), k=5):
    with capture(execute=True):
        exp = svc.permutation_experiment_create(
            collection=coll, name="exp", qrels_version=version, systems=list(systems), k=k, seed=1
        )
    exp.refresh_from_db()
    return exp


def test_an_experiment_retrieves_and_scores_every_order_of_every_conversation(
    cache_dir, django_capture_on_commit_callbacks
):
    coll, version = labelled_collection()
    exp = run_experiment(coll, version, django_capture_on_commit_callbacks)
    assert exp.status == PermutationExperiment.Status.SUCCEEDED, exp.error
    # topic 1: units {2}, {3,4,5} → 2! × 2! = 4 valid orders, original valid; topic 2: {2}, {3,4} → 2 orders.
    assert Permutation.objects.filter(experiment=exp, conversation__topic_id="1").count() == 4
    assert Permutation.objects.filter(experiment=exp, conversation__topic_id="2").count() == 2
    assert PermutationResult.objects.filter(permutation__experiment=exp).count() == 6 * 4
    assert not PermutationResult.objects.filter(permutation__experiment=exp, mean__isnull=True).exists()
    original = Permutation.objects.get(experiment=exp, conversation__topic_id="1", index=0)
    assert original.is_original and original.order == [1, 2, 3, 4, 5]
    assert exp.scored_version == version and exp.scored_qrels_count == Qrel.objects.filter(version=version).count()
    # the index was cached on disk for the next experiment
    assert any((cache_dir / "bm25").iterdir())


def test_order_insensitive_systems_score_the_same_on_every_order(cache_dir, django_capture_on_commit_callbacks):
    coll, version = labelled_collection()
    exp = run_experiment(coll, version, django_capture_on_commit_callbacks)
    for system in ("current", "fu"):
        means = set(
            PermutationResult.objects.filter(
                permutation__experiment=exp, permutation__conversation__topic_id="1", system=system
            ).values_list("mean", flat=True)
        )
        assert len(means) == 1
    # CU queries depend on the order, so topic 1 issues more distinct CU queries than it has turns
    assert PermutationQuery.objects.filter(experiment=exp).count() > 9


def test_cu_concatenates_the_previous_turn_of_the_permuted_order(cache_dir, django_capture_on_commit_callbacks):
    coll, version = labelled_collection()
    exp = run_experiment(coll, version, django_capture_on_commit_callbacks)
    perm = Permutation.objects.get(experiment=exp, conversation__topic_id="1", order=[1, 3, 5, 4, 2])
    result = PermutationResult.objects.get(permutation=perm, system="cu")
    q = PermutationQuery.objects.get(pk=result.queries["1_4"])
    assert q.query == [["What is throat cancer? How is it diagnosed? What are its symptoms?", 1.0]]


def test_new_judgments_rescore_without_new_retrieval(cache_dir, django_capture_on_commit_callbacks):
    coll, version = labelled_collection()
    exp = run_experiment(coll, version, django_capture_on_commit_callbacks)
    queries_before = PermutationQuery.objects.filter(experiment=exp).count()
    before = dict(
        PermutationResult.objects.filter(permutation__experiment=exp, system="current").values_list("pk", "per_turn")
    )
    turn = coll.turns.get(turn_id="2_2")
    retrieved = PermutationQuery.objects.get(
        pk=PermutationResult.objects.filter(
            permutation__experiment=exp, system="current", permutation__conversation__topic_id="2"
        )
        .first()
        .queries["2_2"]
    )
    # judge the top retrieved passage of 2_2 non-relevant → its nDCG@3 must change
    top = retrieved.doc_ids[0]
    Qrel.objects.update_or_create(version=version, turn=turn, passage_id=top, defaults={"grade": 0})
    Qrel.objects.create(version=version, turn=turn, passage_id="P9", grade=4)
    with django_capture_on_commit_callbacks(execute=True):
        qrels_changed(version_id=version.pk, turn_ids=[turn.pk])
    exp.refresh_from_db()
    assert exp.scored_qrels_count == Qrel.objects.filter(version=version).count()
    assert PermutationQuery.objects.filter(experiment=exp).count() == queries_before
    after = dict(
        PermutationResult.objects.filter(permutation__experiment=exp, system="current").values_list("pk", "per_turn")
    )
    changed = [pk for pk in after if "2_2" in after[pk] and after[pk]["2_2"] != before[pk]["2_2"]]
    assert changed and all(after[pk].get("1_1") == before[pk].get("1_1") for pk in after)


def test_a_burst_of_judgments_rescores_once_and_a_later_change_rescores_again(
    cache_dir, django_capture_on_commit_callbacks, monkeypatch, settings
):
    coll, version = labelled_collection()
    exp = run_experiment(coll, version, django_capture_on_commit_callbacks)
    queued = []
    real_enqueue = jobs.enqueue

    def enqueue(name, *args, countdown=None):
        if name != svc.SCORE_TASK:
            return real_enqueue(name, *args, countdown=countdown)
        queued.append((args, countdown))  # held back, as a worker would until the countdown ends

    monkeypatch.setattr(jobs, "enqueue", enqueue)
    turn = coll.turns.get(turn_id="2_2")
    for grade in (0, 1, 2):
        Qrel.objects.update_or_create(version=version, turn=turn, passage_id="P9", defaults={"grade": grade})
        with django_capture_on_commit_callbacks(execute=True):
            qrels_changed(version_id=version.pk, turn_ids=[turn.pk])
    assert queued == [((exp.pk,), settings.ECAST_PERMUTATION_RESCORE_DEBOUNCE_S)]
    assert permutation_experiment_score_task(exp.pk) == "scored"
    exp.refresh_from_db()
    assert exp.scored_qrels_count == Qrel.objects.filter(version=version).count()
    with django_capture_on_commit_callbacks(execute=True):
        qrels_changed(version_id=version.pk, turn_ids=[turn.pk])
    assert len(queued) == 2
    assert permutation_experiment_score_task(exp.pk) == "scored"  # releases the debounce for the next test


def test_conversations_with_unlabelled_turns_are_skipped_and_reported(cache_dir, django_capture_on_commit_callbacks):
    coll, version = labelled_collection()
    coll.turns.filter(turn_id="2_3").update(utterance_class="")
    exp = run_experiment(coll, version, django_capture_on_commit_callbacks, systems=("current",))
    assert not Permutation.objects.filter(experiment=exp, conversation__topic_id="2").exists()
    assert exp.warnings == ["topic 2 skipped: turns [3] have no SE/FT/PT class"]


def test_it_refuses_an_unknown_measure_and_writes_nothing():
    coll, version = labelled_collection()
    with pytest.raises(ValidationError, match="unknown measure"):
        svc.permutation_experiment_create(
            collection=coll, name="x", qrels_version=version, systems=["current"], measure="nDCG@three"
        )
    assert not PermutationExperiment.objects.exists()


def test_sampling_is_reproducible_per_seed():
    coll, version = labelled_collection()
    a = svc.permutation_experiment_create(collection=coll, name="a", qrels_version=version, systems=[], k=2, seed=9)
    b = svc.permutation_experiment_create(collection=coll, name="b", qrels_version=version, systems=[], k=2, seed=9)
    orders = [list(Permutation.objects.filter(experiment=e).values_list("order", flat=True)) for e in (a, b)]
    assert orders[0] == orders[1]


def test_exported_topics_keep_turn_numbers_and_name_the_permutation():
    coll, version = labelled_collection()
    exp = svc.permutation_experiment_create(collection=coll, name="a", qrels_version=version, systems=[], k=10)
    topics = sel.permutation_topics(experiment=exp)
    assert len(topics) == 6
    t = next(t for t in topics if t["number"] == "1" and not t["is_original"])
    perm = Permutation.objects.get(pk=int(t["permutation_id"][4:]))
    assert [x["number"] for x in t["turn"]] == perm.order
    assert sorted(x["number"] for x in t["turn"]) == [1, 2, 3, 4, 5]
    assert t["turn"][perm.order.index(4)]["raw_utterance"] == "What are its symptoms?"
    json.dumps(topics)


def test_the_analysis_reports_tables_and_both_anovas(cache_dir, django_capture_on_commit_callbacks):
    coll, version = labelled_collection()
    exp = run_experiment(coll, version, django_capture_on_commit_callbacks)
    a = sel.experiment_analysis(experiment=exp)
    assert {r["system"] for r in a["table2"]} == {"BM25", "FU", "CU", "LP"}
    for r in a["table2"]:
        assert r["min"] <= r["mean"] <= r["max"]
    assert a["md1"]["rows"][1]["source"] == "perm(topic)" and a["md1"]["rows"][1]["df"] == 6 - 2
    assert a["md0"]["n"] == 2 * 4
    assert set(a["win_fractions"]) == {"1", "2"}
    assert a["qrels_version"] == "original"


def write_run(path, lines):
    path.write_text("".join(" ".join(map(str, x)) + "\n" for x in lines))
    return path


def test_a_run_computed_elsewhere_on_a_permutation_is_linked_and_scored(
    tmp_path, settings, django_capture_on_commit_callbacks
):
    settings.ECAST_CACHE_DIR = tmp_path / "cache"
    coll, version = labelled_collection()
    exp = svc.permutation_experiment_create(collection=coll, name="ext", qrels_version=version, systems=[], k=3)
    perm = Permutation.objects.filter(experiment=exp, conversation__topic_id="2").exclude(is_original=True).first()
    tag = f"mysys.perm{perm.pk}"
    path = write_run(
        tmp_path / "mysys.run",
        [("2_1", "Q0", "P6", 1, 9.0, tag), ("2_2", "Q0", "P9", 1, 5.0, tag), ("2_2", "Q0", "P7", 2, 4.0, tag)],
    )
    with django_capture_on_commit_callbacks(execute=True):
        result = permutation_run_import(experiment=exp, path=path, user=None)
    result.refresh_from_db()
    assert result.system == "mysys" and result.permutation == perm and result.run is not None
    # 2_1: P6 (grade 4) at rank 1 → 1.0; 2_2: P7 relevant at rank 2; 2_3 and 2_4 unranked → 0 (trec_eval -c)
    assert result.per_turn["2_1"] == pytest.approx(1.0)
    assert 0 < result.per_turn["2_2"] < 1 and result.per_turn["2_3"] == 0.0
    assert result.mean == pytest.approx(sum(result.per_turn.values()) / 4)


def test_a_run_without_a_permutation_id_or_for_another_topic_is_refused(tmp_path):
    coll, version = labelled_collection()
    exp = svc.permutation_experiment_create(collection=coll, name="ext", qrels_version=version, systems=[], k=3)
    path = write_run(tmp_path / "plain.run", [("2_1", "Q0", "P6", 1, 9.0, "mysys")])
    with pytest.raises(ValidationError, match="perm<id>"):
        permutation_run_import(experiment=exp, path=path)
    perm = Permutation.objects.filter(experiment=exp, conversation__topic_id="2").first()
    path = write_run(tmp_path / "x.run", [("1_1", "Q0", "P1", 1, 9.0, f"other.perm{perm.pk}")])
    with pytest.raises(ValidationError, match="not in topic 2"):
        permutation_run_import(experiment=exp, path=path)
    assert not PermutationResult.objects.filter(permutation__experiment=exp).exists()


def test_the_rewrite_system_gets_the_history_in_the_permuted_order(monkeypatch):
    seen = []

    def fake_cqr(histories, utterances, backend):
        seen.append((histories, utterances, backend))
        return [u.upper() for u in utterances]

    monkeypatch.setattr(retrieval, "cqr_rewrite", fake_cqr)
    queries = retrieval.queries_for_order("rewrite", [1, 3, 2], {1: "a", 2: "b", 3: "c"})
    assert seen == [([[], ["a"], ["a", "c"]], ["a", "c", "b"], "rule")]
    assert queries == {1: [("A", 1.0)], 3: [("C", 1.0)], 2: [("B", 1.0)]}


def _scores(exp):
    rows = PermutationResult.objects.filter(permutation__experiment=exp).order_by("pk")
    return list(rows.values_list("pk", "per_turn", "mean"))


def test_each_chunk_scores_its_rankings_as_the_whole_experiment_scoring_would(
    cache_dir, django_capture_on_commit_callbacks
):
    coll, version = labelled_collection()
    exp = run_experiment(coll, version, django_capture_on_commit_callbacks, systems=("current", "cu", "lp", "fu"))
    assert exp.status == PermutationExperiment.Status.SUCCEEDED and exp.scored_version == version
    chunked = _scores(exp)
    assert chunked and all(mean is not None for _pk, _per, mean in chunked)
    svc.permutation_experiment_score(experiment=exp)  # the whole-experiment path a rescore takes
    whole = _scores(exp)
    assert [pk for pk, *_ in whole] == [pk for pk, *_ in chunked]
    for (_pk, per_a, mean_a), (_pk2, per_b, mean_b) in zip(chunked, whole, strict=True):
        assert per_a.keys() == per_b.keys()
        assert all(abs(per_a[t] - per_b[t]) <= 1e-12 for t in per_a)
        assert abs(mean_a - mean_b) <= 1e-12


def test_judgments_that_arrive_while_chunks_run_make_the_last_chunk_rescore_the_whole_experiment(
    cache_dir, django_capture_on_commit_callbacks
):
    coll, version = labelled_collection()
    exp = svc.permutation_experiment_create(
        collection=coll, name="exp", qrels_version=version, systems=["current"], k=5, seed=1, start=False
    )
    svc.permutation_index_prepare(experiment=exp)
    first, second = sel.experiment_conversation_ids(experiment=exp)
    svc.permutation_chunk_run(experiment_id=exp.pk, conversation_id=first, queue_scoring=False)
    topic = PermutationResult.objects.filter(permutation__experiment=exp).first().permutation.conversation.topic_id
    turn = coll.turns.get(turn_id=f"{topic}_1")
    results = PermutationResult.objects.filter(permutation__experiment=exp, permutation__conversation_id=first)
    assert max(r.per_turn[turn.turn_id] for r in results) > 0
    # Every passage judged relevant to the first turn so far becomes non-relevant: its score must drop to 0.
    Qrel.objects.filter(version=version, turn=turn).update(grade=0)
    assert svc.permutation_experiment_rescore(experiment_id=exp.pk).startswith("retrieval still running")
    with django_capture_on_commit_callbacks(execute=True):
        svc.permutation_chunk_run(experiment_id=exp.pk, conversation_id=second)
    exp.refresh_from_db()
    assert exp.status == PermutationExperiment.Status.SUCCEEDED and "rescore_pending" not in exp.parameters
    assert {r.per_turn[turn.turn_id] for r in results.all()} == {0.0}


def test_without_new_judgments_the_last_chunk_finishes_the_experiment_without_a_scoring_task(
    cache_dir, django_capture_on_commit_callbacks, monkeypatch
):
    queued = []
    for module in (experiments, chunks, recovery):  # every module of the services that queues
        monkeypatch.setattr(module, "enqueue", lambda name, *args, **kw: queued.append(name))
    coll, version = labelled_collection()
    exp = svc.permutation_experiment_create(
        collection=coll, name="exp", qrels_version=version, systems=["current"], k=5, seed=1, start=False
    )
    svc.permutation_index_prepare(experiment=exp)
    with django_capture_on_commit_callbacks(execute=True):
        for conv_id in sel.experiment_conversation_ids(experiment=exp):
            svc.permutation_chunk_run(experiment_id=exp.pk, conversation_id=conv_id)
    exp.refresh_from_db()
    assert exp.status == PermutationExperiment.Status.SUCCEEDED and queued == []
    assert exp.scored_qrels_count == Qrel.objects.filter(version=version).count() and exp.scored_at is not None


def test_the_conversation_summary_and_the_topic_export_read_every_conversations_turns_in_one_query():
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from ecast.models import Turn

    coll, version = labelled_collection()
    exp = svc.permutation_experiment_create(collection=coll, name="a", qrels_version=version, systems=[], k=3)
    turn_table = connection.ops.quote_name(Turn._meta.db_table)
    # The summary reads the labels its plan kept, none of the turns; the export reads every conversation's at once.
    for read, topic, reads in (
        (sel.experiment_conversation_summary, lambda row: row["conversation"].topic_id, 0),
        (sel.permutation_topics, lambda row: row["number"], 1),
    ):
        with CaptureQueriesContext(connection) as queries:
            out = read(experiment=exp)
        assert {topic(row) for row in out} == {"1", "2"}
        turn_reads = [q["sql"] for q in queries.captured_queries if f"FROM {turn_table}" in q["sql"]]
        assert len(turn_reads) == reads, turn_reads


def _results_by_order(exp):
    rows = PermutationResult.objects.filter(permutation__experiment=exp).select_related("permutation__conversation")
    return {
        (r.permutation.conversation.topic_id, r.permutation.index, r.system): (
            r.permutation.order,
            r.per_turn,
            r.mean,
            PermutationQuery.objects.get(pk=next(iter(r.queries.values()))).doc_ids,
        )
        for r in rows
    }


def test_an_experiment_fanned_out_in_chunks_scores_as_one_chunk_experiments_per_conversation_do(
    cache_dir, django_capture_on_commit_callbacks
):
    coll, version = labelled_collection()
    systems = ["current", "fu", "cu", "lp", "rewrite"]
    with django_capture_on_commit_callbacks(execute=True):
        chunked = svc.permutation_experiment_create(
            collection=coll, name="n chunks", qrels_version=version, systems=systems, k=5, seed=4
        )
        singles = [
            svc.permutation_experiment_create(
                collection=coll,
                name=f"one chunk {conv.topic_id}",
                qrels_version=version,
                systems=systems,
                k=5,
                seed=4,
                conversations=[conv],
            )  # fmt: skip
            for conv in coll.conversations.order_by("-topic_id")
        ]
    for exp in [chunked, *singles]:
        exp.refresh_from_db()
        assert exp.status == PermutationExperiment.Status.SUCCEEDED, exp.error
    assert (chunked.progress_total, [s.progress_total for s in singles]) == (2, [1, 1])
    whole = _results_by_order(chunked)
    assert len(whole) == 6 * len(systems)
    assert whole == {key: value for s in singles for key, value in _results_by_order(s).items()}


def test_an_experiment_whose_last_chunk_died_before_finishing_it_is_finished_by_the_sweeper_once(
    cache_dir, django_capture_on_commit_callbacks, monkeypatch
):
    queued = []
    for module in (experiments, chunks, recovery):  # every module of the services that queues
        monkeypatch.setattr(module, "enqueue", lambda name, *args, **kw: queued.append(name))
    coll, version = labelled_collection()
    exp = svc.permutation_experiment_create(
        collection=coll, name="exp", qrels_version=version, systems=["current", "cu"], k=5, seed=1, start=False
    )
    svc.permutation_index_prepare(experiment=exp)
    for conv_id in sel.experiment_conversation_ids(experiment=exp):
        svc.permutation_chunk_run(experiment_id=exp.pk, conversation_id=conv_id)
    # As if the last chunk's worker died after committing its rankings, before it counted the finished conversations.
    PermutationExperiment.objects.filter(pk=exp.pk).update(
        status=PermutationExperiment.Status.RUNNING, progress_done=0, scored_at=None
    )
    stamps = []
    for _sweep in range(2):  # the second sweep (or a second chunk that saw every conversation done) changes nothing
        with django_capture_on_commit_callbacks(execute=True):
            assert svc.permutation_experiment_requeue(experiment_id=exp.pk) == (
                "queued 0 conversation chunk(s) without rankings"
            )
        exp.refresh_from_db()
        assert (exp.status, exp.progress_done, exp.progress_total) == (PermutationExperiment.Status.SUCCEEDED, 2, 2)
        stamps.append(exp.scored_at)
    assert stamps[0] is not None and stamps[1] == stamps[0] and queued == []


def test_a_chunk_locks_its_own_orders_and_never_the_experiment_row_the_other_chunks_reference(
    cache_dir, django_capture_on_commit_callbacks
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    require_postgres("row locks are PostgreSQL's (SQLite runs one chunk at a time)")
    exp, first = experiment_ready_to_run(["current"])
    with CaptureQueriesContext(connection) as queries:
        svc.permutation_chunk_run(experiment_id=exp.pk, conversation_id=first, queue_scoring=False)
    locks = [q["sql"] for q in queries if "FOR UPDATE" in q["sql"] and 'evaluation_permutation"' in q["sql"]]
    assert locks, "the chunk locks its orders"
    # Every chunk's rankings share-lock the experiment row (foreign key): locking it here would serialise them.
    assert all("evaluation_permutationexperiment" not in sql for sql in locks), locks


def test_a_chunk_delivered_again_replaces_its_results_instead_of_adding_to_them(cache_dir):
    exp, first = experiment_ready_to_run(["current", "cu"])
    svc.permutation_chunk_run(experiment_id=exp.pk, conversation_id=first, queue_scoring=False)
    mine = PermutationResult.objects.filter(permutation__conversation_id=first, permutation__experiment=exp)
    stored = {(r.permutation_id, r.system): (r.per_turn, r.mean) for r in mine}
    queries = PermutationQuery.objects.filter(experiment=exp).count()
    mine.update(per_turn={}, mean=-1.0)  # as if the first delivery had stored something else

    svc.permutation_chunk_run(experiment_id=exp.pk, conversation_id=first, queue_scoring=False)

    assert {(r.permutation_id, r.system): (r.per_turn, r.mean) for r in mine} == stored
    assert PermutationQuery.objects.filter(experiment=exp).count() == queries


def test_a_ranking_another_chunk_stored_meanwhile_is_kept_once_and_the_results_point_at_it(cache_dir, monkeypatch):
    coll, version = labelled_collection()
    reference = svc.permutation_experiment_create(
        collection=coll, name="reference", qrels_version=version, systems=["current", "cu"], k=5, seed=1, start=False
    )
    exp = svc.permutation_experiment_create(
        collection=coll, name="raced", qrels_version=version, systems=["current", "cu"], k=5, seed=1, start=False
    )
    first = sel.experiment_conversation_ids(experiment=exp)[0]
    for e in (reference, exp):
        svc.permutation_index_prepare(experiment=e)
    svc.permutation_chunk_run(experiment_id=reference.pk, conversation_id=first, queue_scoring=False)
    store = chunks._chunk_store
    raced: list[str] = []

    def another_chunk_stores_one_first(exp_, conversation_id, sampled, new, *args, replace):
        if not replace:  # between this chunk's read of the stored rankings and its write
            _, key, query, docs, scores = new[0]
            PermutationQuery.objects.create(experiment=exp_, key=key, query=query, doc_ids=docs, scores=scores)
            raced.append(key)
        return store(exp_, conversation_id, sampled, new, *args, replace=replace)

    monkeypatch.setattr(chunks, "_chunk_store", another_chunk_stores_one_first)
    svc.permutation_chunk_run(experiment_id=exp.pk, conversation_id=first, queue_scoring=False)

    assert raced and PermutationQuery.objects.filter(experiment=exp, key=raced[0]).count() == 1
    assert PermutationQuery.objects.filter(experiment=exp).count() == reference.queries.count()

    def results(e):
        rows = PermutationResult.objects.filter(permutation__experiment=e, run__isnull=True)
        keys = dict(PermutationQuery.objects.filter(experiment=e).values_list("pk", "key"))
        return {
            (r.permutation.index, r.system): ({t: keys[q] for t, q in r.queries.items()}, r.per_turn, r.mean)
            for r in rows.select_related("permutation")
        }

    assert results(exp) == results(reference) != {}


@pytest.mark.django_db(transaction=True)
def test_a_chunk_without_conflicts_stores_everything_in_one_transaction_without_savepoints(cache_dir):
    # Each savepoint is a round trip; a chunk makes about twenty, and with two workers on two cores every one of
    # them waits for a core. The conflict paths (tests above) take them only when a conflict happens.
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    exp, first = experiment_ready_to_run(["current", "cu"])
    with CaptureQueriesContext(connection) as queries:
        svc.permutation_chunk_run(experiment_id=exp.pk, conversation_id=first, queue_scoring=False)
    assert PermutationResult.objects.filter(permutation__conversation_id=first, permutation__experiment=exp).exists()
    assert [q["sql"] for q in queries if "SAVEPOINT" in q["sql"]] == []


def test_creation_queues_every_chunk_largest_first_and_the_first_chunk_pins_the_index(
    cache_dir, monkeypatch, django_capture_on_commit_callbacks
):
    queued = []
    for module in (experiments, chunks, recovery):  # every module of the services that queues
        monkeypatch.setattr(module, "enqueue", lambda name, *args, **kw: queued.append((name, *args)))
    coll, version = labelled_collection()
    with django_capture_on_commit_callbacks(execute=True):
        exp = svc.permutation_experiment_create(
            collection=coll, name="exp", qrels_version=version, systems=["current"], k=5, seed=1
        )
    sizes = {entry["conversation"]: entry["size"] for entry in exp.plan}
    assert [name for name, *_ in queued] == [svc.CHUNK_TASK] * 2  # no task stands between creation and the chunks
    assert [conv for _name, _exp, conv in queued] == sorted(sizes, key=lambda c: -sizes[c])
    assert "index_key" not in PermutationExperiment.objects.get(pk=exp.pk).parameters

    svc.permutation_chunk_run(experiment_id=exp.pk, conversation_id=queued[0][2], queue_scoring=False)
    pinned = PermutationExperiment.objects.get(pk=exp.pk).parameters["index_key"]
    assert pinned == retrieval.corpus_key(*sel.experiment_corpus(experiment=exp))
    svc.permutation_chunk_run(experiment_id=exp.pk, conversation_id=queued[1][2], queue_scoring=False)
    exp.refresh_from_db()
    assert exp.parameters["index_key"] == pinned and exp.status == PermutationExperiment.Status.SUCCEEDED
    # The plan's sizes (computed without sampling) are the turns over the orders the chunks sampled.
    stored: dict[int, int] = {}
    for conv, order in Permutation.objects.filter(experiment=exp).values_list("conversation_id", "order"):
        stored[conv] = stored.get(conv, 0) + len(order)
    assert stored == sizes


def test_a_first_chunk_that_finds_an_index_pinned_meanwhile_keeps_that_one(cache_dir):
    coll, version = labelled_collection()
    exp = svc.permutation_experiment_create(
        collection=coll, name="exp", qrels_version=version, systems=["current"], k=5, seed=1, start=False
    )
    index = svc.permutation_index_prepare(experiment=exp)
    # As if another chunk pinned a different corpus between this chunk's read of the experiment and its pin.
    stale = PermutationExperiment.objects.get(pk=exp.pk)
    PermutationExperiment.objects.filter(pk=exp.pk).update(parameters={**stale.parameters, "index_key": "other"})
    stale.parameters = {k: v for k, v in stale.parameters.items() if k != "index_key"}

    again = svc.permutation_index_prepare(experiment=stale)

    assert PermutationExperiment.objects.get(pk=exp.pk).parameters["index_key"] == "other"
    assert stale.parameters["index_key"] == "other"
    assert again.key == index.key  # "other" is in no cache: the chunk ranks with the index it built


def test_the_sweeper_queues_only_the_chunks_without_rankings_largest_first(cache_dir, monkeypatch):
    queued = []
    for module in (experiments, chunks, recovery):  # every module of the services that queues
        monkeypatch.setattr(module, "enqueue", lambda name, *args, **kw: queued.append((name, *args)))
    coll, version = labelled_collection()
    exp = svc.permutation_experiment_create(
        collection=coll, name="exp", qrels_version=version, systems=["current"], k=5, seed=1, start=False
    )
    sizes = {entry["conversation"]: entry["size"] for entry in exp.plan}
    largest_first = sorted(sizes, key=lambda c: -sizes[c])

    assert svc.permutation_experiment_requeue(experiment_id=exp.pk) == "queued 2 conversation chunk(s) without rankings"
    assert queued == [(svc.CHUNK_TASK, exp.pk, c) for c in largest_first]

    queued.clear()
    svc.permutation_chunk_run(experiment_id=exp.pk, conversation_id=largest_first[0], queue_scoring=False)
    assert svc.permutation_experiment_requeue(experiment_id=exp.pk) == "queued 1 conversation chunk(s) without rankings"
    assert queued == [(svc.CHUNK_TASK, exp.pk, largest_first[1])]


def _orders(exp):
    rows = Permutation.objects.filter(experiment=exp).order_by("conversation_id", "index")
    return list(rows.values_list("conversation__topic_id", "path", "index", "order", "is_original"))


def orders_only_and_queued(coll, version, *, k, seed):
    """The same experiment twice: without systems (its orders sampled at creation) and with one, no chunk run."""
    orders_only = svc.permutation_experiment_create(
        collection=coll, name="orders", qrels_version=version, systems=[], k=k, seed=seed
    )
    queued = svc.permutation_experiment_create(
        collection=coll, name="queued", qrels_version=version, systems=["current"], k=k, seed=seed, start=False
    )
    return orders_only, queued


def chunks_run(exp):
    for conv_id in sel.experiment_conversation_ids(experiment=exp):
        svc.permutation_chunk_run(experiment_id=exp.pk, conversation_id=conv_id, queue_scoring=False)


def test_creation_writes_no_orders_and_the_chunks_sample_those_an_orders_only_experiment_samples_at_once(cache_dir):
    coll, version = labelled_collection()
    orders_only, exp = orders_only_and_queued(coll, version, k=3, seed=4)
    assert not Permutation.objects.filter(experiment=exp).exists()
    assert [entry["topic"] for entry in exp.plan] == ["1", "2"]  # largest first: 4 orders × 5 turns, then 2 × 4
    summary = sel.experiment_conversation_summary(experiment=exp)
    assert [(row["conversation"].topic_id, row["valid_orders"], row["sampled"]) for row in summary] == [
        ("1", 4, None),
        ("2", 2, None),
    ]

    chunks_run(exp)

    assert _orders(exp) == _orders(orders_only) != []
    summary = sel.experiment_conversation_summary(experiment=exp)
    assert [(row["conversation"].topic_id, row["sampled"]) for row in summary] == [("1", 4), ("2", 2)]


def test_a_chunk_samples_from_the_labels_the_experiment_was_created_with_not_from_later_ones(cache_dir):
    coll, version = labelled_collection()
    before, exp = orders_only_and_queued(coll, version, k=5, seed=2)
    # Relabelled after creation, before any chunk ran: topic 1's turn 4 no longer depends on turn 3.
    coll.turns.filter(turn_id="1_4").update(utterance_class="SE")
    after = svc.permutation_experiment_create(
        collection=coll, name="after", qrels_version=version, systems=[], k=5, seed=2
    )
    assert _orders(after) != _orders(before)

    chunks_run(exp)

    assert _orders(exp) == _orders(before)
    assert [row["valid_orders"] for row in sel.experiment_conversation_summary(experiment=exp)] == [4, 2]


def test_orders_another_delivery_stored_meanwhile_are_kept_once_and_the_results_point_at_them(cache_dir, monkeypatch):
    exp, first = experiment_ready_to_run(["current", "cu"])
    store = chunks._chunk_store
    raced: list[int] = []

    def another_delivery_stores_the_orders_first(exp_, conversation_id, sampled, *args, replace):
        if not replace and sampled:  # between this chunk's read of the stored orders and its write
            for row in sampled:
                Permutation.objects.create(
                    experiment_id=row[0], conversation_id=row[1], path=row[2], index=row[3], order=row[4],
                    is_original=row[5],
                )  # fmt: skip
            raced.extend(Permutation.objects.filter(experiment=exp_).values_list("pk", flat=True))
        return store(exp_, conversation_id, sampled, *args, replace=replace)

    monkeypatch.setattr(chunks, "_chunk_store", another_delivery_stores_the_orders_first)
    svc.permutation_chunk_run(experiment_id=exp.pk, conversation_id=first, queue_scoring=False)

    orders = Permutation.objects.filter(experiment=exp, conversation_id=first)
    assert raced and sorted(orders.values_list("pk", flat=True)) == sorted(raced)
    results = PermutationResult.objects.filter(permutation__experiment=exp)
    assert results.count() == len(raced) * 2 and set(results.values_list("permutation_id", flat=True)) == set(raced)


def test_the_summary_of_an_experiment_from_before_plans_reads_its_turns_labels():
    coll, version = labelled_collection()
    exp = svc.permutation_experiment_create(collection=coll, name="a", qrels_version=version, systems=[], k=3)
    described = [
        (r["conversation"].topic_id, r["valid_orders"], r["sampled"])
        for r in sel.experiment_conversation_summary(experiment=exp)
    ]
    # As migration 0012 leaves an older experiment: its conversations listed, no labels kept.
    exp.plan = [{**entry, "paths": []} for entry in exp.plan]

    assert (
        [
            (r["conversation"].topic_id, r["valid_orders"], r["sampled"])
            for r in sel.experiment_conversation_summary(experiment=exp)
        ]
        == described
        == [("1", 4, 4), ("2", 2, 2)]
    )


def test_the_summary_leaves_out_a_planned_conversation_deleted_since():
    coll, version = labelled_collection()
    _orders_only, exp = orders_only_and_queued(coll, version, k=3, seed=1)
    coll.conversations.get(topic_id="2").delete()
    assert [r["conversation"].topic_id for r in sel.experiment_conversation_summary(experiment=exp)] == ["1"]


def test_an_experiment_over_the_whole_corpus_indexes_its_collections_passages_only():
    mine, other = factories.collection("Mine"), factories.collection("Other", year=2023)
    factories.passages({"MARCO_1": "garage door opener", "MARCO_2": "safety sensors", "clueweb22-x:1": "meditation"})
    mine.corpus.add(*Passage.objects.filter(passage_id__startswith="MARCO_"))
    other.corpus.add(Passage.objects.get(passage_id="clueweb22-x:1"))
    exp = PermutationExperiment(collection=mine, corpus="all")
    assert sel.experiment_corpus(experiment=exp) == (["MARCO_1", "MARCO_2"], ["garage door opener", "safety sensors"])
