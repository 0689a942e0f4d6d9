"""Rating pages: the rater's form flow (lease, submit once, undo) and the admin's campaign list and report."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from ecast import services as services_ecast
from ecast.imports.services import import_file
from ecast.models import Paraphrase
from judging.models import Campaign, Rating, RatingAssignment
from tests import factories
from tests.judging.rating.helpers import rate_one

pytestmark = pytest.mark.django_db


@pytest.fixture
def camp(db):
    return factories.rating_campaign(factories.paraphrase_collection(), size=4, n=2)


def _form(c, a_id, key, score=4):
    return {"assignment_id": a_id, "idempotency_key": key, "seconds_on_task": "2.5",
            **{f"m_{k}": str(score) for k in c.measure_keys}}  # fmt: skip


def test_the_rate_page_shows_history_pair_passage_and_keeps_the_lease_on_reload(rater_client, camp):
    url = reverse("rating-rate", args=[camp.pk])
    page = rater_client.get(url)
    assert page.status_code == 200
    html = page.content.decode()
    a = RatingAssignment.objects.get()
    assert a.item.context["paraphrase_manual"] in html and a.item.passage_text in html
    assert "Semantic similarity" in html and "Identical" in html
    rater_client.get(url)
    assert RatingAssignment.objects.count() == 1


def test_a_double_posted_form_stores_one_rating_and_moves_on(rater_client, camp):
    url = reverse("rating-rate", args=[camp.pk])
    rater_client.get(url)
    a = RatingAssignment.objects.get()
    r1 = rater_client.post(url, _form(camp, a.pk, "key-1"))
    r2 = rater_client.post(url, _form(camp, a.pk, "key-1"))
    assert r1.status_code == r2.status_code == 302
    assert Rating.objects.count() == 1 and Rating.objects.get().seconds_on_task == 2.5
    rater_client.get(url)
    rater_client.get(url)
    assert RatingAssignment.objects.count() == 2  # the next item, leased once


def test_a_missing_answer_re_shows_the_item_with_an_error(rater_client, camp):
    url = reverse("rating-rate", args=[camp.pk])
    rater_client.get(url)
    a = RatingAssignment.objects.get()
    form = _form(camp, a.pk, "k")
    form.pop(f"m_{camp.measure_keys[0]}")
    page = rater_client.post(url, form)
    assert page.status_code == 200 and "missing" in page.content.decode()
    assert Rating.objects.count() == 0


def test_undo_from_the_page_brings_the_item_back(rater_client, camp):
    url = reverse("rating-rate", args=[camp.pk])
    rater_client.get(url)
    a = RatingAssignment.objects.get()
    rater_client.post(url, _form(camp, a.pk, "k"))
    page = rater_client.get(url)
    assert "undo-form" in page.content.decode()
    rater_client.post(reverse("rating-undo", args=[camp.pk]), {"assignment_id": a.pk})
    assert Rating.objects.count() == 0
    page = rater_client.get(url)
    assert page.context["assignment"].pk == a.pk


def test_after_undo_the_withdrawn_answer_is_filled_in_for_correction(rater_client, camp):
    url = reverse("rating-rate", args=[camp.pk])
    rater_client.get(url)
    a = RatingAssignment.objects.get()
    rater_client.post(url, _form(camp, a.pk, "k", score=2))
    rater_client.post(reverse("rating-undo", args=[camp.pk]), {"assignment_id": a.pk})
    html = rater_client.get(url).content.decode()
    assert "Your previous answer is filled in" in html
    for key in camp.measure_keys:
        assert f'name="m_{key}" value="2" tabindex="-1" checked' in html
        assert f'name="m_{key}" value="4" tabindex="-1" checked' not in html


def test_raters_read_plain_questions_and_their_own_position_not_symbols_or_ids(rater_client, db):
    c = factories.rating_campaign(
        factories.paraphrase_collection(),
        size=6,
        n=2,
        measures=("semantic_similarity", "language_diversity", "raw_semantic_similarity", "conversational_entailment"),
    )
    html = rater_client.get(reverse("rating-rate", args=[c.pk])).content.decode()
    a = RatingAssignment.objects.get()
    assert re.findall(r"Item \d+", html) == ["Item 1"] and "Item 1 of 6" in html
    assert "Do the original question and the rewritten question ask for the same information?" in html
    assert "Rewritten question" in html and "As asked in the conversation" in html
    for symbol in ("m_i", "p^m", "p^r", "h_i", "m<sub>i</sub>", "p<sup>m</sup>", "p<sup>r</sup>"):
        assert symbol not in html, symbol
    assert a.item.context["turn_id"] not in html


def test_the_admin_still_sees_the_paper_symbols_on_the_campaign_form(admin_client, db):
    html = admin_client.get(reverse("rating-campaigns")).content.decode()
    assert "m_i" in html and "p^m" in html


def test_the_queue_page_lists_open_campaigns(rater_client, camp):
    page = rater_client.get(reverse("rating-queue"))
    assert camp.name in page.content.decode() and "My rating queue" in page.content.decode()


def test_a_rater_who_leaves_the_last_item_half_done_can_go_back_to_it_from_the_queue(rater_client, rater, camp):
    for _ in range(3):
        assert rate_one(camp, rater) is not None
    item_page = rater_client.get(reverse("rating-rate", args=[camp.pk])).content.decode()  # leases the last item
    assert "3 done · 1 left" in item_page
    queue = rater_client.get(reverse("rating-queue")).content.decode()
    cells = re.findall(r'<td class="num">(\d+)</td>', queue)
    assert cells == ["3", "1"] and "Continue rating" in queue and "finished" not in queue
    assert rater_client.get(reverse("api-rating-queue")).json()[0]["left"] == 1


def test_admin_creates_a_campaign_from_the_form_and_sees_the_report(admin_client, db):
    coll = factories.paraphrase_collection()
    page = admin_client.get(reverse("rating-campaigns"))
    assert "Conversational entailment" in page.content.decode()
    r = admin_client.post(
        reverse("rating-campaigns"),
        {"name": "form", "collections": [coll.pk], "sample_size": "4", "seed": "2", "raters_per_item": "3",
         "measures": ["semantic_similarity", "language_diversity"], "lease_seconds": "600", "undo_seconds": "30",
         "gold": "", "gold_threshold": "0.6", "gold_every": "5"},
    )  # fmt: skip
    c = Campaign.objects.get(name="form")
    assert (
        r.status_code == 302
        and c.items.count() == 4
        and c.measure_keys == ["semantic_similarity", "language_diversity"]
    )
    for u in factories.users(3):
        for _ in range(4):
            rate_one(c, u, 5)
    report = admin_client.get(reverse("rating-campaign", args=[c.pk])).content.decode()
    assert "Fleiss" in report and "<svg" in report and "crowd0" in report


def test_the_create_form_reports_errors_and_writes_nothing(admin_client, db):
    coll = factories.paraphrase_collection()
    page = admin_client.post(
        reverse("rating-campaigns"),
        {"name": "bad", "collections": [coll.pk], "sample_size": "4", "measures": ["semantic_similarity"],
         "gold": "999999: semantic_similarity=5"},
    )  # fmt: skip
    assert page.status_code == 200 and "paraphrase 999999 does not exist" in page.content.decode()
    assert not Campaign.objects.filter(name="bad").exists()


@pytest.mark.parametrize("name", ["rating-campaigns", "rating-campaign"])
def test_raters_and_assessors_cannot_open_admin_pages(rater_client, camp, name):
    url = reverse(name, args=[camp.pk] if name == "rating-campaign" else [])
    assert rater_client.get(url).status_code == 403


def test_raters_cannot_pause_or_close(rater_client, rater, camp):
    assert (
        rater_client.post(reverse("rating-rater-pause", args=[camp.pk, rater.pk]), {"paused": "0"}).status_code == 403
    )
    assert rater_client.post(reverse("rating-campaign-status", args=[camp.pk]), {"status": "closed"}).status_code == 403


@pytest.mark.parametrize("name", ["rating-queue", "rating-rate"])
def test_assessors_cannot_open_rater_pages(assessor_client, camp, name):
    url = reverse(name, args=[camp.pk] if name == "rating-rate" else [])
    assert assessor_client.get(url).status_code == 403


def test_admin_pauses_and_reinstates_from_the_report(admin_client, camp):
    (u,) = factories.users(1)
    rate_one(camp, u)
    admin_client.post(reverse("rating-rater-pause", args=[camp.pk, u.pk]), {"paused": "1"})
    assert "paused" in admin_client.get(reverse("rating-campaign", args=[camp.pk])).content.decode()
    admin_client.post(reverse("rating-rater-pause", args=[camp.pk, u.pk]), {"paused": "0"})
    camp.refresh_from_db()
    assert sum(camp.items.values_list("completed_count", flat=True)) == 1


def test_the_report_says_what_agreement_with_the_majority_is_computed_over(admin_client):
    import uuid

    from judging.rating import leasing, services

    c = factories.rating_campaign(factories.paraphrase_collection(), size=2, n=3)
    a, b, odd = factories.users(3)
    # a and b give 4, the odd one out 2: the odd rater's others agree (4–4), a's and b's split (4–2).
    for user, score in ((a, 4), (b, 4), (odd, 2)):
        while (asg := leasing.assignment_next(campaign=c, rater=user)) is not None:
            services.rating_submit(
                assignment_id=asg.pk,
                rater=user,
                values={k: score for k in c.measure_keys},
                idempotency_key=uuid.uuid4().hex,
            )
    page = admin_client.get(reverse("rating-campaign", args=[c.pk])).content.decode()
    assert "0.00 <span" in page and "(0 of 4 with a majority, of 4 scores)" in page
    assert "(no majority among the others yet)" in page
    assert "items where they split (e.g. 2–2) are left out" in page


def test_an_ikat_item_keeps_the_users_ptkb_in_its_context_and_the_rate_page_folds_it(shared_data, rater_client):
    job = import_file(kind="ikat_topics", path=shared_data / "ikat/2023/2023_train_topics.json")
    turn = job.collection.turns.get(turn_id="1-1_3")
    manual, _raw = services_ecast.paraphrase_add(
        turn=turn,
        manual_text="Which Dutch universities teach computer science?",
        raw_text="Which of them teach computer science?",
    )
    Paraphrase.objects.filter(turn=turn).update(status="approved")
    c = factories.rating_campaign(job.collection, size=1, n=1)
    item = c.items.get()
    assert item.paraphrase_id == manual.pk
    ptkb = item.context["ptkb"]
    assert len(ptkb) == 11 and ptkb[4] == {
        "number": 5,
        "text": "I have a bachelor's degree in computer science.",
        "cited": True,
    }
    assert [s["number"] for s in ptkb if s["cited"]] == [2, 5]
    html = rater_client.get(reverse("rating-rate", args=[c.pk])).content.decode()
    panel = html[html.index('<details class="ptkb-panel" id="ptkb">') :]
    panel = panel[: panel.index("</details>")]
    assert "What the user told about themselves (11)" in panel
    assert '<li value="5" class="ptkb-cited">I have a bachelor&#x27;s degree in computer science.</li>' in panel


def test_cast_items_have_no_ptkb(camp, rater_client):
    assert all("ptkb" not in item.context for item in camp.items.all())
    html = rater_client.get(reverse("rating-rate", args=[camp.pk])).content.decode()
    assert 'id="ptkb"' not in html
