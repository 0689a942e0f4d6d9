"""Shared fixtures: role users, API clients, a small collection, and the path to ../shared/data."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from ecast.permissions import ADMIN, ASSESSOR, RATER
from tests import factories

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("ECAST_SHARED_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real public data beside the checkout; CI always has it, so its absence is a failure there."""
    if not SHARED_DATA.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"shared data not found at {SHARED_DATA}")
        pytest.skip(f"shared data not found at {SHARED_DATA}")
    return SHARED_DATA


def _user(username: str, role: str | None, *, staff: bool = False) -> User:
    user = User.objects.create_user(username=username, password="pass-" + username, is_staff=staff)
    if role:
        group, _ = Group.objects.get_or_create(name=role)
        user.groups.add(group)
    return user


@pytest.fixture
def admin_user(db) -> User:
    return _user("admin1", ADMIN, staff=True)


@pytest.fixture
def rater(db) -> User:
    return _user("rater1", RATER)


@pytest.fixture
def other_rater(db) -> User:
    return _user("rater2", RATER)


@pytest.fixture
def assessor(db) -> User:
    return _user("assessor1", ASSESSOR)


def _api_client(user: User | None) -> APIClient:
    client = APIClient()
    if user is not None:
        token, _ = Token.objects.get_or_create(user=user)
        client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


@pytest.fixture
def admin_api(admin_user) -> APIClient:
    return _api_client(admin_user)


@pytest.fixture
def rater_api(rater) -> APIClient:
    return _api_client(rater)


@pytest.fixture
def assessor_api(assessor) -> APIClient:
    return _api_client(assessor)


@pytest.fixture
def anon_api() -> APIClient:
    return _api_client(None)


@pytest.fixture
def admin_client(client, admin_user):
    client.force_login(admin_user)
    return client


@pytest.fixture
def rater_client(client, rater):
    client.force_login(rater)
    return client


@pytest.fixture
def assessor_client(client, assessor):
    client.force_login(assessor)
    return client


@pytest.fixture
def small_collection(db):
    """Two conversations of three turns each, with manual rewrites, as a compact, hand-checkable collection."""
    return factories.collection_with_turns(
        name="Mini",
        year=2020,
        conversations={
            "1": ["What is throat cancer?", "Is it treatable?", "What causes it?"],
            "2": ["Tell me about bees.", "Why are they dying?", "How to help?"],
        },
    )
