"""Roles: admin (staff or group "admin"), rater, assessor. Composable for DRF views and page views."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.views.defaults import permission_denied
from rest_framework.permissions import BasePermission

ADMIN, RATER, ASSESSOR = "admin", "rater", "assessor"
ROLES = (ADMIN, RATER, ASSESSOR)


def user_roles(user: Any) -> set[str]:
    """The set of roles a user holds; staff and superusers are always admins."""
    if not getattr(user, "is_authenticated", False):
        return set()
    cached = getattr(user, "_ecast_roles", None)
    if cached is None:
        cached = set(user.groups.filter(name__in=ROLES).values_list("name", flat=True))
        if user.is_staff or user.is_superuser:
            cached.add(ADMIN)
        user._ecast_roles = cached
    return cached


def is_admin(user: Any) -> bool:
    return ADMIN in user_roles(user)


def is_rater(user: Any) -> bool:
    return RATER in user_roles(user)


def is_assessor(user: Any) -> bool:
    return ASSESSOR in user_roles(user)


class IsAdmin(BasePermission):
    message = "Only admins may do this."

    def has_permission(self, request: Any, view: Any) -> bool:
        return is_admin(request.user)


class IsRater(BasePermission):
    message = "Only raters may do this."

    def has_permission(self, request: Any, view: Any) -> bool:
        return is_rater(request.user)


class IsAssessor(BasePermission):
    message = "Only assessors may do this."

    def has_permission(self, request: Any, view: Any) -> bool:
        return is_assessor(request.user)


class IsAssessorOrAdmin(BasePermission):
    """Assessors and admins (judging and adjudication); raters are refused."""

    message = "Only assessors and admins may do this."

    def has_permission(self, request: Any, view: Any) -> bool:
        return is_assessor(request.user) or is_admin(request.user)


def role_required(*roles: str) -> Callable[[Callable[..., HttpResponseBase]], Callable[..., HttpResponseBase]]:
    """Page-view decorator: login required, then 403 unless the user holds one of ``roles``."""

    def decorator(view: Callable[..., HttpResponseBase]) -> Callable[..., HttpResponseBase]:
        @login_required
        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
            if not user_roles(request.user) & set(roles):
                # Answered here rather than raised: Django logs a raised PermissionDenied with its traceback, and
                # a rater following an admin link is an expected refusal. The page is templates/403.html.
                return permission_denied(request, PermissionDenied("Your role does not give access to this page."))
            return view(request, *args, **kwargs)

        return wrapped

    return decorator


admin_required = role_required(ADMIN)


def role_context(request: HttpRequest) -> dict[str, Any]:
    """Template context: which navigation a user sees."""
    roles = user_roles(request.user)
    return {"is_admin": ADMIN in roles, "is_rater": RATER in roles, "is_assessor": ASSESSOR in roles}
