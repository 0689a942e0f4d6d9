"""Browser-only middleware that steps aside for token-authenticated API calls.

A call to ``/api/`` with an ``Authorization: Token …`` header is authenticated by DRF from that header alone: it has no
session to load and no messages to show, so on that path these middlewares cost CPU on every call and do nothing.
Session-authenticated API calls (the browsable API, the Swagger page) and every page still get them. Django's own
CSRF middleware stays in place for everyone: DRF's views are exempt from it (``SessionAuthentication`` checks CSRF
itself), so it costs an API call next to nothing, and ``check --deploy`` looks for Django's class by name.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.middleware import AuthenticationMiddleware as DjangoAuthenticationMiddleware
from django.contrib.messages.middleware import MessageMiddleware as DjangoMessageMiddleware
from django.contrib.sessions.middleware import SessionMiddleware as DjangoSessionMiddleware
from django.http import HttpRequest

API_PREFIX = "/api/"


def is_token_api_call(request: HttpRequest) -> bool:
    """A call to the REST API that carries a token (DRF reads the keyword case-insensitively; so does this)."""
    return request.path_info.startswith(API_PREFIX) and request.META.get("HTTP_AUTHORIZATION", "")[:6].lower() == (
        "token "
    )


class SkippedForTokenApiCalls:
    """Mixin for a ``MiddlewareMixin`` middleware: token-authenticated API calls pass straight through."""

    get_response: Any

    def __call__(self, request: HttpRequest) -> Any:
        if is_token_api_call(request):
            return self.get_response(request)
        return super().__call__(request)  # type: ignore[misc]  # the middleware class mixed in after this one


class SessionMiddleware(SkippedForTokenApiCalls, DjangoSessionMiddleware):
    pass


class AuthenticationMiddleware(SkippedForTokenApiCalls, DjangoAuthenticationMiddleware):
    pass


class MessageMiddleware(SkippedForTokenApiCalls, DjangoMessageMiddleware):
    pass
