"""Stored scores: full compute, per-turn live recompute (debounced), new runs, snapshots, trec_eval -c means."""

from __future__ import annotations

import statistics
from unittest import mock

import pytest

from ecast.core.jobs import debounce_release
from evaluation import events, metrics, services
from evaluation.models import DirtyTurn, EvaluationJob, LeaderboardSnapshot, Qrel, TurnScores
from evaluation.selectors import leaderboard, per_turn_scores, qrels_dict, run_dict, score_means, score_summary
from evaluation.services import jobs as job_services
from tests.concurrency_helpers import require_postgres
from tests.evaluation.helpers import QRELS, RUNS, add_run, build, stored

pytestmark = pytest.mark.django_db


def _expected(run_name: str, measure: str, threshold: int = 1) -> dict[str, float]:
    run = {q: {d: float(len(docs) - i) for i, d in enumerate(docs)} for q, docs in RUNS[run_name].items()}
    return metrics.evaluate(QRELS, run, [measure], rel_threshold=threshold)[measure]


def test_selectors_return_the_contract_dicts():
    coll, version, runs = build()
    assert qrels_dict(version=version) == QRELS
    rd = run_dict(run=runs["strong"])
    assert rd["1_1"] == {"d1": 4.0, "d3": 3.0, "d2": 2.0, "x1": 1.0}
    assert set(rd) == set(RUNS["strong"])


def test_a_full_compute_stores_trec_eval_c_values_for_every_judged_turn():
    coll, version, runs = build()
    services.scores_compute_for_version(version=version)
    weak = per_turn_scores(run=runs["weak"], version=version, measure="nDCG@3")
    # Every judged turn has a row, the unranked 2_1 scores 0, unjudged turns (1_3, 2_3) have none.
    assert set(weak) == set(QRELS)
    assert weak["2_1"] == 0.0
    assert weak == pytest.approx(_expected("weak", "nDCG@3"))
    means = score_means(version=version, measures=["nDCG@3", "AP"])
    assert means[runs["strong"].pk]["AP"] == pytest.approx(metrics.mean(_expected("strong", "AP")))
    assert stored(version=version, measure="AP")[0].threshold == 1
    snapshot = LeaderboardSnapshot.objects.get(version=version)
    # Counted from the judgments the scores were computed against: what the qrels table holds.
    assert (snapshot.qrels_count, snapshot.judged_turns) == (sum(map(len, QRELS.values())), len(QRELS))


@pytest.mark.parametrize("batch", [1, 2, 1000])
def test_rankings_fed_a_few_at_a_time_store_what_one_pass_stores(monkeypatch, batch):
    from evaluation import scoring

    monkeypatch.setattr(scoring, "EVALUATE_BATCH", batch)
    coll, version, runs = build()
    services.scores_compute_for_version(version=version)
    # Every run of a few turns at once: one fetch mixes the runs' rankings, and batches must not cross runs.
    services.scores_recompute_turns(version=version, turn_pks=list(coll.turns.values_list("pk", flat=True)))
    for name, run in runs.items():
        for measure in ("nDCG@3", "AP", "Bpref", "Judged@3", "RR"):
            assert per_turn_scores(run=run, version=version, measure=measure) == pytest.approx(
                _expected(name, measure), abs=1e-12
            ), (name, measure)
    assert TurnScores.objects.filter(version=version).count() == 2 * len(QRELS)


def test_values_ranked_gives_the_ranked_judged_queries_of_values():
    ev = metrics.RankingEvaluator(QRELS, ["nDCG@3", "Judged@3", "P@1"])
    run = {q: {d: float(len(docs) - i) for i, d in enumerate(docs)} for q, docs in RUNS["weak"].items()}
    full = ev.values(run)
    ranked = ev.values_ranked(run)
    assert set(ranked) == {q for q in run if q in QRELS and run[q]} and set(ranked) < set(full)
    assert all(full[q] == ranked[q] for q in ranked)
    assert all(v == [0.0, 0.0, 0.0] for q, v in full.items() if q not in ranked)


def test_it_records_and_applies_the_collection_threshold():
    coll, version, runs = build(threshold=2)
    services.scores_compute_for_version(version=version)
    p1 = per_turn_scores(run=runs["strong"], version=version, measure="P@1")
    assert p1 == pytest.approx(_expected("strong", "P@1", threshold=2))
    assert p1["2_1"] == 1.0 and p1["1_1"] == 1.0  # d7 (2) counts, d1 (2) counts at threshold 2
    assert {r.threshold for r in stored(version=version)} == {2}


def test_a_recompute_is_idempotent_and_replaces_rows():
    coll, version, runs = build()
    services.scores_compute_for_version(version=version)
    n = len(stored())
    services.scores_compute_for_version(version=version)
    assert len(stored()) == n == 2 * len(QRELS) * len(services.MEASURES)
    assert TurnScores.objects.count() == 2 * len(QRELS)  # one row per run × turn holds every measure


def test_a_new_judgment_recomputes_only_its_turn_for_every_run(django_capture_on_commit_callbacks):
    coll, version, runs = build()
    services.scores_compute_for_version(version=version)
    (untouched,) = stored(run=runs["weak"], turn=coll.turns.get(turn_id="1_1"), version=version, measure="nDCG@3")
    turn = coll.turns.get(turn_id="2_2")
    with django_capture_on_commit_callbacks(execute=True):
        Qrel.objects.create(version=version, turn=turn, passage_id="x4", grade=3, source="assessed")
        events.qrels_changed(version_id=version.pk, turn_ids=[turn.pk])
    (strong,) = stored(run=runs["strong"], turn=turn, version=version, measure="nDCG@3")
    assert strong.value > 0.9  # x4 at rank 1 is now highly relevant
    job = EvaluationJob.objects.get(kind="turns")
    assert job.status == "succeeded" and job.turn_ids == [turn.pk]
    (again,) = stored(run=runs["weak"], turn=coll.turns.get(turn_id="1_1"), version=version, measure="nDCG@3")
    assert again.computed_at == untouched.computed_at
    assert not DirtyTurn.objects.exists()
    rows = leaderboard(version=version, measures=["nDCG@3"])
    assert rows[0]["run"] == "strong" and rows[0]["rank"] == 1
    assert LeaderboardSnapshot.objects.filter(version=version).count() == 2


def test_a_burst_of_judgments_schedules_one_drain(django_capture_on_commit_callbacks):
    coll, version, runs = build()
    services.scores_compute_for_version(version=version)
    t1, t2 = coll.turns.get(turn_id="1_1"), coll.turns.get(turn_id="2_2")

    debounce_release(services.recompute_key(version.pk))
    with mock.patch("evaluation.tasks.dirty_turns_drain_task.apply_async") as sched:
        with django_capture_on_commit_callbacks(execute=True):
            for t in (t1, t2, t1, t2, t1):
                events.qrels_changed(version_id=version.pk, turn_ids=[t.pk])
    assert sched.call_count == 1
    assert sched.call_args.kwargs["countdown"] == services.recompute_delay_s()
    assert set(DirtyTurn.objects.values_list("turn_id", flat=True)) == {t1.pk, t2.pk}
    job = services.dirty_turns_drain(version_id=version.pk)
    assert job is not None and sorted(job.turn_ids) == sorted([t1.pk, t2.pk])
    assert services.dirty_turns_drain(version_id=version.pk) is None  # nothing left: no second job
    assert EvaluationJob.objects.filter(kind="turns").count() == 1


def test_a_turn_that_loses_all_judgments_loses_its_scores(django_capture_on_commit_callbacks):
    coll, version, runs = build()
    services.scores_compute_for_version(version=version)
    turn = coll.turns.get(turn_id="2_2")
    with django_capture_on_commit_callbacks(execute=True):
        Qrel.objects.filter(version=version, turn=turn).delete()
        events.qrels_changed(version_id=version.pk, turn_ids=[turn.pk])
    assert not stored(turn=turn, version=version)


def test_a_created_run_is_evaluated_against_every_version(django_capture_on_commit_callbacks):
    coll, version, runs = build()
    from tests.evaluation.helpers import derive

    derive(version, "original + new", {"1_3": {"x3": 4}})
    with django_capture_on_commit_callbacks(execute=True):
        run = add_run(coll, "late", {"1_3": ["x3"], "1_1": ["d1"]})
        events.run_imported(run_id=run.pk)
    job = EvaluationJob.objects.get(run=run)
    assert job.status == "succeeded" and job.progress_done == job.progress_total == 2
    by_version = {v: per_turn_scores(run=run, version=v, measure="nDCG@3") for v in coll.qrels_versions.all()}
    assert len(by_version) == 2
    new = coll.qrels_versions.get(name="original + new")
    assert by_version[new]["1_3"] == 1.0 and "1_3" not in by_version[version]


def test_a_run_job_counts_versions_made_after_it_was_queued_so_progress_never_exceeds_the_total():
    from tests.evaluation.helpers import derive

    coll, version, runs = build()
    job = services.evaluation_job_create(collection=coll, kind="run", run=runs["weak"], start=False)
    assert job.progress_total == 1
    derive(version, "original + new", {"1_3": {"x3": 4}})
    done = services.evaluation_job_execute(job_id=job.pk)
    assert done.status == "succeeded" and done.progress_done == done.progress_total == 2


def test_a_derived_version_without_scores_gets_a_full_compute_on_its_first_change(django_capture_on_commit_callbacks):
    coll, version, runs = build()
    from tests.evaluation.helpers import derive

    child = derive(version, "original + new", {"2_3": {"y": 1}})
    turn = coll.turns.get(turn_id="2_3")
    with django_capture_on_commit_callbacks(execute=True):
        events.qrels_changed(version_id=child.pk, turn_ids=[turn.pk])
    assert len(stored(version=child, run=runs["weak"], measure="AP")) == len(QRELS) + 1


def test_a_full_recompute_job_reports_progress():
    coll, version, runs = build()
    job = services.evaluation_job_create(collection=coll, kind="full", start=False)
    done = services.evaluation_job_execute(job_id=job.pk)
    assert done.status == "succeeded" and done.progress_done == done.progress_total == 2
    assert len(stored(version=version)) == 2 * len(QRELS) * len(services.MEASURES)


def test_it_refuses_a_run_job_for_a_run_of_another_collection():
    from django.core.exceptions import ValidationError

    coll, version, runs = build()
    other, _, _ = build(name="Other")
    with pytest.raises(ValidationError, match="another collection"):
        services.evaluation_job_create(collection=other, kind="run", run=runs["weak"], start=False)


def test_a_new_qrels_version_is_scored_for_every_run_once_committed(django_capture_on_commit_callbacks):
    from django.db import transaction

    from tests.evaluation.helpers import derive

    coll, version, runs = build()
    with django_capture_on_commit_callbacks(execute=True):
        with transaction.atomic():
            child = derive(version, "original + new", {"1_3": {"x3": 2}})
    assert len(stored(version=child, run=runs["strong"], measure="nDCG@3")) == len(QRELS) + 1
    assert EvaluationJob.objects.filter(kind="turns", version=child, status="succeeded").count() == 1


def test_uploading_reuses_the_job_the_run_created_event_queued(django_capture_on_commit_callbacks):
    coll, version, runs = build()
    from django.core.files.uploadedfile import SimpleUploadedFile

    with django_capture_on_commit_callbacks(execute=True):
        run, job = services.run_upload(
            collection=coll, uploaded=SimpleUploadedFile("r.run", b"1_1 Q0 d1 1 1.0 up\n"), name="up"
        )
    assert EvaluationJob.objects.filter(run=run).count() == 1 and job.run == run


def test_a_recompute_stamps_the_version_so_a_watching_page_hears_of_it(django_capture_on_commit_callbacks):
    from evaluation.selectors import scores_stamp

    coll, version, runs = build()
    before = scores_stamp(version_id=version.pk)
    with django_capture_on_commit_callbacks(execute=True):
        services.scores_compute_for_version(version=version)
    first = scores_stamp(version_id=version.pk)
    assert first and first != before
    with django_capture_on_commit_callbacks(execute=True):  # the judgment's drain runs at once (eager tasks here)
        services.dirty_turns_mark(version_id=version.pk, turn_ids=[coll.turns.get(turn_id="1_1").pk])
    assert EvaluationJob.objects.filter(kind="turns").exists()
    assert scores_stamp(version_id=version.pk) not in ("", first)


@pytest.mark.django_db(transaction=True)
def test_a_drain_finding_another_drain_of_its_version_at_work_requeues_itself_and_leaves_the_marks():

    from django.db import connections

    from ecast.core import jobs

    require_postgres("the drain lock is a PostgreSQL advisory lock; the SQLite setup runs one worker")
    coll, version, runs = build()
    turn = coll.turns.get(turn_id="1_1")
    DirtyTurn.objects.create(version=version, turn=turn)
    other = connections.create_connection("default")  # a drain of the same version in another worker
    try:
        with other.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [jobs.advisory_key(services.DRAIN_LOCK), version.pk])
        with mock.patch("evaluation.tasks.dirty_turns_drain_task.apply_async") as again:
            assert services.dirty_turns_drain(version_id=version.pk) is None
        assert again.call_args.kwargs["countdown"] == services.DRAIN_RETRY_S
        assert list(DirtyTurn.objects.values_list("turn_id", flat=True)) == [turn.pk]
    finally:
        other.close()
    job = services.dirty_turns_drain(version_id=version.pk)
    assert job is not None and job.turn_ids == [turn.pk] and not DirtyTurn.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_drain_and_a_full_recompute_part_of_one_version_never_write_at_once_while_parts_share_it():
    from django.db import connections

    from ecast.core import jobs

    require_postgres("the version's writer lock is a PostgreSQL advisory lock; the SQLite setup runs one worker")
    coll, version, runs = build()
    weak, strong = runs["weak"].pk, runs["strong"].pk
    DirtyTurn.objects.create(version=version, turn=coll.turns.get(turn_id="1_1"))
    job = services.evaluation_job_create(collection=coll, kind="full", start=False)
    EvaluationJob.objects.filter(pk=job.pk).update(status="running", progress_total=2)
    key = [jobs.advisory_key(services.DRAIN_LOCK), version.pk]
    other = connections.create_connection("default")  # another worker
    try:
        # Another part of the version is writing: a drain leaves its marks and comes back later ...
        with other.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_lock_shared(%s, %s)", key)
        with mock.patch("evaluation.tasks.dirty_turns_drain_task.apply_async") as drain_again:
            assert services.dirty_turns_drain(version_id=version.pk) is None
        assert drain_again.called and DirtyTurn.objects.count() == 1
        # ... while this part writes beside the other one.
        services.scores_part_compute(job_id=job.pk, version_id=version.pk, run_ids=[weak])
        assert {r.run_id for r in stored(version=version)} == {weak}
        with other.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock_shared(%s, %s)", key)
            cursor.execute("SELECT pg_advisory_lock(%s, %s)", key)  # now a drain of the version is writing
        with (
            mock.patch("evaluation.services.jobs.PART_WAIT_S", 0.3),
            mock.patch("evaluation.tasks.scores_part_compute_task.apply_async") as part_again,
        ):
            services.scores_part_compute(job_id=job.pk, version_id=version.pk, run_ids=[strong])
        assert part_again.call_args.kwargs == {"args": [job.pk, version.pk, [strong]], "countdown": 0.5}
        assert {r.run_id for r in stored(version=version)} == {weak}  # the part wrote nothing ...
        assert EvaluationJob.objects.get(pk=job.pk).progress_done == 1  # ... and did not count itself done
    finally:
        other.close()
    services.scores_part_compute(job_id=job.pk, version_id=version.pk, run_ids=[strong])
    job.refresh_from_db()
    assert job.status == "succeeded" and {r.run_id for r in stored(version=version)} == {weak, strong}


def test_a_full_recompute_fans_out_in_parts_that_store_what_one_pass_stores(settings):
    coll, version, runs = build()
    services.scores_compute_for_version(version=version)
    one_pass = sorted((r.run_id, r.turn_id, r.measure, r.value) for r in stored(version=version))
    TurnScores.objects.all().delete()
    settings.ECAST_RECOMPUTE_PARTS = 5  # more parts than runs: one part per run
    job = services.evaluation_job_create(collection=coll, kind="full", start=False)
    with mock.patch("evaluation.services.jobs.enqueue", wraps=job_services.enqueue) as queued:
        done = services.evaluation_job_execute(job_id=job.pk)
    parts = [c.args for c in queued.call_args_list if c.args[0] == services.PART_TASK]
    assert sorted(p[3] for p in parts) == sorted([[r.pk] for r in runs.values()])
    assert done.status == "succeeded" and done.progress_done == done.progress_total == len(runs)
    assert sorted((r.run_id, r.turn_id, r.measure, r.value) for r in stored(version=version)) == one_pass
    assert LeaderboardSnapshot.objects.filter(version=version, trigger="full recompute").count() == 2


def test_a_started_full_recompute_queues_its_parts_at_commit_without_a_job_task_between(
    settings, django_capture_on_commit_callbacks
):
    coll, version, runs = build()
    settings.ECAST_RECOMPUTE_PARTS = 2
    with mock.patch("evaluation.services.jobs.enqueue") as queued:
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            job = services.evaluation_job_create(collection=coll, kind="full")
        assert not queued.called  # nothing reaches a worker before the job row is committed
        for callback in callbacks:
            callback()
    assert [c.args[0] for c in queued.call_args_list] == [services.PART_TASK, services.PART_TASK]
    assert sorted(c.args[3] for c in queued.call_args_list) == sorted([[r.pk] for r in runs.values()])
    job.refresh_from_db()
    assert job.status == "running" and job.progress_total == 2 and job.parts_done == []


def test_a_failing_part_fails_the_full_recompute_job_with_its_reason():
    coll, version, runs = build()
    job = services.evaluation_job_create(collection=coll, kind="full", start=False)
    with mock.patch("evaluation.services.jobs.scores_write", side_effect=RuntimeError("disk full")):
        services.evaluation_job_execute(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == "failed" and "disk full" in job.error


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("batch", [1, 3, 1000])
def test_a_worker_recompute_streaming_rankings_into_one_copy_stores_exact_values(monkeypatch, batch):
    from django.db import connection

    from evaluation import scoring

    require_postgres("the rankings stream over a second PostgreSQL connection")
    monkeypatch.setattr(scoring, "EVALUATE_BATCH", batch)
    coll, version, runs = build()
    # Runs in between and after the others that rank nothing at all: every judged turn of theirs scores 0.
    empty = [add_run(coll, name, {}) for name in ("aaa-empty", "zzz-empty")]
    services.scores_compute_for_version(version=version)  # rows the recompute must replace, not add to
    Qrel.objects.filter(version=version, turn__turn_id="1_1", passage_id="d2").update(grade=3)
    judged = {q: dict(docs) for q, docs in QRELS.items()}
    judged["1_1"]["d2"] = 3
    assert not connection.in_atomic_block  # what a worker sees: the streamed path
    progress: list[int] = []
    ids = [r.pk for r in [*runs.values(), *empty]]
    written = scoring.scores_write(version=version, run_ids=ids, progress=progress.append)
    assert written.values == 4 * len(QRELS) * len(services.MEASURES) and progress == [1, 1, 1, 1]
    assert (written.judgments, written.judged_turns) == (sum(map(len, QRELS.values())), len(QRELS))
    assert TurnScores.objects.filter(version=version).count() == 4 * len(QRELS)
    for name, run in runs.items():
        ranked = {q: {d: float(len(docs) - i) for i, d in enumerate(docs)} for q, docs in RUNS[name].items()}
        for measure in ("nDCG@3", "AP", "Judged@3", "Bpref", "R@100"):
            expected = metrics.evaluate(judged, ranked, [measure])[measure]
            assert per_turn_scores(run=run, version=version, measure=measure) == pytest.approx(expected, abs=1e-12)
    for run in empty:
        assert per_turn_scores(run=run, version=version, measure="AP") == dict.fromkeys(QRELS, 0.0)


@pytest.mark.django_db(transaction=True)
def test_a_full_recompute_reads_only_the_rankings_of_turns_the_version_judges():
    from evaluation.selectors import rankings_stream

    require_postgres("the rankings stream over a second PostgreSQL connection")
    coll, version, runs = build()
    pk_of = dict(coll.turns.values_list("pk", "turn_id"))
    ids = [r.pk for r in runs.values()]
    with rankings_stream(run_ids=ids) as rows:
        every = {(run_id, pk_of[tpk]) for run_id, tpk, *_ in rows}
    with rankings_stream(run_ids=ids, version_id=version.pk) as rows:
        judged = [(run_id, pk_of[tpk]) for run_id, tpk, *_ in rows]
    # "1_3" is ranked by the strong run and judged by no one; "2_2" is judged with grade 0 only, and is read.
    assert (runs["strong"].pk, "1_3") in every and (runs["strong"].pk, "1_3") not in judged
    assert set(judged) == {(r, t) for r, t in every if t in QRELS} and len(judged) < len(every)
    assert judged == sorted(judged, key=lambda rt: rt[0])  # still in run order


@pytest.mark.django_db(transaction=True)
def test_a_worker_recompute_failing_halfway_keeps_every_previous_score(monkeypatch):
    from evaluation import scoring

    require_postgres("the rankings stream over a second PostgreSQL connection")
    coll, version, runs = build()
    services.scores_compute_for_version(version=version)
    before = sorted(TurnScores.objects.filter(version=version).values_list("run_id", "turn_id", "values"))
    calls = []
    real = metrics.RankingEvaluator.values_ranked

    def fails_on_the_second_run(self, run, *args, **kwargs):
        calls.append(1)
        if len(calls) > 1:
            raise RuntimeError("evaluator crashed")
        return real(self, run, *args, **kwargs)

    monkeypatch.setattr(scoring, "EVALUATE_BATCH", 1000)
    monkeypatch.setattr(metrics.RankingEvaluator, "values_ranked", fails_on_the_second_run)
    with pytest.raises(RuntimeError, match="evaluator crashed"):
        scoring.scores_write(version=version, run_ids=[r.pk for r in runs.values()])
    # The first run's new rows were already in the COPY: the whole write rolled back, the old rows stand.
    assert sorted(TurnScores.objects.filter(version=version).values_list("run_id", "turn_id", "values")) == before


@pytest.mark.django_db(transaction=True)
def test_a_run_job_and_a_requeued_turns_job_wait_for_the_version_writer_like_a_drain():
    from django.db import connections

    from ecast.core import jobs

    require_postgres("the version's writer lock is a PostgreSQL advisory lock; the SQLite setup runs one worker")
    coll, version, runs = build()
    weak = runs["weak"]
    run_job = services.evaluation_job_create(collection=coll, kind="run", run=weak, start=False)
    turn = coll.turns.get(turn_id="1_1")
    turns_job = EvaluationJob.objects.create(
        collection=coll, kind="turns", version=version, turn_ids=[turn.pk], status="running", progress_total=1
    )
    key = [jobs.advisory_key(services.DRAIN_LOCK), version.pk]
    other = connections.create_connection("default")  # a drain of the version in another worker
    try:
        with other.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_lock(%s, %s)", key)
        for job in (run_job, turns_job):
            with (
                mock.patch("evaluation.services.jobs.PART_WAIT_S", 0.3),
                mock.patch("evaluation.tasks.evaluation_job_run_task.apply_async") as again,
            ):
                services.evaluation_job_execute(job_id=job.pk)
            assert again.call_args.kwargs == {"args": [job.pk], "countdown": services.DRAIN_RETRY_S}
            assert EvaluationJob.objects.get(pk=job.pk).status == "running"
        assert not TurnScores.objects.exists()  # neither wrote beside the drain
    finally:
        other.close()
    assert services.evaluation_job_execute(job_id=run_job.pk).status == "succeeded"
    assert {r.run_id for r in stored(version=version)} == {weak.pk}
    assert services.evaluation_job_execute(job_id=turns_job.pk).status == "succeeded"


def test_a_part_run_twice_does_not_end_the_full_recompute_before_every_part_ran(settings):
    coll, version, runs = build()
    weak, strong = runs["weak"].pk, runs["strong"].pk
    job = services.evaluation_job_create(collection=coll, kind="full", start=False)
    job.status, job.progress_total = "running", 2
    job.save()
    for _ in range(2):  # redelivered: the same part twice
        services.scores_part_compute(job_id=job.pk, version_id=version.pk, run_ids=[weak])
    job.refresh_from_db()
    assert job.status == "running" and job.progress_done == 1
    services.scores_part_compute(job_id=job.pk, version_id=version.pk, run_ids=[strong])
    job.refresh_from_db()
    assert job.status == "succeeded" and job.progress_done == 2
    assert {r.run_id for r in stored(version=version)} == {weak, strong}


def test_the_leaderboard_summary_gives_each_run_the_mean_and_sd_of_its_rows_across_measure_layouts():
    """Rows written with different measure lists (an older release stored fewer) are summarised together, by name."""
    coll, version, runs = build()
    services.scores_compute_for_version(version=version)
    strong, weak = runs["strong"], runs["weak"]
    expected = {
        name: {m: list(per_turn_scores(run=run, version=version, measure=m).values()) for m in ("AP", "nDCG@3")}
        for name, run in (("strong", strong), ("weak", weak))
    }
    # One more turn for the strong run in an older layout: AP and nDCG@3 in another order, no Judged@3.
    extra = coll.turns.exclude(pk__in=TurnScores.objects.filter(run=strong).values("turn_id")).first()
    TurnScores.objects.create(
        run=strong, turn=extra, version=version, measures="nDCG@3\nAP", values=[0.25, 0.5], threshold=1
    )
    expected["strong"]["AP"].append(0.5)
    expected["strong"]["nDCG@3"].append(0.25)

    summary = score_summary(version=version, measures=["AP", "nDCG@3", "Judged@3"])
    for name, run in (("strong", strong), ("weak", weak)):
        for m, xs in expected[name].items():
            got = summary[run.pk][m]
            assert got.n == len(xs)
            assert got.mean == pytest.approx(statistics.fmean(xs), abs=1e-15)
            assert got.sd == pytest.approx(statistics.stdev(xs), abs=1e-15)
    # Judged@3 only from the rows that store it; a run filter keeps the other run out.
    assert summary[strong.pk]["Judged@3"].n == len(expected["strong"]["AP"]) - 1
    assert set(score_summary(version=version, measures=["AP"], run_ids=[weak.pk])) == {weak.pk}
