"""Throttled log-in: lock-out per username + address, clear message, CSRF on, hashed passwords, session expiry."""

import pytest
from django.conf import settings as django_settings
from django.contrib.auth.models import User
from django.test import Client

from ecast.auth import clear_failures

IPS = ["10.0.0.1", "10.0.0.2", "127.0.0.1"]


@pytest.fixture(autouse=True)
def _forget_failures():
    """The cache outlives a test (locmem, or Redis in CI): never leak a lock-out into another test."""

    def clear():
        for username in ("rater1", "rater2"):
            for ip in IPS:
                clear_failures(username, ip)

    clear()
    yield
    clear()


@pytest.fixture
def limited(settings):
    settings.ECAST_LOGIN_ATTEMPTS = 3
    settings.ECAST_LOGIN_LOCKOUT_SECONDS = 600
    return settings


def _login(client, password, username="rater1", ip="10.0.0.1"):
    return client.post("/accounts/login/", {"username": username, "password": password}, REMOTE_ADDR=ip)


def test_it_locks_out_a_username_and_address_after_too_many_failures(client, rater, limited):
    for _ in range(2):
        assert _login(client, "wrong").status_code == 200
    third = _login(client, "wrong")
    assert third.status_code == 429
    assert b"Too many failed log-in attempts" in third.content
    # even the right password is refused while locked out, with the same clear message
    locked = _login(client, "pass-rater1")
    assert locked.status_code == 429 and b"blocked for 10 more minutes" in locked.content
    assert "_auth_user_id" not in client.session


def test_the_lockout_does_not_spread_to_other_addresses_or_users(client, rater, other_rater, limited):
    for _ in range(3):
        _login(client, "wrong")
    assert _login(Client(), "pass-rater1", ip="10.0.0.2").status_code == 302
    assert _login(Client(), "pass-rater2", username="rater2").status_code == 302


def test_a_successful_login_clears_earlier_failures(client, rater, limited):
    _login(client, "wrong")
    _login(client, "wrong")
    assert _login(client, "pass-rater1").status_code == 302
    fresh = Client()
    _login(fresh, "wrong")
    _login(fresh, "wrong")
    assert _login(fresh, "pass-rater1").status_code == 302


def test_the_lockout_ends_after_the_window(client, rater, limited, monkeypatch):
    import time

    for _ in range(3):
        _login(client, "wrong")
    now = time.time()
    monkeypatch.setattr(time, "time", lambda: now + 601)
    assert _login(client, "pass-rater1").status_code == 302


def test_the_login_form_requires_a_csrf_token(rater):
    strict = Client(enforce_csrf_checks=True)
    response = strict.post("/accounts/login/", {"username": "rater1", "password": "pass-rater1"})
    assert response.status_code == 403


@pytest.mark.django_db
def test_passwords_are_stored_hashed():
    user = User.objects.create_user("someone", password="a secret phrase")
    assert "a secret phrase" not in user.password and user.check_password("a secret phrase")


def test_sessions_expire():
    assert 0 < django_settings.SESSION_COOKIE_AGE <= 24 * 3600
    assert django_settings.SESSION_COOKIE_HTTPONLY
