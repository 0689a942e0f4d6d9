"""PTKB assessment tasks: made from an iKAT collection's turns and statements, leased by the relevance queue, judged a
turn at a time into a qrels version of the PTKB companion that exports in the iKAT format."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from ecast.models import Collection, PtkbStatement, Turn
from evaluation.agreement import selectors as asel
from evaluation.models import Qrel, QrelsVersion
from judging.models import AssessorJudgment, Pool, PoolPair
from judging.ptkb import selectors, services
from judging.relevance import selectors as relevance_sel
from judging.relevance import services as relevance_svc
from tests.ecast.imports.conftest import ok
from tests.judging.ptkb.conftest import TURNS

pytestmark = pytest.mark.django_db


def _grades(version: QrelsVersion) -> dict[tuple[str, str], int]:
    return {
        (t, s): g
        for t, s, g in Qrel.objects.filter(version=version).values_list("turn__turn_id", "passage_id", "grade")
    }


def test_a_task_over_every_turn_has_one_pair_per_turn_and_statement(ikat_train):
    pool = services.ptkb_task_create(collection=ikat_train)
    companion = Collection.objects.get(ptkb_of=ikat_train)
    expected = sum(
        PtkbStatement.objects.filter(
            conversation__topic_id=t.conversation.topic_id, conversation__collection=ikat_train
        ).count()
        for t in Turn.objects.filter(collection=ikat_train).select_related("conversation")
    )
    assert pool.kind == Pool.Kind.PTKB and pool.collection == companion and pool.status == Pool.Status.OPEN
    assert (pool.stats["turns"], pool.stats["topics"], pool.stats["pairs"]) == (95, 11, expected)
    assert PoolPair.objects.filter(pool=pool).count() == expected
    assert all(p.cluster_head_id == p.pk for p in PoolPair.objects.filter(pool=pool))
    assert pool.target_version == pool.qrels_version and pool.target_version.collection == companion
    assert not pool.target_version.qrels.exists()
    assert pool.name == "PTKB relevance of 95 turns of iKAT 2023"


def test_a_task_over_chosen_turns_holds_only_them(task):
    assert task.turn_filter == TURNS and task.stats["turns"] == 3
    n = PtkbStatement.objects.filter(conversation__collection=task.collection, conversation__topic_id="1-1").count()
    assert task.stats["pairs"] == 3 * n == 33
    assert sorted(set(PoolPair.objects.filter(pool=task).values_list("turn__turn_id", flat=True))) == TURNS


def test_a_task_refuses_unknown_turns_collections_without_a_ptkb_and_a_taken_name(task, ikat_train, small_collection):
    with pytest.raises(ValidationError, match="turn_ids: 1 unknown in iKAT 2023 PTKB: 99-9_9"):
        services.ptkb_task_create(collection=ikat_train, turn_ids=["1-1_1", "99-9_9"])
    with pytest.raises(ValidationError, match="has no PTKB statements: import its iKAT topics first"):
        services.ptkb_task_create(collection=small_collection)
    with pytest.raises(ValidationError, match="already has a qrels version named 'assessed: PTKB of topic 1-1'"):
        services.ptkb_task_create(collection=ikat_train, turn_ids=["1-1_1"], name="PTKB of topic 1-1")
    assert Pool.objects.count() == 1


def test_an_assessor_takes_a_topic_from_the_queue_and_submits_turns_into_the_tasks_version(task, assessor):
    assert task in relevance_sel.pools_open_for(user=assessor)
    assignment = relevance_svc.assignment_take(pool=task, assessor=assessor)
    assert assignment.conversation.topic_id == "1-1"

    result = services.ptkb_turn_submit(assignment=assignment, turn_id="1-1_1", relevant=[5, 2], assessor=assessor)
    assert result == {"changed": 11, "relevant": 2, "statements": 11}
    grades = _grades(task.target_version)
    assert {s for (t, s), g in grades.items() if g == 1} == {"2", "5"} and len(grades) == 11
    assert selectors.ptkb_assignment_progress(assignment=assignment) == {
        "turns_done": 1,
        "turns_total": 3,
        "relevant": 2,
    }

    # A changed mind replaces the turn's grades (the old ones stay in each judgment's history) ...
    again = services.ptkb_turn_submit(assignment=assignment, turn_id="1-1_1", relevant=[5], assessor=assessor)
    assert again["changed"] == 1 and _grades(task.target_version)[("1-1_1", "2")] == 0
    assert AssessorJudgment.objects.get(pair__turn__turn_id="1-1_1", pair__passage_id="2").history[0]["grade"] == 1
    # ... and the same submit twice changes nothing.
    assert (
        services.ptkb_turn_submit(assignment=assignment, turn_id="1-1_1", relevant=[5], assessor=assessor)["changed"]
        == 0
    )

    for turn_id in TURNS[1:]:
        services.ptkb_turn_submit(assignment=assignment, turn_id=turn_id, relevant=[], assessor=assessor)
    assignment.refresh_from_db()
    assert assignment.completed_at is not None
    progress = selectors.ptkb_task_progress(pool=task)
    assert (progress["turns_done"], progress["statements_judged"], progress["relevant"]) == (3, 33, 1)


def test_a_submit_naming_a_statement_the_user_lacks_or_another_topics_turn_is_refused(task, assessor):
    assignment = relevance_svc.assignment_take(pool=task, assessor=assessor)
    with pytest.raises(ValidationError, match="the user has no statement 12"):
        services.ptkb_turn_submit(assignment=assignment, turn_id="1-1_1", relevant=[12], assessor=assessor)
    with pytest.raises(ValidationError, match="2-1_1 is not part of your topic"):
        services.ptkb_turn_submit(assignment=assignment, turn_id="2-1_1", relevant=[], assessor=assessor)
    assert not AssessorJudgment.objects.exists()


def test_a_turn_submit_writes_the_derived_qrels_once_and_is_all_or_nothing(task, assessor, monkeypatch):
    assignment = relevance_svc.assignment_take(pool=task, assessor=assessor)
    real_write = relevance_svc.write_cluster_qrels
    writes: list[int] = []

    def counting_write(*, pool, heads=None):
        writes.append(len(heads))
        return real_write(pool=pool, heads=heads)

    monkeypatch.setattr(relevance_svc, "write_cluster_qrels", counting_write)
    services.ptkb_turn_submit(assignment=assignment, turn_id="1-1_1", relevant=[5, 2], assessor=assessor)
    assert writes == [11] and len(_grades(task.target_version)) == 11  # one write for the turn's 11 statements
    services.ptkb_turn_submit(assignment=assignment, turn_id="1-1_1", relevant=[5], assessor=assessor)
    assert writes == [11, 1]  # a changed mind rewrites only the statement that changed

    def failing_write(*, pool, heads=None):
        raise RuntimeError("qrels write failed")

    monkeypatch.setattr(relevance_svc, "write_cluster_qrels", failing_write)
    with pytest.raises(RuntimeError):
        services.ptkb_turn_submit(assignment=assignment, turn_id="1-1_2", relevant=[1], assessor=assessor)
    assert not AssessorJudgment.objects.filter(pair__turn__turn_id="1-1_2").exists()


def test_a_statement_takes_only_grades_0_and_1_through_the_relevance_api(task, assessor, assessor_api):
    assignment = relevance_svc.assignment_take(pool=task, assessor=assessor)
    pair = PoolPair.objects.filter(pool=task).first()
    url = reverse("api-relevance-judgment-submit", args=[assignment.pk])
    resp = assessor_api.post(url, {"pair": pair.pk, "grade": 3}, format="json")
    assert resp.status_code == 400 and "relevant (1) or not (0)" in resp.json()["detail"]
    assert assessor_api.post(url, {"pair": pair.pk, "grade": 1}, format="json").status_code == 200


def test_the_tasks_judgments_export_in_the_ikat_format_and_compare_with_the_published_ones(
    task, assessor, admin_client, tmp_path
):
    assignment = relevance_svc.assignment_take(pool=task, assessor=assessor)
    services.ptkb_turn_submit(assignment=assignment, turn_id="1-1_1", relevant=[5], assessor=assessor)
    text = b"".join(
        admin_client.get(reverse("relevance-version-export", args=[task.target_version_id])).streaming_content
    ).decode()
    assert text.splitlines() == [f"1-1_1 0 {n} {int(n == 5)}" for n in sorted(range(1, 12), key=str)]

    # Another assessment of the same statements (as if published) lands in the same companion collection.
    other = tmp_path / "ptkb_rel_other"
    other.write_text("".join(f"1-1_1 0 {n} {int(n in (2, 5))}\n" for n in range(1, 12)))
    published = QrelsVersion.objects.get(pk=ok("ptkb_qrels", other).counts["version_id"])
    assert published.collection == task.collection
    report = asel.agreement_report(a=published, b=task.target_version)
    assert report["items"] == 11 and report["binary"]["confusion"] == [[9, 0], [1, 1]]
    page = admin_client.get(reverse("ptkb-task", args=[task.pk])).content.decode()
    assert f"?a={published.pk}&amp;b={task.target_version_id}" in page


def test_the_passage_pool_pages_leave_ptkb_tasks_to_their_own_page(task, admin_client, admin_api):
    assert task not in admin_client.get(reverse("relevance-admin")).context["pools"]
    resp = admin_client.get(reverse("relevance-pool", args=[task.pk]))
    assert resp.status_code == 302 and resp["Location"] == reverse("ptkb-task", args=[task.pk])
    listed = {p["name"]: p["kind"] for p in admin_api.get(reverse("api-relevance-pools")).json()}
    assert listed == {"PTKB of topic 1-1": "ptkb"}
