"""Nugget banks by hand: who may edit which bank, copies to post-edit, and the refusals of merge and delete."""

from __future__ import annotations

import pytest

from evaluation.models import NuggetAssignment
from judging.nuggets import banks
from judging.nuggets.leasing import TaskError
from tests import factories
from tests.judging.nuggets import helpers

pytestmark = pytest.mark.django_db


@pytest.fixture
def s():
    return helpers.scene()


def test_an_assessor_edits_the_banks_they_made_and_those_of_open_nugget_tasks_for_them(s, assessor, admin_user, rater):
    other = factories.user("assessor2", "assessor")
    mine = banks.bank_create(collection=s.collection, name="mine", user=assessor)
    assert set(banks.banks_editable_by(assessor)) == {mine}
    task = helpers.nugget_task(s, assessors=[other])
    assert set(banks.banks_editable_by(assessor)) == {mine}  # the task is for someone else
    assert set(banks.banks_editable_by(other)) == {s.bank}
    task.assessors.clear()  # now open to every assessor
    assert set(banks.banks_editable_by(assessor)) == {mine, s.bank}
    task.status = "closed"
    task.save()
    assert set(banks.banks_editable_by(assessor)) == {mine}
    assert set(banks.banks_editable_by(admin_user)) == {mine, s.bank}
    assert not banks.banks_editable_by(rater).exists()
    with pytest.raises(TaskError, match="No such nugget bank"):
        banks.nugget_add(bank=s.bank, turn=s.turns["1_1"], text="x", user=assessor)


def test_a_copy_keeps_the_live_nuggets_with_their_origin_and_the_original_as_parent(s, admin_user):
    fair, tall, paris = s.nuggets("1_1")
    banks.nugget_merge(nugget=paris, into=tall, user=admin_user)
    copy = banks.bank_create(collection=s.collection, name="post-edited", copy_of=s.bank, user=admin_user)
    assert copy.parent == s.bank
    rows = list(copy.nuggets.order_by("turn__turn_id", "position").values_list("text", "importance", "origin"))
    assert rows == [
        ("Built for the 1889 World's Fair", "okay", "auto"),
        ("330 metres tall", "vital", "auto"),
        ("Capital of France is Paris", "vital", "auto"),
    ]
    with pytest.raises(TaskError, match="already has a bank named"):
        banks.bank_create(collection=s.collection, name="post-edited", user=admin_user)


def test_merges_stay_within_a_turn_and_a_labelled_nugget_is_not_deleted(s, admin_user):
    fair, tall, paris = s.nuggets("1_1")
    capital = s.nuggets("2_1")[0]
    with pytest.raises(TaskError, match="same bank and turn"):
        banks.nugget_merge(nugget=fair, into=capital, user=admin_user)
    with pytest.raises(TaskError, match="into itself"):
        banks.nugget_merge(nugget=fair, into=fair, user=admin_user)
    banks.nugget_merge(nugget=paris, into=tall, user=admin_user)
    with pytest.raises(TaskError, match="itself merged"):
        banks.nugget_merge(nugget=fair, into=paris, user=admin_user)
    # Merging the keeper on moves its duplicates along with it.
    banks.nugget_merge(nugget=tall, into=fair, user=admin_user)
    paris.refresh_from_db()
    assert paris.merged_into == fair
    assert NuggetAssignment.objects.filter(nugget=fair).exists()  # the LLM set labelled it
    with pytest.raises(TaskError, match="merge it into its duplicate"):
        banks.nugget_delete(nugget=fair, user=admin_user)
    added = banks.nugget_add(bank=s.bank, turn=s.turns["1_1"], text="  Opened   in 1889 ", user=admin_user)
    assert added.text == "Opened in 1889" and added.position == 3
    banks.nugget_delete(nugget=added, user=admin_user)
    assert not s.bank.nuggets.filter(text="Opened in 1889").exists()
