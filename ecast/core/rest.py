"""What every REST endpoint shares: the admin base view, the one exception handler, and the job health fields.

``REST_FRAMEWORK["EXCEPTION_HANDLER"]`` points at :func:`exception_handler`, so an ``APIView`` simply calls its
service and lets Django ``ValidationError`` and :class:`ecast.core.errors.DomainError` propagate. What that handler
leaves to Django (an unexpected exception, a ``SuspiciousOperation``) reaches the root URLconf's error handlers,
which answer in the same JSON shape under ``/api/`` (:func:`server_error` and its siblings).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from django.core.exceptions import BadRequest, ObjectDoesNotExist
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views import defaults
from rest_framework import serializers
from rest_framework.authentication import SessionAuthentication
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView
from rest_framework.views import exception_handler as drf_exception_handler

from ecast.core.auth import CachedTokenAuthentication
from ecast.core.cache import CACHE_DOWN, cache_down
from ecast.core.errors import DomainError
from ecast.core.jobs import job_health, jobs_health
from ecast.core.middleware import API_PREFIX, refusal_response
from ecast.core.permissions import IsAdmin
from ecast.models import JobRecovery

# Token first, so an anonymous request gets 401 with a WWW-Authenticate header rather than 403.
AUTHENTICATION = [CachedTokenAuthentication, SessionAuthentication]


class AdminApi(APIView):
    """Base of the admin-only endpoints (token or session); generic views list it first: ``(AdminApi, ListAPIView)``."""

    authentication_classes = AUTHENTICATION
    permission_classes = [IsAuthenticated, IsAdmin]


@functools.cache
def _built(serializer_class: type[serializers.Serializer]) -> serializers.Serializer:
    return serializer_class()


def render(serializer_class: type[serializers.Serializer], instance: Any) -> Any:
    """What ``serializer_class(instance).data`` gives, from one instance of the serializer built per process.

    Building a serializer deep-copies all its declared fields, nested serializers' included; on the rater's hot
    endpoints that copying was a sixth of the web process's CPU. Rendering and validating read the fields and keep
    nothing on the serializer, so one instance serves every thread; a serializer that needs a context (a request
    for URLs, say) is not for this."""
    return _built(serializer_class).to_representation(instance)


def validated(serializer_class: type[serializers.Serializer], data: Any) -> Any:
    """``serializer_class(data=data)``'s validated data, from the one built instance (see ``render``); invalid data
    raises the ``ValidationError`` that ``is_valid(raise_exception=True)`` raises, with its messages."""
    try:
        return _built(serializer_class).run_validation(data)
    except ValidationError:
        # Rare, and is_valid words some errors its own way (no data at all, say): a serializer of its own says it.
        serializer_class(data=data).is_valid(raise_exception=True)
        raise


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
    """DRF's handler, plus Django ``ValidationError`` → 400, domain errors → their status, missing rows → 404, Redis
    unreachable → 503."""
    if isinstance(exc, DjangoValidationError):
        return Response(validation_payload(exc), status=400)
    if isinstance(exc, DomainError):
        return Response(exc.payload(), status=exc.status_code)
    if isinstance(exc, ObjectDoesNotExist):
        exc = Http404(str(exc))
    if isinstance(exc, CACHE_DOWN):
        # What cannot go on without Redis (dropping a revoked token's cached look-up) says so, as a 503.
        cache_down("an API call that needs it", exc)
        detail = "The cache (Redis) is unavailable; try again in a minute."
        return Response({"detail": detail, "code": "unavailable"}, status=503, headers={"Retry-After": "60"})
    return drf_exception_handler(exc, context)


# --- Django's error handlers (ecast.urls): JSON under /api/, Django's pages elsewhere -------------------------------


def _is_api(request: HttpRequest) -> bool:
    return request.path_info.startswith(API_PREFIX)


def server_error(request: HttpRequest) -> HttpResponse:
    """500: ``{"detail", "code": "server_error"}`` under ``/api/`` (Django has logged the traceback already)."""
    if _is_api(request):
        return JsonResponse({"detail": "Server error: the failure is logged.", "code": "server_error"}, status=500)
    return defaults.server_error(request)


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """400: a ``BadRequest`` a view raised (a bad query parameter, ``ecast.core.pages.query_id``) shows its message;
    what Django refuses itself (a ``SuspiciousOperation``: a bad Host, too many form fields…) does not."""
    if isinstance(exception, BadRequest):
        return refusal_response(request, status=400, code="invalid", message=str(exception))
    if _is_api(request):
        return JsonResponse({"detail": "Bad request.", "code": "invalid"}, status=400)
    return defaults.bad_request(request, exception)


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    """403 raised outside a DRF view."""
    if _is_api(request):
        detail = str(exception) or "You do not have permission to perform this action."
        return JsonResponse({"detail": detail, "code": "permission_denied"}, status=403)
    return defaults.permission_denied(request, exception)


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """404 raised outside a DRF view (unknown ``/api/`` paths have their own JSON view)."""
    if _is_api(request):
        return JsonResponse({"detail": "Not found.", "code": "not_found"}, status=404)
    return defaults.page_not_found(request, exception)


# --- job health: last heartbeat and retries after worker loss ------------------------------------------------------


class JobRecoveryOutput(serializers.Serializer):
    """One time the sweeper (or the broker's redelivery) recovered a job whose worker died."""

    at = serializers.DateTimeField()
    reason = serializers.ChoiceField(choices=JobRecovery.Reason.choices)
    label = serializers.CharField()  # type: ignore[assignment]  # the output field, not Field.label
    detail = serializers.CharField(allow_blank=True)
    last_heartbeat = serializers.DateTimeField(allow_null=True, help_text="the job's last heartbeat at that time")


class JobHealthOutput(serializers.Serializer):
    """What a job's page and API say about worker loss (the fields :class:`JobHealthFields` adds)."""

    last_heartbeat = serializers.DateTimeField(allow_null=True)
    worker_loss_retries = serializers.IntegerField()
    recoveries = JobRecoveryOutput(many=True)


JOB_HEALTH_FIELDS = ["last_heartbeat", "worker_loss_retries", "recoveries"]


def job_health_data(kind: str, job_id: int) -> dict[str, Any]:
    """The JSON-ready health of one job, for the JSON a job page polls (same shape as the API fields)."""
    return dict(JobHealthOutput(job_health(kind, job_id)).data)


def _job_id(instance: Any) -> int:
    return int(instance["id"] if isinstance(instance, Mapping) else instance.pk)


def _health_value(field: serializers.Field, instance: Any) -> Any:
    parent = field.parent
    if not isinstance(parent, JobHealthFields):
        raise TypeError(f"{type(field).__name__} belongs on a JobHealthFields serializer")
    return parent.job_health_of(instance)[str(field.field_name)]


class _HeartbeatField(serializers.DateTimeField):
    def get_attribute(self, instance: Any) -> Any:
        return _health_value(self, instance)


class _RetriesField(serializers.IntegerField):
    def get_attribute(self, instance: Any) -> Any:
        return _health_value(self, instance)


class _RecoveriesField(serializers.ListField):
    def get_attribute(self, instance: Any) -> Any:
        return _health_value(self, instance)


class JobHealthFields(serializers.Serializer):
    """Adds ``last_heartbeat``, ``worker_loss_retries`` and ``recoveries`` to a job's output.

    Mix in first and set ``job_kind`` (the :mod:`ecast.core.jobs` kind), or override :meth:`job_kind_of`; a model
    serializer also lists ``*JOB_HEALTH_FIELDS`` in ``Meta.fields``. Serializing a list reads the health of the
    whole page at once (one cache read and one query per kind), not once per job.
    """

    job_kind = ""

    last_heartbeat = _HeartbeatField(allow_null=True, read_only=True, help_text="when a worker last beat on the job")
    worker_loss_retries = _RetriesField(read_only=True, help_text="times the job was retried after its worker died")
    recoveries = _RecoveriesField(
        child=JobRecoveryOutput(), read_only=True, help_text="each recovery after worker loss, oldest first"
    )

    def job_kind_of(self, instance: Any) -> str:
        if not self.job_kind:
            raise NotImplementedError(f"{type(self).__name__} must set job_kind or override job_kind_of")
        return self.job_kind

    def job_health_of(self, instance: Any) -> dict[str, Any]:
        """The health of the job ``instance`` (a model or a dict with ``id``), read once per serialization."""
        holder: serializers.BaseSerializer = self
        items: list[Any] = [instance]
        if isinstance(self.parent, serializers.ListSerializer):
            holder = self.parent
            if isinstance(holder.instance, list | tuple | QuerySet):
                items = [*holder.instance, instance]
        known: dict[tuple[str, int], dict[str, Any]] = holder.__dict__.setdefault("_job_health", {})
        key = (self.job_kind_of(instance), _job_id(instance))
        if key not in known:
            missing: dict[str, list[int]] = {}
            for item in items:
                item_key = (self.job_kind_of(item), _job_id(item))
                if item_key not in known:
                    missing.setdefault(item_key[0], []).append(item_key[1])
            for kind, ids in missing.items():
                known.update({(kind, job_id): health for job_id, health in jobs_health(kind, ids).items()})
        return known[key]
