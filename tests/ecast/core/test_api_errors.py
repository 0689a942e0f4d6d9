"""Every error under /api/ is JSON, whatever its status, an unexpected exception's 500 included."""

from __future__ import annotations

import logging

import pytest
from django.core.exceptions import SuspiciousOperation
from rest_framework.test import APIClient

from ecast import selectors
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(admin_user, settings):
    settings.DEBUG = False
    client = APIClient(raise_request_exception=False)  # as a server answers: the exception becomes a response
    client.force_authenticate(admin_user)
    return client


@pytest.fixture
def paraphrase_id(db):
    coll = factories.collection()
    return factories.paraphrase(factories.turn(factories.conversation(coll), 1, "What is it?"), "What is that?").pk


def _broken(*args, **kwargs):
    raise RuntimeError("selector broke")


def test_an_unexpected_exception_in_an_api_view_is_a_json_500_and_is_logged_with_its_traceback(
    api, paraphrase_id, monkeypatch, caplog
):
    monkeypatch.setattr(selectors, "paraphrase_history", _broken)
    with caplog.at_level(logging.ERROR, logger="django.request"):
        r = api.get(f"/api/paraphrases/{paraphrase_id}/history/")
    assert r.status_code == 500 and r["Content-Type"] == "application/json"
    assert r.json()["code"] == "server_error" and r.json()["detail"]
    logged = [rec for rec in caplog.records if rec.levelno == logging.ERROR and rec.exc_info]
    assert logged and "selector broke" in str(logged[0].exc_info[1])


def test_a_page_keeps_djangos_html_500(admin_client, monkeypatch, settings):
    settings.DEBUG = False
    admin_client.raise_request_exception = False
    monkeypatch.setattr("ecast.views.render", _broken)
    r = admin_client.get("/collections/")
    assert r.status_code == 500 and r["Content-Type"].startswith("text/html")


def test_a_suspicious_request_under_the_api_is_a_json_400(api, paraphrase_id, monkeypatch):
    def suspicious(*args, **kwargs):
        raise SuspiciousOperation("too many fields")

    monkeypatch.setattr(selectors, "paraphrase_history", suspicious)
    r = api.get(f"/api/paraphrases/{paraphrase_id}/history/")
    assert r.status_code == 400 and r.json()["code"] == "invalid"


@pytest.mark.parametrize(
    "method,path,status",
    [
        ("get", "/api/no-such-endpoint/", 404),
        ("get", "/api/collections/abc/", 404),
        ("post", "/api/no/such/thing/", 404),
        ("delete", "/api/collections/", 405),
        ("put", "/api/token/", 405),
    ],
)
def test_unknown_api_urls_and_methods_answer_json(api, method, path, status):
    r = getattr(api, method)(path)
    assert r.status_code == status and r["Content-Type"] == "application/json" and r.json()["detail"]
