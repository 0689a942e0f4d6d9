"""Browser-only middleware that steps aside for token-authenticated API calls, and the guard on request bodies.

A call to ``/api/`` with an ``Authorization: Token …`` header is authenticated by DRF from that header alone: it has no
session to load and no messages to show, so on that path these middlewares cost CPU on every call and do nothing.
Session-authenticated API calls (the browsable API, the Swagger page) and every page still get them. Django's own
CSRF middleware stays in place for everyone: DRF's views are exempt from it (``SessionAuthentication`` checks CSRF
itself), so it costs an API call next to nothing, and ``check --deploy`` looks for Django's class by name.

:class:`RequestBodyLimitMiddleware` refuses a body too large for its sender from its declared length, before the
CSRF middleware or a view reads it; :class:`NulByteMiddleware` refuses a NUL byte in the address or a query parameter
(PostgreSQL cannot compare text with one) with 400 naming the parameter.
"""

from __future__ import annotations

from collections.abc import Callable
from http import HTTPStatus
from typing import Any

from django.conf import settings
from django.contrib.auth.middleware import AuthenticationMiddleware as DjangoAuthenticationMiddleware
from django.contrib.messages.middleware import MessageMiddleware as DjangoMessageMiddleware
from django.contrib.sessions.middleware import SessionMiddleware as DjangoSessionMiddleware
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.html import escape

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


# --- request bodies: refused by their declared size before anything reads them --------------------------------------
#
# Django's CSRF middleware reads request.POST, and so the whole body (a multipart upload goes to a temporary file),
# before any view runs, whoever sends it: a view's own size check came too late. This middleware runs before
# everything that reads a body and answers 413 from Content-Length alone.

# The multipart envelope and the other form fields beside an upload of ECAST_MAX_UPLOAD_BYTES.
UPLOAD_ENVELOPE_BYTES = 64 * 1024


def refusal_response(
    request: HttpRequest, *, status: int, code: str, message: str, fields: dict[str, Any] | None = None
) -> HttpResponse:
    """A refusal answered outside a view: the API's JSON error shape under ``/api/`` (``fields`` beside ``detail``
    and ``code``, as a validation error names its fields), a short page elsewhere."""
    if request.path_info.startswith(API_PREFIX):
        return JsonResponse({**(fields or {}), "detail": message, "code": code}, status=status)
    title = HTTPStatus(status).phrase
    page = f"<!doctype html>\n<title>{title}</title>\n<h1>{title}</h1>\n<p>{escape(message)}</p>\n"
    return HttpResponse(page, status=status, content_type="text/html; charset=utf-8")


def declared_length(request: HttpRequest) -> int | None:
    """The body size the client announced (Content-Length), or None when it announced none."""
    raw = request.META.get("CONTENT_LENGTH")
    if raw in (None, ""):
        return None
    try:
        return max(0, int(raw))
    except ValueError:
        return None  # Django reads such a body as empty


def _caller_is_admin(request: HttpRequest) -> bool:
    """Whether the caller is an admin, found from the token or the session without reading the body."""
    from django.contrib.auth import get_user
    from rest_framework.exceptions import AuthenticationFailed

    from ecast.core.auth import CachedTokenAuthentication
    from ecast.core.permissions import is_admin

    if is_token_api_call(request):
        try:
            found = CachedTokenAuthentication().authenticate(request)  # type: ignore[arg-type]  # reads META only
        except AuthenticationFailed:
            return False
        return found is not None and is_admin(found[0])
    if not hasattr(request, "session"):
        return False
    user = get_user(request)
    request._cached_user = user  # type: ignore[attr-defined]  # AuthenticationMiddleware reuses it: one look-up
    return is_admin(user)


def body_refusal(request: HttpRequest) -> HttpResponse | None:
    """413 for a body over the upload limit (anyone) or over the form limit (anyone but an admin); 411 for a body
    of unknown length. Decided from the headers (and the caller's session or token), before the body is read."""
    size = declared_length(request)
    if size is None:
        if "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower():
            # Django reads exactly Content-Length bytes, so such a body would silently arrive empty.
            return refusal_response(
                request, status=411, code="length_required", message="Send the request body with a Content-Length."
            )
        return None
    upload_limit = int(settings.ECAST_MAX_UPLOAD_BYTES)
    if size > upload_limit + UPLOAD_ENVELOPE_BYTES:
        return refusal_response(
            request,
            status=413,
            code="too_large",
            message=f"upload is {size:,} bytes; the upload limit (ECAST_MAX_UPLOAD_BYTES) is {upload_limit:,} bytes",
        )
    form_limit = int(settings.ECAST_MAX_FORM_BYTES)
    if size > form_limit and not _caller_is_admin(request):
        return refusal_response(
            request,
            status=413,
            code="too_large",
            message=f"request body is {size:,} bytes; only admins may send more than {form_limit:,} bytes "
            "(ECAST_MAX_FORM_BYTES)",
        )
    return None


class RequestBodyLimitMiddleware:
    """Refuses oversized request bodies from their declared length, before CSRF or a view reads them.

    Listed right after the session middleware (which reads a cookie, never the body), so it can tell an admin's
    upload from anyone else's post without reading either.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return body_refusal(request) or self.get_response(request)


# --- NUL bytes in the address: no view can use one ------------------------------------------------------------------


def nul_refusal(request: HttpRequest) -> HttpResponse | None:
    """400 naming the query parameter (or the path) that holds a NUL byte, which PostgreSQL text cannot hold."""
    if "\x00" in request.path_info:
        return refusal_response(request, status=400, code="invalid", message="the path contains a NUL byte")
    if "\x00" not in request.META.get("QUERY_STRING", "") and "%00" not in request.META.get("QUERY_STRING", ""):
        return None
    for name, values in request.GET.lists():
        if "\x00" in name or any("\x00" in value for value in values):
            shown = name.replace("\x00", "\\x00")
            message = f"query parameter {shown!r} contains a NUL byte"
            return refusal_response(request, status=400, code="invalid", message=message, fields={shown: [message]})
    return None


class NulByteMiddleware:
    """Refuses a NUL byte in the path or a query parameter with 400, before any view passes it to the database."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return nul_refusal(request) or self.get_response(request)
