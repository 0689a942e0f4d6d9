"""Dataset REST API: every endpoint is admin-only (401 anonymous, 403 rater/assessor), paginated and filterable."""

import pytest

from ecast import services
from ecast.core.auth import clear_failures
from ecast.models import Paraphrase
from tests import factories


@pytest.fixture
def data(small_collection):
    turn = small_collection.turns.get(turn_id="1_2")
    manual, raw = services.paraphrase_add(turn=turn, manual_text="Can throat cancer be treated?", raw_text="Can it?")
    factories.passage("MARCO_1", "Throat cancer is treatable.", source="test")
    return {"collection": small_collection, "turn": turn, "manual": manual, "raw": raw}


def _endpoints(d):
    c, t, m = d["collection"].pk, d["turn"].pk, d["manual"].pk
    conv = d["turn"].conversation_id
    return [
        ("get", "/api/collections/", None),
        ("get", f"/api/collections/{c}/", None),
        ("post", "/api/collections/create/", {"name": "New"}),
        ("patch", f"/api/collections/{c}/update/", {"year": 2019}),
        ("get", "/api/conversations/", None),
        ("get", f"/api/conversations/{conv}/", None),
        ("get", "/api/turns/", None),
        ("get", f"/api/turns/{t}/", None),
        ("get", "/api/passages/", None),
        ("get", "/api/passages/MARCO_1/", None),
        ("get", "/api/paraphrases/", None),
        ("get", f"/api/paraphrases/{m}/", None),
        ("get", f"/api/paraphrases/{m}/history/", None),
        ("post", f"/api/paraphrases/{m}/approve/", None),
        ("post", f"/api/paraphrases/{m}/reject/", None),
        ("post", "/api/paraphrases/bulk-status/", {"ids": [m], "status": "approved"}),
        ("post", f"/api/paraphrases/{m}/edit/", {"text": "Edited"}),
        ("post", "/api/paraphrases/add/", {"turn": t, "manual_text": "x", "raw_text": "y"}),
    ]


def test_anonymous_callers_get_401_everywhere(anon_api, data):
    for method, url, body in _endpoints(data):
        response = getattr(anon_api, method)(url, body, format="json")
        assert response.status_code == 401, (method, url, response.status_code)


@pytest.mark.parametrize("client_name", ["rater_api", "assessor_api"])
def test_raters_and_assessors_get_403_everywhere_and_change_nothing(request, client_name, data):
    api = request.getfixturevalue(client_name)
    for method, url, body in _endpoints(data):
        response = getattr(api, method)(url, body, format="json")
        assert response.status_code == 403, (client_name, method, url, response.status_code)
    data["manual"].refresh_from_db()
    assert data["manual"].status == "candidate" and data["manual"].is_current
    assert data["collection"].turns.get(turn_id="1_2").paraphrases.count() == 2


def test_admins_reach_every_endpoint(admin_api, data):
    for method, url, body in _endpoints(data):
        response = getattr(admin_api, method)(url, body, format="json")
        assert response.status_code in (200, 201), (method, url, response.status_code, response.content[:300])


def test_lists_are_paginated_and_filterable(admin_api, data):
    body = admin_api.get("/api/turns/", {"collection": data["collection"].pk}).json()
    assert body["count"] == 6 and len(body["results"]) == 6 and "next" in body
    body = admin_api.get("/api/turns/", {"q": "treatable"}).json()
    assert [t["turn_id"] for t in body["results"]] == ["1_2"]
    body = admin_api.get("/api/paraphrases/", {"kind": "raw", "turn_id": "1_2"}).json()
    assert [p["text"] for p in body["results"]] == ["Can it?"]
    body = admin_api.get("/api/paraphrases/", {"q": "throat", "status": "approved"}).json()
    assert body["count"] == 0
    body = admin_api.get("/api/conversations/", {"topic_id": "2"}).json()
    assert body["count"] == 1
    assert admin_api.get("/api/passages/", {"q": "treatable"}).json()["count"] == 1


def test_page_size_is_bounded(admin_api, small_collection):
    conv = small_collection.conversations.get(topic_id="1")
    for i in range(4, 60):
        factories.turn(conv, i, f"Question {i}?")
    body = admin_api.get("/api/turns/").json()
    assert body["count"] == 62 and len(body["results"]) == 50 and body["next"]


def test_edit_via_api_returns_the_new_row_and_history_lists_both(admin_api, data):
    m = data["manual"]
    response = admin_api.post(f"/api/paraphrases/{m.pk}/edit/", {"text": "Is throat cancer curable?"}, format="json")
    assert response.status_code == 201
    new = response.json()
    assert new["origin"] == "edited" and new["edited_from"] == m.pk and new["pair"] == data["raw"].pk
    history = admin_api.get(f"/api/paraphrases/{new['id']}/history/").json()
    assert [h["text"] for h in history] == ["Can throat cancer be treated?", "Is throat cancer curable?"]
    again = admin_api.post(f"/api/paraphrases/{m.pk}/edit/", {"text": "Other"}, format="json")
    assert again.status_code == 400 and "current version" in str(again.json())


def test_add_via_api_validates_the_raw_text(admin_api, data):
    response = admin_api.post(
        "/api/paraphrases/add/", {"turn": data["turn"].pk, "manual_text": "Can it be cured?"}, format="json"
    )
    assert response.status_code == 400 and "raw_text" in response.json()


def test_collection_create_refuses_duplicates_and_bad_thresholds(admin_api, data):
    assert admin_api.post("/api/collections/create/", {"name": "Mini"}, format="json").status_code == 400
    bad = admin_api.post("/api/collections/create/", {"name": "X", "relevance_threshold": 9}, format="json")
    assert bad.status_code == 400 and "relevance_threshold" in bad.json()


def test_a_user_reads_and_regenerates_their_token(rater_api, rater):
    first = rater_api.get("/api/token/").json()
    assert first["username"] == "rater1" and len(first["token"]) == 40
    second = rater_api.post("/api/token/").json()
    assert second["token"] != first["token"]
    # the old token no longer authenticates
    assert rater_api.get("/api/token/").status_code == 401


@pytest.fixture
def forget_failures():
    clear_failures("rater1", "127.0.0.1")
    yield
    clear_failures("rater1", "127.0.0.1")  # never leak a lock-out into another test (shared cache)


def test_a_script_obtains_its_token_with_a_password_and_is_locked_out_after_failures(
    anon_api, rater, settings, forget_failures
):
    settings.ECAST_LOGIN_ATTEMPTS = 3
    ok = anon_api.post("/api/token/obtain/", {"username": "rater1", "password": "pass-rater1"}, format="json")
    assert ok.status_code == 200 and ok.json()["token"]
    for _ in range(3):
        bad = anon_api.post("/api/token/obtain/", {"username": "rater1", "password": "x"}, format="json")
        assert bad.status_code == 400
    locked = anon_api.post("/api/token/obtain/", {"username": "rater1", "password": "pass-rater1"}, format="json")
    assert locked.status_code == 429 and "Too many failed" in locked.json()["detail"]


def test_session_auth_works_for_the_api(admin_client, data):
    assert admin_client.get("/api/collections/").status_code == 200


def test_the_token_endpoint_needs_credentials(anon_api):
    assert anon_api.get("/api/token/").status_code == 401
    assert anon_api.post("/api/token/").status_code == 401


@pytest.mark.parametrize("method", ["get", "post", "put", "patch", "delete"])
def test_an_unknown_api_path_answers_a_json_404_for_every_method(admin_api, anon_api, method):
    for api in (admin_api, anon_api):
        response = getattr(api, method)("/api/no/such/endpoint/")
        assert response.status_code == 404 and response["Content-Type"] == "application/json"
        assert response.json() == {
            "detail": "No API endpoint at /api/no/such/endpoint/. The endpoints are listed at /api/docs/."
        }


def test_an_api_path_missing_its_slash_is_redirected_on_read_and_explained_on_write(admin_api, data):
    read = admin_api.get("/api/collections?name=Mini")
    assert read.status_code == 301 and read["Location"] == "/api/collections/?name=Mini"
    write = admin_api.post("/api/collections/create", {"name": "X"}, format="json")
    assert write.status_code == 404
    assert "Did you mean /api/collections/create/?" in write.json()["detail"]


def test_pages_outside_the_api_keep_the_html_404(admin_client):
    response = admin_client.get("/no-such-page/")
    assert response.status_code == 404 and response["Content-Type"].startswith("text/html")


def test_bulk_status_decides_pairs_and_rejects_unknown_statuses(admin_api, data):
    m = data["manual"]
    body = admin_api.post("/api/paraphrases/bulk-status/", {"ids": [m.pk], "status": "rejected"}, format="json")
    assert body.status_code == 200 and body.json() == {"pairs": 1, "paraphrases": 2}
    assert set(Paraphrase.objects.filter(turn=m.turn).values_list("status", flat=True)) == {"rejected"}
    bad = admin_api.post("/api/paraphrases/bulk-status/", {"ids": [m.pk], "status": "gone"}, format="json")
    assert bad.status_code == 400 and "status" in bad.json()
