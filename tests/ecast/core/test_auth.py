"""Throttled log-in: lock-out per username + address, a limit per address, trusted proxies only, atomic counts."""

import secrets
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.conf import settings as django_settings
from django.contrib.auth.models import User
from django.contrib.auth.signals import user_login_failed
from django.db import connection
from django.test import Client, RequestFactory
from rest_framework.test import APIClient

from ecast.core.auth import clear_failures, client_ip

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


# ---------------------------------------------------------------- per-address limit and forwarded addresses


@pytest.fixture
def address():
    """A fresh client address per test: the per-address count outlives a test in a shared cache (Redis in CI)."""
    return "10.{}.{}.{}".format(*secrets.token_bytes(3))


@pytest.fixture
def real_rate(settings):
    settings.ECAST_LOGIN_RATE = "20/min"  # the production default; tests/settings.py raises it for other tests
    settings.ECAST_LOGIN_ATTEMPTS = 10
    return settings


def _first_refusal(responses) -> int | None:
    """The 1-based number of the first 429 among ``responses``, or None."""
    return next((n for n, r in enumerate(responses, start=1) if r.status_code == 429), None)


def test_a_forged_x_forwarded_for_does_not_escape_the_per_address_limit(db, real_rate, address):
    api = APIClient()
    responses = [
        api.post(
            "/api/token/obtain/",
            {"username": f"user{n}", "password": "guess"},
            format="json",
            REMOTE_ADDR=address,
            HTTP_X_FORWARDED_FOR=f"203.0.113.{n}",
        )
        for n in range(40)
    ]
    assert _first_refusal(responses) == 21
    assert {r.status_code for r in responses[:20]} == {400}
    assert {r.status_code for r in responses[20:]} == {429}
    assert "from your address" in responses[20].json()["detail"] and int(responses[20]["Retry-After"]) > 0


@pytest.mark.parametrize(
    ("proxies", "forwarded", "expected"),
    [
        (0, "198.51.100.7", "10.1.1.1"),  # no trusted proxy: the header is the client's word, ignored
        (1, "198.51.100.7", "198.51.100.7"),
        (1, "203.0.113.66, 198.51.100.7", "198.51.100.7"),  # the left part was sent by the client: ignored
        (2, "203.0.113.66, 198.51.100.7, 192.0.2.1", "198.51.100.7"),
        (2, "198.51.100.7", "198.51.100.7"),  # fewer hops than proxies: the leftmost one
        (1, None, "10.1.1.1"),
    ],
)
def test_the_client_address_trusts_x_forwarded_for_only_as_far_as_configured(settings, proxies, forwarded, expected):
    settings.ECAST_TRUSTED_PROXIES = proxies
    request = RequestFactory().get("/", REMOTE_ADDR="10.1.1.1")
    if forwarded is not None:
        request.META["HTTP_X_FORWARDED_FOR"] = forwarded
    assert client_ip(request) == expected


def test_drf_throttles_use_the_same_trusted_proxy_count():
    from rest_framework.settings import api_settings

    assert api_settings.NUM_PROXIES == django_settings.ECAST_TRUSTED_PROXIES == 0


def test_behind_a_trusted_proxy_a_client_cannot_rotate_its_way_past_the_limit(db, real_rate, address):
    real_rate.ECAST_TRUSTED_PROXIES = 1
    api = APIClient()
    responses = [
        api.post(
            "/api/token/obtain/",
            {"username": f"user{n}", "password": "guess"},
            format="json",
            REMOTE_ADDR="10.255.0.1",  # the proxy
            HTTP_X_FORWARDED_FOR=f"203.0.113.{n}, {address}",  # forged part, then what the proxy saw
        )
        for n in range(25)
    ]
    assert _first_refusal(responses) == 21


def test_one_address_cannot_spray_many_usernames_on_the_login_page(db, real_rate, address):
    responses = [_login(Client(), "Winter2024!", username=f"user{n}", ip=address) for n in range(25)]
    assert _first_refusal(responses) == 21
    assert {r.status_code for r in responses[:20]} == {200}
    assert b"Too many log-in attempts from your address" in responses[20].content
    assert int(responses[20]["Retry-After"]) > 0


def test_the_login_page_and_the_token_endpoint_share_one_count_per_address(db, real_rate, address):
    for n in range(10):
        assert _login(Client(), "guess", username=f"user{n}", ip=address).status_code == 200
    api = APIClient()
    for n in range(10):
        body = {"username": f"api{n}", "password": "guess"}
        assert api.post("/api/token/obtain/", body, format="json", REMOTE_ADDR=address).status_code == 400
    assert _login(Client(), "guess", username="one-more", ip=address).status_code == 429
    body = {"username": "another", "password": "guess"}
    assert api.post("/api/token/obtain/", body, format="json", REMOTE_ADDR=address).status_code == 429


def test_an_empty_password_does_not_reset_the_count(client, rater, limited):
    _login(client, "wrong")
    _login(client, "wrong")
    assert _login(client, "").status_code in (200, 429)
    assert _login(client, "pass-rater1").status_code == 429


# ---------------------------------------------------------------- parallel attempts


def _parallel_wrong_logins(n: int, ip: str) -> tuple[list[int], int]:
    """``n`` wrong log-ins for one username from one address, released at once; (statuses, passwords checked)."""
    checked = []
    barrier = threading.Barrier(n)

    def count_check(**_kwargs):
        checked.append(1)

    def one() -> int:
        try:
            barrier.wait()
            return _login(Client(), "wrong", username="rater1", ip=ip).status_code
        finally:
            connection.close()

    user_login_failed.connect(count_check)
    try:
        with ThreadPoolExecutor(max_workers=n) as pool:
            statuses = list(pool.map(lambda _: one(), range(n)))
    finally:
        user_login_failed.disconnect(count_check)
    return statuses, len(checked)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("cache_kind", ["configured", "file"])
def test_parallel_wrong_logins_cannot_exceed_the_limit(rater, real_rate, address, cache_kind, tmp_path):
    if cache_kind == "file":  # what `make run` uses without Redis: its incr is get + set, so ecast locks
        real_rate.CACHES = {
            "default": {
                "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
                "LOCATION": str(tmp_path / "cache"),
            }
        }
    statuses, checked = _parallel_wrong_logins(40, address)
    # Attempts 1-9 are told the password is wrong, the 10th locks the pair out, the other 30 are refused unchecked.
    assert statuses.count(200) == 9 and statuses.count(429) == 31
    assert checked == 10
