"""What every REST endpoint shares: the admin base view and the one exception handler.

``REST_FRAMEWORK["EXCEPTION_HANDLER"]`` points at :func:`exception_handler`, so an ``APIView`` simply calls its
service and lets Django ``ValidationError`` and :class:`ecast.errors.DomainError` propagate.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ObjectDoesNotExist
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404
from rest_framework.authentication import SessionAuthentication, TokenAuthentication
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView
from rest_framework.views import exception_handler as drf_exception_handler

from ecast.errors import DomainError
from ecast.permissions import IsAdmin

# Token first, so an anonymous request gets 401 with a WWW-Authenticate header rather than 403.
AUTHENTICATION = [TokenAuthentication, SessionAuthentication]


class AdminApi(APIView):
    """Base of the admin-only endpoints (token or session); generic views list it first: ``(AdminApi, ListAPIView)``."""

    authentication_classes = AUTHENTICATION
    permission_classes = [IsAuthenticated, IsAdmin]


def validation_payload(exc: DjangoValidationError) -> dict[str, Any]:
    """``{"detail": "all messages; joined"}`` plus one list of messages per field when the error names fields."""
    if hasattr(exc, "error_dict"):
        fields = {field: [str(m) for e in errors for m in e.messages] for field, errors in exc.error_dict.items()}
        joined = "; ".join(
            m if field == "__all__" else f"{field}: {m}" for field, messages in fields.items() for m in messages
        )
        return {"detail": joined, **fields}
    return {"detail": "; ".join(exc.messages)}


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's handler, plus Django ``ValidationError`` → 400, domain errors → their status, missing rows → 404."""
    if isinstance(exc, DjangoValidationError):
        return Response(validation_payload(exc), status=400)
    if isinstance(exc, DomainError):
        return Response(exc.payload(), status=exc.status_code)
    if isinstance(exc, ObjectDoesNotExist):
        exc = Http404(str(exc))
    return drf_exception_handler(exc, context)
