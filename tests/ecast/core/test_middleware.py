"""Browser middleware steps aside for token-authenticated API calls, and only for them."""

from __future__ import annotations

import pytest
from django.test import Client, RequestFactory
from django.urls import reverse

from ecast.core.middleware import AuthenticationMiddleware, MessageMiddleware, SessionMiddleware, is_token_api_call

pytestmark = pytest.mark.django_db


def _seen(request):
    """Run the three middlewares the way settings chain them and return the request the view got."""
    got = {}

    def view(req):
        got["request"] = req
        from django.http import HttpResponse

        return HttpResponse("ok")

    chain = MessageMiddleware(view)
    chain = AuthenticationMiddleware(chain)
    chain = SessionMiddleware(chain)
    chain(request)
    return got["request"]


def test_a_token_api_call_gets_no_session_user_or_messages():
    request = RequestFactory().post("/api/rating/me/", HTTP_AUTHORIZATION="Token abc")
    assert is_token_api_call(request)
    seen = _seen(request)
    assert not hasattr(seen, "session") and not hasattr(seen, "user") and not hasattr(seen, "_messages")


@pytest.mark.parametrize(
    "path,header",
    [("/api/rating/me/", ""), ("/api/rating/me/", "Bearer abc"), ("/rating/", "Token abc"), ("/apix/", "Token a")],
)
def test_pages_and_session_api_calls_keep_the_browser_middleware(path, header):
    request = RequestFactory().get(path, HTTP_AUTHORIZATION=header) if header else RequestFactory().get(path)
    assert not is_token_api_call(request)
    seen = _seen(request)
    assert hasattr(seen, "session") and hasattr(seen, "user") and hasattr(seen, "_messages")


def test_a_session_authenticated_api_post_still_needs_the_csrf_token(admin_user):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(admin_user)
    r = browser.post(reverse("api-rating-campaign-create"), {}, content_type="application/json")
    assert r.status_code == 403 and "CSRF" in r.json()["detail"]


def test_the_log_in_form_still_needs_the_csrf_token(admin_user):
    browser = Client(enforce_csrf_checks=True)
    page = browser.get(reverse("login"))
    assert "csrftoken" in page.cookies
    r = browser.post(reverse("login"), {"username": "admin1", "password": "pass-admin1"})
    assert r.status_code == 403


def test_a_token_api_call_sets_no_cookies(rater_api):
    r = rater_api.get(reverse("api-rating-me"))
    assert r.status_code == 200 and not r.cookies
