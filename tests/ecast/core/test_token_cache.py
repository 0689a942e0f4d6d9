"""Cached API-token look-ups: a cached token costs no query, and every change that matters takes effect at once."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from ecast.core.permissions import ADMIN, RATER

pytestmark = pytest.mark.django_db

ADMIN_URL = "/api/collections/"
RATER_URL = "/api/rating/queue/"


def _client(token: Token) -> APIClient:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return api


def _auth_queries(api: APIClient, url: str) -> tuple[int, int]:
    with CaptureQueriesContext(connection) as queries:
        status = api.get(url).status_code
    auth = [
        q
        for q in queries.captured_queries
        if 'FROM "authtoken_token"' in q["sql"] or 'JOIN "auth_user_groups"' in q["sql"]
    ]
    return status, len(auth)


def test_a_cached_token_is_served_without_the_token_and_role_queries(rater):
    api = _client(Token.objects.create(user=rater))
    assert _auth_queries(api, RATER_URL) == (200, 2)  # first call: token with user, then roles
    assert _auth_queries(api, RATER_URL) == (200, 0)


def test_a_replaced_token_stops_working_at_once(rater):
    old = Token.objects.create(user=rater)
    api = _client(old)
    assert api.get(RATER_URL).status_code == 200
    Token.objects.filter(user=rater).delete()
    Token.objects.create(user=rater)
    assert api.get(RATER_URL).status_code == 401


def test_a_removed_role_and_a_deactivated_user_take_effect_at_once(admin_user, rater):
    admin_user.is_staff = False  # staff are admins whatever their groups: make the group the only admin right
    admin_user.save()
    api = _client(Token.objects.create(user=admin_user))
    assert api.get(ADMIN_URL).status_code == 200
    admin_user.groups.remove(Group.objects.get(name=ADMIN))
    assert api.get(ADMIN_URL).status_code == 403

    rater_api = _client(Token.objects.create(user=rater))
    assert rater_api.get(RATER_URL).status_code == 200
    Group.objects.get(name=RATER).user_set.remove(rater)  # from the group's side too
    assert rater_api.get(RATER_URL).status_code == 403
    rater.groups.add(Group.objects.get(name=RATER))
    assert rater_api.get(RATER_URL).status_code == 200
    rater.is_active = False
    rater.save()
    assert rater_api.get(RATER_URL).status_code == 401


def test_a_cached_user_is_the_same_user_for_the_views(rater):
    api = _client(Token.objects.create(user=rater))
    api.get(RATER_URL)
    me = api.get("/api/rating/me/").json()
    assert me["username"] == rater.username
