"""Campaign creation and sampling, submission, undo, gold checks and pausing (the submission invariants)."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from ecast.models import Paraphrase, Turn
from judging.models import RaterStatus, Rating, RatingAssignment, RatingItem
from judging.rating import leasing, sampling, services
from judging.rating import tasks as rating_tasks
from tests import factories
from tests.judging.rating.helpers import answer, rate_one

pytestmark = pytest.mark.django_db


def test_paraphrase_source_reads_provenance_and_defaults_to_unknown():
    assert sampling.paraphrase_source({"source": "r", "stage": "paraphrase"}) == "r"  # the generation pipeline
    assert sampling.paraphrase_source({"paraphrase_source": "m"}) == "m"
    assert sampling.paraphrase_source({"source": "automatic"}) == "r"
    assert sampling.paraphrase_source({"source": {"kind": "m_i"}}) == "m"
    assert sampling.paraphrase_source({}) == "unknown"
    assert sampling.paraphrase_source(None) == "unknown"


def test_it_samples_equally_from_each_year_and_source_stratum_reproducibly():
    a = factories.paraphrase_collection("A", 2019, topics=2, turns=4)
    b = factories.paraphrase_collection("B", 2020, topics=2, turns=4)
    c1 = services.campaign_create(name="s1", collections=[a, b], sample_size=8, seed=3)
    c2 = services.campaign_create(name="s2", collections=[a, b], sample_size=8, seed=3)
    assert c1.strata == {"2019/m": 2, "2019/r": 2, "2020/m": 2, "2020/r": 2}
    ids1 = sorted(c1.items.values_list("paraphrase_id", flat=True))
    assert ids1 == sorted(c2.items.values_list("paraphrase_id", flat=True))
    assert c1.measure_keys == [
        "semantic_similarity",
        "language_diversity",
        "raw_semantic_similarity",
        "conversational_entailment",
        "passage_relevance",
    ]
    assert c1.raters_per_item == 5


def test_a_short_stratum_gives_its_share_to_the_others():
    coll = factories.paraphrase_collection(topics=1, turns=3)  # 2 "r", 1 "m"
    c = factories.rating_campaign(coll, size=3)
    assert c.strata == {"2020/m": 1, "2020/r": 2}


def test_the_item_snapshot_has_history_pair_and_replacement_passage_when_unreliable():
    coll = factories.paraphrase_collection(topics=1, turns=3)
    t2 = Turn.objects.get(turn_id="1_2")
    t2.canonical_response_unreliable = True
    t2.replacement_response_id = "MARCO_9"
    t2.save()
    factories.passage("MARCO_9", "Replacement passage.")
    c = factories.rating_campaign(coll, size=3)
    item = c.items.get(turn=t2)
    assert item.passage_id == "MARCO_9" and item.passage_text == "Replacement passage."
    assert item.context["history"] == [{"number": 1, "text": "raw 1.1?"}]
    assert item.context["manual_rewrite"] == "manual question 1.2?"
    assert item.context["paraphrase_raw"] == "raw para 1.2"


def test_it_rejects_unknown_measures_and_bad_gold_lines():
    coll = factories.paraphrase_collection(topics=1, turns=2)
    with pytest.raises(ValidationError, match="unknown measure"):
        factories.rating_campaign(coll, measures=("nope",))
    with pytest.raises(ValidationError, match="gold line 2"):
        sampling.parse_gold_spec("1: semantic_similarity=5\nbad", measure_keys=["semantic_similarity"])
    with pytest.raises(ValidationError, match="not asked"):
        sampling.parse_gold_spec("1: fluency=5", measure_keys=["semantic_similarity"])


def test_a_late_submit_is_accepted_while_the_item_still_has_room():
    coll = factories.paraphrase_collection()
    c = factories.rating_campaign(coll, size=1, n=2, lease_seconds=60)
    (a,) = factories.users(1)
    lease = leasing.assignment_next(campaign=c, rater=a)
    later = timezone.now() + timedelta(seconds=120)
    rating, created = services.rating_submit(
        assignment_id=lease.pk, rater=a, values=answer(c), idempotency_key="x", now=later
    )
    assert created and RatingItem.objects.get(pk=lease.item_id).completed_count == 1


def test_a_repeated_submit_is_stored_once():
    coll = factories.paraphrase_collection()
    c = factories.rating_campaign(coll, size=2, n=2)
    (u,) = factories.users(1)
    a = leasing.assignment_next(campaign=c, rater=u)
    r1, created1 = services.rating_submit(assignment_id=a.pk, rater=u, values=answer(c), idempotency_key="k1")
    r2, created2 = services.rating_submit(assignment_id=a.pk, rater=u, values=answer(c, 1), idempotency_key="k1")
    assert created1 and not created2 and r1.pk == r2.pk and r2.values == answer(c)
    assert Rating.objects.count() == 1
    assert RatingItem.objects.get(pk=a.item_id).completed_count == 1
    with pytest.raises(services.RatingError, match="already submitted"):
        services.rating_submit(assignment_id=a.pk, rater=u, values=answer(c), idempotency_key="k2")


def test_it_rejects_incomplete_or_out_of_scale_answers_and_other_raters_assignments():
    coll = factories.paraphrase_collection()
    c = factories.rating_campaign(coll, size=2, n=2)
    u, v = factories.users(2)
    a = leasing.assignment_next(campaign=c, rater=u)
    with pytest.raises(services.RatingError, match="missing"):
        services.rating_submit(assignment_id=a.pk, rater=u, values={"semantic_similarity": 3}, idempotency_key="a")
    with pytest.raises(services.RatingError, match="1..5"):
        services.rating_submit(assignment_id=a.pk, rater=u, values=answer(c, 6), idempotency_key="b")
    with pytest.raises(services.RatingError) as exc:
        services.rating_submit(assignment_id=a.pk, rater=v, values=answer(c), idempotency_key="c")
    assert exc.value.code == "not_found"
    assert Rating.objects.count() == 0


def test_undo_within_the_window_reopens_the_item_for_the_same_rater():
    coll = factories.paraphrase_collection()
    c = factories.rating_campaign(coll, size=2, n=2, undo_seconds=30)
    (u,) = factories.users(1)
    rating = rate_one(c, u, 2)
    nxt = leasing.assignment_next(campaign=c, rater=u)
    services.rating_undo(assignment_id=rating.assignment_id, rater=u)
    assert Rating.objects.count() == 0
    assert RatingItem.objects.get(pk=rating.item_id).completed_count == 0
    again = leasing.assignment_next(campaign=c, rater=u)
    assert again.pk == rating.assignment_id != nxt.pk
    assert again.history[0]["values"] == answer(c, 2)


def test_undo_after_the_window_is_refused():
    coll = factories.paraphrase_collection()
    c = factories.rating_campaign(coll, size=2, n=2, undo_seconds=5)
    (u,) = factories.users(1)
    rating = rate_one(c, u)
    with pytest.raises(services.RatingError, match="undo is possible"):
        services.rating_undo(assignment_id=rating.assignment_id, rater=u, now=timezone.now() + timedelta(seconds=6))


def test_a_rater_failing_gold_items_is_paused_and_excluded_until_reinstated():
    coll = factories.paraphrase_collection(topics=2, turns=4)
    gold_ids = list(Paraphrase.objects.filter(kind="manual").values_list("pk", flat=True)[:2])
    c = factories.rating_campaign(
        coll,
        size=4,
        n=2,
        gold=[(pid, {"semantic_similarity": 5}) for pid in gold_ids],
        gold_every=2,
        gold_min_answers=1,
        gold_threshold=0.5,
        gold_tolerance=0,
    )
    (u,) = factories.users(1)
    first = rate_one(c, u, 1)  # regular item
    assert not first.item.is_gold
    gold = rate_one(c, u, 1)  # 2nd item is gold; 1 is wrong → accuracy 0 → paused
    assert gold.item.is_gold
    status = RaterStatus.objects.get(campaign=c, rater=u)
    assert status.paused and "gold accuracy" in status.paused_reason
    assert RatingItem.objects.get(pk=first.item_id).completed_count == 0
    with pytest.raises(services.RatingError) as exc:
        leasing.assignment_next(campaign=c, rater=u)
    assert exc.value.code == "paused"
    services.rater_resume(campaign=c, rater=u)
    assert RatingItem.objects.get(pk=first.item_id).completed_count == 1
    assert leasing.assignment_next(campaign=c, rater=u) is not None


def test_idempotency_keys_are_per_rater():
    coll = factories.paraphrase_collection()
    c = factories.rating_campaign(coll, size=2, n=2)
    u, v = factories.users(2)
    key = uuid.uuid4().hex
    for user in (u, v):
        a = leasing.assignment_next(campaign=c, rater=user)
        services.rating_submit(assignment_id=a.pk, rater=user, values=answer(c), idempotency_key=key)
    assert Rating.objects.count() == 2


def test_housekeeping_marks_long_dead_leases_expired_and_the_rater_does_not_get_them_back():
    coll = factories.paraphrase_collection()
    c = factories.rating_campaign(coll, size=2, n=1, lease_seconds=60)
    (u,) = factories.users(1)
    a = leasing.assignment_next(campaign=c, rater=u)
    RatingAssignment.objects.filter(pk=a.pk).update(expires_at=timezone.now() - timedelta(minutes=10))
    assert rating_tasks.leases_expire_task.delay().get() == 1
    nxt = leasing.assignment_next(campaign=c, rater=u)
    assert nxt.item_id != a.item_id
    assert rating_tasks.agreement_warm_task.delay(c.pk).get() == 0
