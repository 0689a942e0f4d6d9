"""Curation pages: admin-only, search/filter/pagination, per-turn curation with history and repeats."""

import re

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from rest_framework.authtoken.models import Token

from ecast import services
from ecast.imports.services import import_file
from ecast.models import Collection, ImportJob, Paraphrase
from tests import factories


@pytest.fixture
def turn(small_collection):
    t = small_collection.turns.get(turn_id="1_2")
    t.automatic_rewrite = "Is throat cancer treatable?"
    t.canonical_response_id = "MARCO_42"
    t.canonical_response_text = "Throat cancer is often treatable when found early."
    t.feedback_sentences = ["No, I meant surgery."]
    t.save()
    return t


@pytest.fixture
def pair(turn):
    return services.paraphrase_add(
        turn=turn, manual_text="Can throat cancer be treated?", raw_text="Can it be treated?"
    )


def _pages(small_collection, turn, pair):
    conv = turn.conversation_id
    return [
        reverse("collection-list"),
        reverse("collection-detail", args=[small_collection.pk]),
        reverse("conversation-detail", args=[conv]),
        reverse("turn-detail", args=[turn.pk]),
        reverse("paraphrase-search"),
        reverse("paraphrase-history", args=[pair[0].pk]),
    ]


def _posts(turn, pair):
    m = pair[0].pk
    return [
        (reverse("paraphrase-approve", args=[m]), {}),
        (reverse("paraphrase-reject", args=[m]), {}),
        (reverse("paraphrase-reset", args=[m]), {}),
        (reverse("paraphrase-edit", args=[m]), {"text": "Hacked"}),
        (reverse("paraphrase-bulk"), {"action": "approve", "ids": [m]}),
        (reverse("paraphrase-bulk"), {"action": "reject", "scope": "filtered", "querystring": ""}),
        (reverse("turn-detail", args=[turn.pk]), {"manual_text": "Hacked", "raw_text": "Hacked"}),
        (reverse("collection-list"), {"name": "Hacked", "relevance_threshold": 1}),
    ]


def test_anonymous_users_are_sent_to_login(client, small_collection, turn, pair):
    for url in _pages(small_collection, turn, pair):
        response = client.get(url)
        assert response.status_code == 302 and "/accounts/login/" in response["Location"], url


@pytest.mark.parametrize("who", ["rater_client", "assessor_client"])
def test_raters_and_assessors_get_403_on_every_curation_page_and_action(request, who, small_collection, turn, pair):
    c = request.getfixturevalue(who)
    for url in _pages(small_collection, turn, pair):
        assert c.get(url).status_code == 403, url
    for url, body in _posts(turn, pair):
        assert c.post(url, body).status_code == 403, url
    assert not Paraphrase.objects.filter(text="Hacked").exists()
    assert not Collection.objects.filter(name="Hacked").exists()
    pair[0].refresh_from_db()
    assert pair[0].status == "candidate"


def test_admins_see_every_page(admin_client, small_collection, turn, pair):
    for url in _pages(small_collection, turn, pair):
        assert admin_client.get(url).status_code == 200, url


def test_the_turn_page_shows_sources_pairs_provenance_and_repeats(admin_client, turn, pair):
    factories.paraphrase(turn, "Is throat cancer curable?", kind="manual").__class__.objects.filter(
        text="Is throat cancer curable?"
    ).update(provenance={"backend": "t5", "model": "castorini/t5-base-canard", "seed": 7}, origin="generated")
    html = admin_client.get(reverse("turn-detail", args=[turn.pk])).content.decode()
    assert "Is it treatable?" in html  # u_i
    assert "Is throat cancer treatable?" in html  # r_i
    assert "MARCO_42" in html and "often treatable when found early" in html  # c_i
    assert "What is throat cancer?" in html  # conversation history
    assert '<mark class="repeat">throat cancer</mark>' in html
    assert "backend=t5 · model=castorini/t5-base-canard · seed=7" in html
    assert "No, I meant surgery." in html
    assert "shortcuts" in html and "next / previous pair" in html


def test_reintroduce_prefills_the_add_form_with_the_sentence_and_the_pair(admin_client, turn, pair):
    html = admin_client.get(reverse("turn-detail", args=[turn.pk])).content.decode()
    assert "prefill_manual=No%2C%20I%20meant%20surgery.%20Can%20throat%20cancer%20be%20treated%3F" in html
    prefilled = admin_client.get(
        reverse("turn-detail", args=[turn.pk]),
        {"prefill_manual": "No, I meant surgery. Can throat cancer be treated?", "prefill_raw": "No. Can it?"},
    ).content.decode()
    assert "No, I meant surgery. Can throat cancer be treated?</textarea>" in prefilled
    assert "No. Can it?</textarea>" in prefilled


def test_actions_on_the_turn_page_approve_edit_and_add(admin_client, turn, pair):
    manual, raw = pair
    response = admin_client.post(reverse("paraphrase-approve", args=[manual.pk]))
    # The turn's only pair is decided, so the curator moves on to the next turn.
    next_turn = turn.collection.turns.get(turn_id="1_3")
    assert response.status_code == 302 and response["Location"].endswith(f"/turns/{next_turn.pk}/")
    manual.refresh_from_db()
    raw.refresh_from_db()
    assert manual.status == raw.status == "approved"
    admin_client.post(reverse("paraphrase-edit", args=[manual.pk]), {"text": "Is throat cancer curable?"})
    new = Paraphrase.objects.get(text="Is throat cancer curable?")
    assert new.origin == "edited" and new.edited_from_id == manual.pk and new.pair_id == raw.pk
    html = admin_client.get(reverse("turn-detail", args=[turn.pk])).content.decode()
    assert "1 earlier version" in html and "Can throat cancer be treated?" in html
    response = admin_client.post(
        reverse("turn-detail", args=[turn.pk]), {"manual_text": "Can doctors cure throat cancer?", "raw_text": ""}
    )
    assert response.status_code == 200 and "raw (context-dependent) paraphrase is required" in response.content.decode()
    response = admin_client.post(
        reverse("turn-detail", args=[turn.pk]), {"manual_text": "Can doctors cure throat cancer?", "raw_text": "Cure?"}
    )
    assert response.status_code == 302
    assert Paraphrase.objects.filter(turn=turn, is_current=True).count() == 4


def test_editing_an_old_version_shows_a_clear_error(admin_client, turn, pair):
    manual, _ = pair
    services.paraphrase_edit(paraphrase=manual, text="Newer")
    response = admin_client.post(reverse("paraphrase-edit", args=[manual.pk]), {"text": "Other"}, follow=True)
    assert "already been edited" in response.content.decode()


def test_search_filters_and_paginates(admin_client, small_collection, turn, pair):
    for i in range(60):
        factories.paraphrase(turn, f"Variant {i} of the question", kind="manual", status="approved")
    page1 = admin_client.get(reverse("paraphrase-search"), {"q": "variant", "status": "approved"})
    html = page1.content.decode()
    assert "60 paraphrases" in html and "page 1 of 2" in html
    assert "q=variant&amp;status=approved&amp;page=2" in html
    page2 = admin_client.get(reverse("paraphrase-search"), {"q": "variant", "status": "approved", "page": 2})
    assert page2.content.decode().count("Variant ") == 10
    raw_only = admin_client.get(reverse("paraphrase-search"), {"kind": "raw", "collection": small_collection.pk})
    assert "1 paraphrase<" in raw_only.content.decode()


def test_admins_create_and_update_collections_from_the_pages(admin_client):
    response = admin_client.post(
        reverse("collection-list"), {"name": "CAsT 2019", "year": 2019, "relevance_threshold": 1}
    )
    c = Collection.objects.get(name="CAsT 2019")
    assert response["Location"] == reverse("collection-detail", args=[c.pk])
    admin_client.post(reverse("collection-detail", args=[c.pk]), {"name": "CAsT 2019", "relevance_threshold": 2})
    c.refresh_from_db()
    assert c.relevance_threshold == 2
    bad = admin_client.post(reverse("collection-detail", args=[c.pk]), {"name": "CAsT 2019", "relevance_threshold": 9})
    assert bad.status_code == 200 and b"less than or equal to 4" in bad.content


def test_home_is_a_dashboard_per_role(admin_client, small_collection):
    job = ImportJob.objects.create(kind="qrels", file_name="2020qrels.txt", status="failed", errors=[{"line": 3}])
    html = admin_client.get("/").content.decode()
    assert "Mini" in html and "Recent imports" in html
    assert f'href="{reverse("import-job", args=[job.pk])}"' in html and "2020qrels.txt" in html and "1 error" in html


def test_raters_home_has_no_admin_sections(rater_client, small_collection):
    html = rater_client.get("/").content.decode()
    assert f'href="{reverse("rating-queue")}"' in html
    assert "Recent imports" not in html and "Mini" not in html
    assert 'href="/collections/"' not in html


def test_every_user_gets_an_api_token_page(rater_client, rater):
    html = rater_client.get(reverse("account-token")).content.decode()
    assert rater.auth_token.key in html
    old = rater.auth_token.key
    rater_client.post(reverse("account-token"))
    rater.refresh_from_db()
    assert Token.objects.get(user=rater).key != old


def test_assessors_home_links_to_their_judging_queue(assessor_client):
    html = assessor_client.get("/").content.decode()
    assert f'href="{reverse("relevance-queue")}"' in html and "Recent imports" not in html


def test_the_conversation_page_lists_turns_with_their_current_paraphrases(admin_client, turn, pair):
    services.paraphrase_edit(paraphrase=pair[0], text="Is throat cancer curable?")
    html = admin_client.get(reverse("conversation-detail", args=[turn.conversation_id])).content.decode()
    assert "Is it treatable?" in html and "Is throat cancer curable?" in html
    assert "Can throat cancer be treated?" not in html  # edited-away versions stay on the turn page only


def test_django_admin_is_for_staff_only(rater_client, small_collection):
    response = rater_client.get("/django-admin/ecast/paraphrase/")
    assert response.status_code in (302, 403)  # logged in, but not staff
    superuser = Client()
    superuser.force_login(User.objects.create_superuser("root", password="pass-root"))
    for model in ("collection", "conversation", "turn", "passage", "paraphrase", "importjob", "testset"):
        assert superuser.get(f"/django-admin/ecast/{model}/").status_code == 200, model


def test_the_token_page_needs_a_login(client):
    response = client.get(reverse("account-token"))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_every_page_names_the_favicon_and_favicon_ico_leads_to_it(client, admin_client):
    from django.contrib.staticfiles import finders

    login = client.get(reverse("login")).content.decode()
    assert '<link rel="icon" href="/static/ecast/favicon.svg" type="image/svg+xml">' in login
    assert '<link rel="icon"' in admin_client.get(reverse("home")).content.decode()
    response = client.get("/favicon.ico")
    assert response.status_code == 301 and response["Location"] == "/static/ecast/favicon.svg"
    icon = finders.find("ecast/favicon.svg")
    assert icon and open(icon, encoding="utf-8").read().startswith("<svg")


def test_the_collection_page_shows_the_first_question_when_a_topic_has_no_title(admin_client, small_collection):
    from ecast.models import Conversation

    Conversation.objects.filter(collection=small_collection, topic_id="2").update(title="Bees")
    Conversation.objects.filter(collection=small_collection, topic_id="1").update(title="")
    html = admin_client.get(reverse("collection-detail", args=[small_collection.pk])).content.decode()
    assert "<td>Bees</td>" in html
    assert "this is the conversation's first question.\">“What is throat cancer?”</span>" in html


def test_approve_and_reject_move_on_to_the_next_undecided_pair_then_the_next_turn(admin_client, turn):
    first = services.paraphrase_add(turn=turn, manual_text="Can throat cancer be treated?", raw_text="Can it?")
    second = services.paraphrase_add(turn=turn, manual_text="Is throat cancer curable?", raw_text="Curable?")
    third = services.paraphrase_add(turn=turn, manual_text="Can throat cancer be cured?", raw_text="Cured?")
    services.paraphrase_approve(paraphrase=third[0])
    url = reverse("turn-detail", args=[turn.pk])
    response = admin_client.post(reverse("paraphrase-approve", args=[first[1].pk]))  # either member decides the pair
    assert response["Location"] == f"{url}#p{second[0].pk}"  # the third pair is decided already: skipped
    response = admin_client.post(reverse("paraphrase-reject", args=[second[0].pk]))
    next_turn = turn.collection.turns.get(turn_id="1_3")
    assert response["Location"] == reverse("turn-detail", args=[next_turn.pk])
    page = admin_client.get(response["Location"]).content.decode()
    assert "Every pair of turn 1_2 is decided: on to turn 1_3." in page
    statuses = {p.text: p.status for p in Paraphrase.objects.filter(turn=turn)}
    assert statuses == {
        "Can throat cancer be treated?": "approved", "Can it?": "approved",
        "Is throat cancer curable?": "rejected", "Curable?": "rejected",
        "Can throat cancer be cured?": "approved", "Cured?": "approved",
    }  # fmt: skip
    # Undo keeps the curator on the pair it puts back.
    response = admin_client.post(reverse("paraphrase-reset", args=[second[0].pk]))
    assert response["Location"] == f"{url}#p{second[0].pk}"


def test_a_half_decided_pair_is_marked_on_the_turn_page_and_found_by_search(admin_client, turn, pair):
    manual, raw = pair
    Paraphrase.objects.filter(pk=manual.pk).update(status="approved")  # e.g. imported that way
    html = admin_client.get(reverse("turn-detail", args=[turn.pk])).content.decode()
    assert "half-decided: manual approved, raw candidate" in html
    found = admin_client.get(reverse("paraphrase-search"), {"half_decided": "1"})
    assert [p.pk for p in found.context["page"]] == [manual.pk, raw.pk]
    assert "half-decided: raw is candidate" in found.content.decode()
    services.paraphrase_approve(paraphrase=manual)
    assert not list(admin_client.get(reverse("paraphrase-search"), {"half_decided": "1"}).context["page"])


def test_bulk_approve_ticked_rows_decides_their_pairs(admin_client, turn, small_collection):
    a = services.paraphrase_add(turn=turn, manual_text="Can throat cancer be treated?", raw_text="Can it?")
    b = services.paraphrase_add(turn=turn, manual_text="Is throat cancer curable?", raw_text="Curable?")
    c = services.paraphrase_add(turn=turn, manual_text="Can throat cancer be cured?", raw_text="Cured?")
    response = admin_client.post(
        reverse("paraphrase-bulk"), {"action": "approve", "ids": [a[0].pk, b[1].pk], "querystring": "q=throat"}
    )
    assert response.status_code == 302 and response["Location"] == reverse("paraphrase-search") + "?q=throat"
    page = admin_client.get(response["Location"]).content.decode()
    assert "2 pairs approved (4 paraphrases changed status)." in page
    status = dict(Paraphrase.objects.values_list("pk", "status"))
    assert [status[p.pk] for p in (*a, *b, *c)] == ["approved"] * 4 + ["candidate"] * 2
    nothing = admin_client.post(reverse("paraphrase-bulk"), {"action": "approve", "querystring": ""})
    assert "Tick at least one paraphrase" in admin_client.get(nothing["Location"]).content.decode()


def test_bulk_reject_all_matching_uses_the_search_filters(admin_client, turn, small_collection):
    keep = services.paraphrase_add(turn=turn, manual_text="Can throat cancer be treated?", raw_text="Can it?")
    drop = services.paraphrase_add(turn=turn, manual_text="Is throat cancer curable today?", raw_text="Today?")
    other = factories.collection(name="Elsewhere")
    other_turn = factories.turn(factories.conversation(other, "9"), 1, "Is it curable today?")
    elsewhere = services.paraphrase_add(turn=other_turn, manual_text="Is throat cancer curable today?")
    search = f"q=curable+today&collection={small_collection.pk}"
    html = admin_client.get(reverse("paraphrase-search") + "?" + search).content.decode()
    assert "all 1 matching" in html and 'name="querystring" value="q=curable+today&amp;collection=' in html
    admin_client.post(reverse("paraphrase-bulk"), {"action": "reject", "scope": "filtered", "querystring": search})
    status = dict(Paraphrase.objects.values_list("pk", "status"))
    assert [status[p.pk] for p in keep] == ["candidate", "candidate"]
    assert [status[p.pk] for p in drop] == ["rejected", "rejected"]
    assert [status[p.pk] for p in elsewhere] == ["candidate", "candidate"]


def test_raters_cannot_bulk_approve(rater_client, pair):
    response = rater_client.post(reverse("paraphrase-bulk"), {"action": "approve", "ids": [pair[0].pk]})
    assert response.status_code == 403
    assert set(Paraphrase.objects.values_list("status", flat=True)) == {"candidate"}


@pytest.fixture
def ikat_2023(db, shared_data):
    """The real iKAT 2023 training topics, imported: conversations with the user's PTKB."""
    job = import_file(kind="ikat_topics", path=shared_data / "ikat/2023/2023_train_topics.json")
    assert job.status == ImportJob.Status.SUCCEEDED, job.errors
    return job.collection


def _ptkb_items(html: str) -> list[tuple[str, str, bool]]:
    panel = html[html.index('id="ptkb"') :]
    panel = panel[: panel.index("</ol>")]
    items = re.findall(r'<li value="(\d+)"( class="ptkb-cited")?>([^<]*)</li>', panel)
    return [(number, text, bool(cited)) for number, cited, text in items]


def test_the_turn_page_shows_the_users_ptkb_with_the_statements_the_response_used_highlighted(admin_client, ikat_2023):
    turn = ikat_2023.turns.get(turn_id="1-1_1")
    html = admin_client.get(reverse("turn-detail", args=[turn.pk])).content.decode()
    assert "Personal knowledge (PTKB)" in html
    items = _ptkb_items(html)
    assert len(items) == 11 and items[0] == ("1", "I graduated from Tilburg university.", False)
    assert [(n, cited) for n, _text, cited in items if cited] == [("5", True)]  # the turn's ptkb_provenance
    assert "Do you want to continue your bachelor&#x27;s studies" in html  # the response, as c_i
    later = ikat_2023.turns.get(turn_id="1-1_3")  # used statements 5 and 2, written from one passage
    html = admin_client.get(reverse("turn-detail", args=[later.pk])).content.decode()
    assert 'id="response-provenance"' in html and "<code>clueweb22-en0034-09-03452:1</code>" in html
    assert [n for n, _text, cited in _ptkb_items(html) if cited] == ["2", "5"]


def test_cast_turns_show_no_ptkb_panel(admin_client, turn):
    html = admin_client.get(reverse("turn-detail", args=[turn.pk])).content.decode()
    assert "Personal knowledge (PTKB)" not in html and 'id="response-provenance"' not in html


def test_the_conversation_page_and_api_give_the_ptkb(admin_client, admin_api, ikat_2023):
    conv = ikat_2023.conversations.get(topic_id="1-2")
    html = admin_client.get(reverse("conversation-detail", args=[conv.pk])).content.decode()
    assert "Personal knowledge (PTKB): " in html and len(_ptkb_items(html)) == conv.ptkb.count()
    body = admin_api.get(f"/api/conversations/{conv.pk}/").json()
    assert body["ptkb"][0] == {"number": 1, "text": conv.ptkb.get(number=1).text}
    turn = admin_api.get(f"/api/turns/{conv.turns.get(number=1).pk}/").json()
    assert turn["turn_id"] == "1-2_1" and isinstance(turn["ptkb_provenance"], list) and "response_provenance" in turn
