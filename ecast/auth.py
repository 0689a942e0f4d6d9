"""Throttled log-in: after ECAST_LOGIN_ATTEMPTS failures for one username from one address, refuse for a while.

Counting per (username, IP) stops password guessing against one account without letting an attacker lock every
user out from elsewhere. The counter lives in the cache (shared by web processes: file cache or Redis).
"""

from __future__ import annotations

import hashlib
import math
import time
from typing import Any

from django import forms
from django.conf import settings
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse


def _limit() -> int:
    return int(getattr(settings, "ECAST_LOGIN_ATTEMPTS", 10))


def _window() -> int:
    return int(getattr(settings, "ECAST_LOGIN_LOCKOUT_SECONDS", 900))


def client_ip(request: HttpRequest | None) -> str:
    """The client address (REMOTE_ADDR; proxies must set it, we do not trust X-Forwarded-For blindly)."""
    if request is None:
        return "unknown"
    return str(request.META.get("REMOTE_ADDR") or "unknown")


def _key(username: str, ip: str) -> str:
    digest = hashlib.sha256(f"{username.strip().lower()}|{ip}".encode()).hexdigest()[:32]
    return f"ecast:login-failures:{digest}"


def lockout_remaining(username: str, ip: str) -> int:
    """Seconds until this (username, address) may try again; 0 when not locked out."""
    state = cache.get(_key(username, ip))
    if not state:
        return 0
    count, first = state
    remaining = int(math.ceil(first + _window() - time.time()))
    if count >= _limit() and remaining > 0:
        return remaining
    return 0


def register_failure(username: str, ip: str) -> int:
    """Count one failed attempt within the window; returns the number of failures so far."""
    key = _key(username, ip)
    now = time.time()
    state = cache.get(key)
    if not state or state[1] + _window() <= now:
        state = (0, now)
    count = state[0] + 1
    cache.set(key, (count, state[1]), timeout=max(1, int(state[1] + _window() - now)))
    return count


def clear_failures(username: str, ip: str) -> None:
    """Forget failures after a successful log-in."""
    cache.delete(_key(username, ip))


def lockout_message(seconds: int) -> str:
    """The message shown to a locked-out user."""
    minutes = max(1, math.ceil(seconds / 60))
    return (
        f"Too many failed log-in attempts for this username from your address. "
        f"Log-in is blocked for {minutes} more minute{'s' if minutes != 1 else ''}."
    )


class ThrottledAuthenticationForm(AuthenticationForm):
    """Django's log-in form, refusing early while the (username, IP) pair is locked out."""

    error_messages = {
        **AuthenticationForm.error_messages,
        "invalid_login": "Your username and password didn't match. Please try again.",
        "locked": "%(message)s",
    }

    locked_out = False

    def clean(self) -> dict[str, Any]:
        username = self.cleaned_data.get("username") or ""
        ip = client_ip(self.request)
        remaining = lockout_remaining(username, ip)
        if remaining:
            self.locked_out = True
            raise forms.ValidationError(
                self.error_messages["locked"], code="locked", params={"message": lockout_message(remaining)}
            )
        try:
            cleaned = super().clean()
        except forms.ValidationError:
            failures = register_failure(username, ip)
            left = _limit() - failures
            if left <= 0:
                self.locked_out = True
                raise forms.ValidationError(
                    self.error_messages["locked"],
                    code="locked",
                    params={"message": lockout_message(_window())},
                ) from None
            raise
        clear_failures(username, ip)
        return cleaned


class ThrottledLoginView(LoginView):
    """The log-in page; answers 429 while locked out."""

    form_class = ThrottledAuthenticationForm
    template_name = "registration/login.html"

    def form_invalid(self, form: Any) -> HttpResponse:
        response = super().form_invalid(form)
        if getattr(form, "locked_out", False):
            response.status_code = 429
        return response
