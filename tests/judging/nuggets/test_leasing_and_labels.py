"""Response-judging tasks: answers leased one at a time (never one answer to two assessors, expired leases back in
the queue), labels stored with condition, assessor and history, answers finished only when fully labelled."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from evaluation.models import CitationLabel, NuggetAssignment, ResponseLabelSet
from judging.nuggets import leasing, selectors, services
from judging.nuggets.leasing import TaskError
from tests import factories
from tests.judging.nuggets import helpers

pytestmark = pytest.mark.django_db


@pytest.fixture
def s():
    return helpers.scene()


def _where(lease):
    return (lease.response.run.name, lease.response.turn.turn_id)


def test_a_task_makes_its_assessed_label_set_and_counts_the_answers_it_judges(s, assessor):
    nuggets = helpers.nugget_task(s, name="Nuggets round 1")
    assert nuggets.label_set.name == "Nuggets round 1" and nuggets.label_set.source == "assessed"
    assert nuggets.label_set.kind == "nuggets" and nuggets.label_set.bank == s.bank
    assert nuggets.condition == "blind"
    assert leasing.task_progress(nuggets, assessor) == {"done": 0, "total": 4, "mine": 0}
    # Every answer has a sentence with a citation; an unnamed post-edit task is named for its kind and condition.
    citations = helpers.citation_task(s, post_edit=True, turn_ids=["2_1"])
    assert citations.name == "Citation support (post-edit)" and citations.condition == "post_edit"
    assert leasing.task_progress(citations) == {"done": 0, "total": 2}


def test_task_creation_refuses_what_cannot_be_judged(s):
    with pytest.raises(TaskError, match="needs the nugget bank"):
        services.task_create(collection=s.collection, kind="nuggets", runs=[s.runs["runA"]])
    with pytest.raises(TaskError, match="LLM label set of this collection and kind"):
        services.task_create(
            collection=s.collection, kind="citations", runs=[s.runs["runA"]], llm_label_set=s.llm_nuggets
        )
    human = ResponseLabelSet.objects.create(collection=s.collection, name="human", kind="citations", source="imported")
    with pytest.raises(TaskError, match="not an LLM's"):
        services.task_create(collection=s.collection, kind="citations", runs=[s.runs["runA"]], llm_label_set=human)
    other = factories.collection("Other")
    with pytest.raises(TaskError, match="every run must be of the task's collection"):
        services.task_create(collection=other, kind="citations", runs=[s.runs["runA"]])


def test_two_assessors_never_hold_one_answer_and_an_expired_lease_goes_back_to_the_queue(s, assessor):
    other = factories.user("assessor2", "assessor")
    task = helpers.nugget_task(s, lease_seconds=600)
    now = timezone.now()
    first = leasing.lease_next(task=task, assessor=assessor, now=now)
    second = leasing.lease_next(task=task, assessor=other, now=now)
    assert _where(first) == ("runA", "1_1") and _where(second) == ("runB", "1_1")
    # Asking again gives back the answer one holds, renewed.
    again = leasing.lease_next(task=task, assessor=assessor, now=now + timedelta(seconds=300))
    assert again.pk == first.pk and again.expires_at == now + timedelta(seconds=900)
    # The other assessor finishes theirs; the first one's lease runs out unfinished and goes to them.
    nuggets = {str(n.pk): "not_support" for n in s.nuggets("1_1")}
    services.lease_complete(lease=second, labels=nuggets)
    later = now + timedelta(seconds=901)
    taken = leasing.lease_next(task=task, assessor=other, now=later)
    assert taken.pk == first.pk and taken.assessor == other
    with pytest.raises(TaskError, match="another assessor has it now"):
        services.labels_submit(lease=first, labels={})
    # Meanwhile the first assessor gets a free answer of the next turn.
    assert _where(leasing.lease_next(task=task, assessor=assessor, now=later)) == ("runA", "2_1")
    assert leasing.task_progress(task, other) == {"done": 1, "total": 4, "mine": 1}


def test_labels_record_condition_assessor_and_history_and_an_answer_is_done_only_when_fully_labelled(s, assessor):
    task = helpers.nugget_task(s)
    lease = leasing.lease_next(task=task, assessor=assessor)
    fair, tall, paris = s.nuggets("1_1")
    assert tall.text == "330 metres tall" and paris.text == "In Paris"
    before = task.label_set.updated_at
    assert services.labels_submit(lease=lease, labels={str(tall.pk): "support"}) == 1
    assert services.labels_submit(lease=lease, labels={str(tall.pk): "support"}) == 0  # a repeat stores nothing
    assert services.labels_submit(lease=lease, labels={str(tall.pk): "partial_support"}) == 1
    row = NuggetAssignment.objects.get(label_set=task.label_set, nugget=tall)
    assert (row.label, row.condition, row.assessor) == ("partial_support", "blind", assessor)
    assert [h["label"] for h in row.history] == ["support"] and row.history[0]["by"] == "assessor1"
    task.label_set.refresh_from_db()
    assert task.label_set.updated_at > before
    with pytest.raises(TaskError, match="2 nugget"):
        services.lease_complete(lease=lease, labels={})
    with pytest.raises(TaskError, match="not a nugget of this answer"):
        services.labels_submit(lease=lease, labels={str(s.nuggets("2_1")[0].pk): "support"})
    with pytest.raises(TaskError, match="the label is one of"):
        services.labels_submit(lease=lease, labels={str(paris.pk): "full"})
    done = services.lease_complete(lease=lease, labels={str(paris.pk): "support", str(fair.pk): "not_support"})
    assert done.completed_at is not None
    assert leasing.task_progress(task, assessor) == {"done": 1, "total": 4, "mine": 1}
    # Back to it: the previous answer of the assessor's, which they may still change.
    nxt = leasing.lease_next(task=task, assessor=assessor)
    assert leasing.lease_previous(task=task, assessor=assessor, before=nxt).pk == lease.pk
    assert leasing.lease_previous(task=task, assessor=assessor, before=done) is None


def test_a_post_edit_page_shows_the_llm_label_and_a_blind_one_never_does(s, assessor):
    post = helpers.nugget_task(s, post_edit=True, name="post")
    lease = leasing.lease_next(task=post, assessor=assessor)
    payload = selectors.lease_payload(lease=lease)
    # Vital nuggets first, then the bank's order.
    assert [(i["text"], i["importance"], i["llm"]) for i in payload["items"]] == [
        ("330 metres tall", "vital", "support"),
        ("In Paris", "vital", "support"),
        ("Built for the 1889 World's Fair", "okay", "support"),
    ]
    assert payload["turn"]["turn_id"] == "1_1" and payload["response"]["run"] == "runA"
    assert payload["conversation"][0]["raw"] == "How tall is the Eiffel Tower?"
    services.lease_complete(lease=lease, labels={str(i["id"]): "support" for i in payload["items"]})
    assert set(NuggetAssignment.objects.filter(label_set=post.label_set).values_list("condition", flat=True)) == {
        "post_edit"
    }
    blind = helpers.nugget_task(s, name="blind")
    payload = selectors.lease_payload(lease=leasing.lease_next(task=blind, assessor=assessor))
    assert all("llm" not in i for i in payload["items"])


def test_citation_labels_judge_the_first_citation_and_a_passage_without_text_is_not_required(s, assessor):
    task = helpers.citation_task(s, post_edit=True)
    lease = leasing.lease_next(task=task, assessor=assessor)
    payload = selectors.lease_payload(lease=lease)
    assert [(i["text"], i["citations"], i["llm"]) for i in payload["items"]] == [
        ("The tower is 330 metres tall.", ["p1"], "full"),
        ("It was built for the 1889 fair.", ["p2", "p1"], "full"),
    ]
    assert payload["items"][1]["passage"] == helpers.PASSAGES["p2"]
    assert payload["items"][1]["others"] == [{"id": "p1", "text": helpers.PASSAGES["p1"]}]
    first, second = (str(i["id"]) for i in payload["items"])
    services.lease_complete(lease=lease, labels={first: "full", second: "partial"})
    stored = CitationLabel.objects.filter(label_set=task.label_set).order_by("sentence__index")
    assert [(c.passage_id, c.support, c.condition) for c in stored] == [
        ("p1", "full", "post_edit"),
        ("p2", "partial", "post_edit"),
    ]
    # runB's answer to 2_1 cites a passage the corpus lacks: nothing to judge, so it is done without a label.
    for _ in range(3):
        lease = leasing.lease_next(task=task, assessor=assessor)
        if _where(lease) == ("runB", "2_1"):
            break
        items = selectors.lease_payload(lease=lease)["items"]
        services.lease_complete(lease=lease, labels={str(i["id"]): "none" for i in items if i["citations"]})
    else:
        pytest.fail("runB's answer to 2_1 was never leased")
    item = selectors.lease_payload(lease=lease)["items"][0]
    assert item["passage"] is None and item["citations"] == [helpers.MISSING]
    assert services.lease_missing(lease) == []
    services.lease_complete(lease=lease, labels={})
    assert leasing.task_progress(task) == {"done": 4, "total": 4}
    assert leasing.lease_next(task=task, assessor=assessor) is None


def test_assessors_outside_a_tasks_list_and_raters_cannot_take_its_answers(s, assessor, rater):
    other = factories.user("assessor2", "assessor")
    task = helpers.nugget_task(s, assessors=[other])
    with pytest.raises(TaskError, match="not an assessor of task"):
        leasing.lease_next(task=task, assessor=assessor)
    with pytest.raises(TaskError):
        leasing.lease_next(task=task, assessor=rater)
    assert leasing.lease_next(task=task, assessor=other) is not None
    services.task_set_status(task=task, status="closed")
    with pytest.raises(TaskError, match="is closed"):
        leasing.lease_next(task=task, assessor=other)


def test_the_label_endpoint_reads_as_many_rows_for_three_labels_as_for_one(s, assessor, client):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from django.urls import reverse

    task = helpers.nugget_task(s)
    lease = leasing.lease_next(task=task, assessor=assessor)
    fair, tall, paris = s.nuggets("1_1")
    client.force_login(assessor)
    url = reverse("api-nuggets-lease-labels", args=[lease.pk])

    def statements(labels: dict[str, str]) -> int:
        with CaptureQueriesContext(connection) as queries:
            r = client.post(url, {"labels": labels}, content_type="application/json")
        assert r.status_code == 200 and r.json()["changed"] == len(labels), r.content
        return len(queries.captured_queries)

    one = statements({str(tall.pk): "support"})
    three = statements({str(fair.pk): "support", str(tall.pk): "not_support", str(paris.pk): "partial_support"})
    # The labels are locked, read and written in bulk: more labels, not more statements.
    assert three <= one + 1, (one, three)
