"""Throttled log-in, shared by the log-in page and ``/api/token/obtain/``.

Two limits, both counted in the cache (shared by web processes: the file cache, or Redis):

* per address, across usernames: ``ECAST_LOGIN_RATE`` attempts (default 20 a minute). This stops password spraying
  (one password tried against many accounts) from one address.
* per (username, address): ``ECAST_LOGIN_ATTEMPTS`` attempts within ``ECAST_LOGIN_LOCKOUT_SECONDS``; the pair is
  then blocked until the window ends. Counting the pair, not the username alone, stops guessing against one account
  without letting an attacker lock every user out from elsewhere.

An attempt is counted *before* its password is checked and the count is atomic, so parallel requests cannot slip
extra guesses past the limit: at most ``ECAST_LOGIN_ATTEMPTS`` passwords are ever checked for a pair in a window.
The address is :func:`client_ip`: ``X-Forwarded-For`` is trusted only as far as ``ECAST_TRUSTED_PROXIES`` says.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import math
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django import forms
from django.conf import settings
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView
from django.core.cache import DEFAULT_CACHE_ALIAS, cache, caches
from django.core.cache.backends.locmem import LocMemCache
from django.core.cache.backends.memcached import BaseMemcachedCache
from django.core.cache.backends.redis import RedisCache
from django.db import transaction
from django.http import HttpResponse
from rest_framework.authentication import TokenAuthentication

from ecast.core.cache import CACHE_DOWN, cache_down, cache_recently_down

# Caches whose add and incr are atomic: Redis and memcached across processes, locmem (one process) under its lock.
# The file cache (the default without Redis) implements incr as get + set, so there counters are updated under a
# file lock; the file cache lives on one host, and so does the lock.
ATOMIC_COUNTER_CACHES = (RedisCache, BaseMemcachedCache, LocMemCache)
RATE_PERIODS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def _limit() -> int:
    return int(getattr(settings, "ECAST_LOGIN_ATTEMPTS", 10))


def _window() -> int:
    return int(getattr(settings, "ECAST_LOGIN_LOCKOUT_SECONDS", 900))


def login_rate() -> tuple[int, int]:
    """``ECAST_LOGIN_RATE`` ("20/min") as (attempts, seconds); settings checked its shape at start."""
    count, period = str(getattr(settings, "ECAST_LOGIN_RATE", "20/min")).split("/")
    return int(count), RATE_PERIODS[period[0]]


def client_ip(request: Any) -> str:
    """The client's address: REMOTE_ADDR, unless the app runs behind ``ECAST_TRUSTED_PROXIES`` proxies.

    Behind n trusted proxies the client is the n-th address from the right of X-Forwarded-For (each proxy appends
    the address it was reached from; anything further left was sent by the client and may be forged). This is DRF's
    rule with ``NUM_PROXIES``, which settings set from the same variable, so throttles and log-in agree.
    """
    if request is None:
        return "unknown"
    remote = str(request.META.get("REMOTE_ADDR") or "unknown")
    proxies = int(getattr(settings, "ECAST_TRUSTED_PROXIES", 0))
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR")
    if proxies <= 0 or not forwarded:
        return remote
    hops = [hop.strip() for hop in str(forwarded).split(",")]
    return hops[-min(proxies, len(hops))] or remote


def _pair_key(username: str, ip: str) -> str:
    digest = hashlib.sha256(f"{username.strip().lower()}|{ip}".encode()).hexdigest()[:32]
    return f"ecast:login-attempts:{digest}"


def _address_key(ip: str) -> str:
    return f"ecast:login-address:{hashlib.sha256(ip.encode()).hexdigest()[:32]}"


@contextlib.contextmanager
def _counter_lock() -> Iterator[None]:
    """Exclusive across threads and processes on this host (flock on a fresh open file excludes both)."""
    path = Path(settings.VAR_DIR) / "login-counters.lock"
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _count(key: str, window: int, store: Any = None) -> tuple[int, int]:
    """Add one event to ``key``'s window (``window`` s from its first event); returns (count, seconds left).

    The window's start is kept beside the count, so the time left can be told and a window that is over by the clock
    restarts even where the cache has not evicted it yet. ``store`` is the shared cache unless given.
    """
    store = store or caches[DEFAULT_CACHE_ALIAS]
    now = time.time()
    since_key = f"{key}:since"
    if not isinstance(store, ATOMIC_COUNTER_CACHES):
        with _counter_lock():
            since, count = store.get(since_key), store.get(key)
            if since is None or count is None or since + window <= now:
                since, count = now, 0
            left = max(1, math.ceil(since + window - now))
            store.set_many({key: count + 1, since_key: since}, timeout=left)
            return count + 1, left
    since = store.get(since_key)
    if since is not None and since + window <= now:
        store.delete_many([key, since_key])  # only a request at the very end of a window can race this
        since = None
    while True:
        if store.add(key, 1, timeout=window):
            store.set(since_key, now, timeout=window)
            return 1, window
        try:
            count = store.incr(key)
        except ValueError:  # expired between add and incr: start the new window
            continue
        if count == 1:
            # Redis INCR re-created a key that expired after the existence check, without a timeout: give it one.
            store.touch(key, window)
        left = window if since is None else max(1, math.ceil(since + window - now))
        return count, left


# While the shared cache (Redis) is down, attempts are counted in this process's memory: the limits still hold per
# web process, rather than log-in failing altogether or going unlimited.
_LOCAL_COUNTERS = LocMemCache("ecast-login-counters", {"TIMEOUT": None, "OPTIONS": {"MAX_ENTRIES": 100_000}})


def _counted(key: str, window: int) -> tuple[int, int]:
    """:func:`_count` in the shared cache, or in this process's memory while the shared cache is unreachable."""
    if not cache_recently_down():
        try:
            return _count(key, window)
        except CACHE_DOWN as exc:
            cache_down("log-in attempt counting", exc)
    return _count(key, window, _LOCAL_COUNTERS)


def clear_failures(username: str, ip: str) -> None:
    """Forget the attempts of (username, address), after a successful log-in."""
    keys = [_pair_key(username, ip), _pair_key(username, ip) + ":since"]
    _LOCAL_COUNTERS.delete_many(keys)
    try:
        cache.delete_many(keys)
    except CACHE_DOWN as exc:
        cache_down("clearing log-in failures", exc)


def lockout_message(seconds: int) -> str:
    """The message shown to a locked-out user."""
    minutes = max(1, math.ceil(seconds / 60))
    return (
        f"Too many failed log-in attempts for this username from your address. "
        f"Log-in is blocked for {minutes} more minute{'s' if minutes != 1 else ''}."
    )


def address_message(seconds: int) -> str:
    """The message shown when an address made too many log-in attempts, whatever the usernames."""
    return f"Too many log-in attempts from your address. Try again in {seconds} second{'s' if seconds != 1 else ''}."


@dataclass(frozen=True)
class Attempt:
    """One counted log-in attempt: refused before its password is checked, or allowed (perhaps as the last try).

    ``retry_after`` is the seconds until the limit that refused it, or the pair's window, ends.
    """

    refused: str = ""
    retry_after: int = 0
    last: bool = False


def login_attempt(*, username: str, ip: str) -> Attempt:
    """Count an attempt from ``ip`` (all usernames) and for (``username``, ``ip``), before the password is checked."""
    allowed, period = login_rate()
    count, left = _counted(_address_key(ip), period)
    if count > allowed:
        return Attempt(refused=address_message(left), retry_after=left)
    count, left = _counted(_pair_key(username, ip), _window())
    if count > _limit():
        return Attempt(refused=lockout_message(left), retry_after=left)
    return Attempt(retry_after=left, last=count >= _limit())


class ThrottledAuthenticationForm(AuthenticationForm):
    """Django's log-in form; every attempt is counted first and refused while a limit is reached."""

    error_messages = {
        **AuthenticationForm.error_messages,
        "invalid_login": "Your username and password didn't match. Please try again.",
        "locked": "%(message)s",
    }

    locked_out = False
    retry_after = 0

    def _refuse(self, message: str, retry_after: int) -> forms.ValidationError:
        self.locked_out, self.retry_after = True, retry_after
        return forms.ValidationError(self.error_messages["locked"], code="locked", params={"message": message})

    def clean(self) -> dict[str, Any]:
        username = self.cleaned_data.get("username") or ""
        ip = client_ip(self.request)
        attempt = login_attempt(username=username, ip=ip)
        if attempt.refused:
            raise self._refuse(attempt.refused, attempt.retry_after)
        try:
            cleaned = super().clean()
        except forms.ValidationError:
            if attempt.last:
                raise self._refuse(lockout_message(attempt.retry_after), attempt.retry_after) from None
            raise
        # Only a checked, right password clears the count: a post without a password must not reset it.
        if self.get_user() is not None:
            clear_failures(username, ip)
        return cleaned


class ThrottledLoginView(LoginView):
    """The log-in page; answers 429 (with Retry-After) while a limit is reached."""

    form_class = ThrottledAuthenticationForm
    template_name = "registration/login.html"

    def form_invalid(self, form: Any) -> HttpResponse:
        response = super().form_invalid(form)
        if getattr(form, "locked_out", False):
            response.status_code = 429
            response["Retry-After"] = str(form.retry_after)
        return response


# --- API token look-ups, cached ---------------------------------------------------------------------------------
#
# Every API call used to cost two queries before any work: the token with its user, then the user's roles. Both are
# kept in the shared cache for TOKEN_CACHE_SECONDS and dropped the moment they change (a token replaced or deleted,
# a user's groups, flags or password saved), so a revoked token or role never outlives its change on any process.

TOKEN_CACHE_SECONDS = 300


def token_cache_key(key: str) -> str:
    return "ecast:api-token:" + hashlib.sha256(key.encode()).hexdigest()[:40]


def token_cache_forget(*, user_ids: Any = (), keys: Any = ()) -> None:
    """Drop cached token look-ups: the given tokens, and every token of the given users."""
    from rest_framework.authtoken.models import Token

    found = list(keys)
    ids = [int(u) for u in user_ids if u is not None]
    if ids:
        found += list(Token.objects.filter(user_id__in=ids).values_list("key", flat=True))
    if found:
        keys_to_drop = [token_cache_key(k) for k in found]
        cache.delete_many(keys_to_drop)
        # Again once the change is committed: a request that read the old rows in between may have cached them.
        transaction.on_commit(lambda: cache.delete_many(keys_to_drop))


class CachedTokenAuthentication(TokenAuthentication):
    """DRF's token authentication with the token → user → roles look-up served from the shared cache."""

    def authenticate_credentials(self, key: str) -> tuple[Any, Any]:
        from django.contrib.auth import get_user_model

        from ecast.core.permissions import user_roles

        # While the cache is down the look-up comes from the database, as on a miss; only the speed-up is lost.
        hit = None
        if not cache_recently_down():
            try:
                hit = cache.get(token_cache_key(key))
            except CACHE_DOWN as exc:
                cache_down("API token look-up", exc)
        if hit is not None:
            user = get_user_model()(
                id=hit["id"],
                username=hit["username"],
                is_active=True,
                is_staff=hit["is_staff"],
                is_superuser=hit["is_superuser"],
            )
            user._state.adding = False
            user._state.db = "default"
            user._ecast_roles = set(hit["roles"])  # type: ignore[attr-defined]  # read by permissions.user_roles
            return user, key
        user, token = super().authenticate_credentials(key)
        entry = {
            "id": user.pk,
            "username": user.get_username(),
            "is_staff": user.is_staff,
            "is_superuser": user.is_superuser,
            "roles": sorted(user_roles(user)),
        }
        if not cache_recently_down():
            try:
                cache.set(token_cache_key(key), entry, TOKEN_CACHE_SECONDS)
            except CACHE_DOWN as exc:
                cache_down("API token look-up", exc)
        return user, token
