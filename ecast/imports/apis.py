"""REST API: start an import (multipart upload, runs in the worker), read a job, and stream releases."""

from __future__ import annotations

import json
from typing import Any

from django.http import StreamingHttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from ecast import releases
from ecast.core.csvfiles import csv_streaming_response
from ecast.core.errors import DomainError
from ecast.core.rest import JOB_HEALTH_FIELDS, AdminApi, JobHealthFields
from ecast.imports import registry, services
from ecast.imports.formats import irds
from ecast.imports.views import body_too_large
from ecast.models import Collection, ImportJob


class ImportErrorOutput(serializers.Serializer):
    file = serializers.CharField()
    line = serializers.IntegerField(allow_null=True)
    reason = serializers.CharField()


class ImportJobOutput(JobHealthFields, serializers.ModelSerializer):
    job_kind = services.KIND
    collection: serializers.SlugRelatedField = serializers.SlugRelatedField(slug_field="name", read_only=True)
    counts = serializers.JSONField()
    url = serializers.SerializerMethodField()

    class Meta:
        model = ImportJob
        fields = [
            "id",
            "kind",
            "file_name",
            "collection",
            "options",
            "status",
            "progress_done",
            "progress_total",
            "errors",
            "counts",
            "created_at",
            "finished_at",
            "url",
            *JOB_HEALTH_FIELDS,
        ]

    def get_url(self, obj: ImportJob) -> str:
        return f"/api/imports/{obj.pk}/"


# "errors" is also a Serializer attribute, so the field is declared after the class body (DRF reads
# _declared_fields); the API keeps the field name the brief and the page use.
ImportJobOutput._declared_fields["errors"] = ImportErrorOutput(many=True)


class ImportStartApi(AdminApi):
    """Upload a file (or name an ir_datasets id) and import it in the background; poll the returned job for
    progress and errors."""

    parser_classes = [MultiPartParser, FormParser]

    class InputSerializer(serializers.Serializer):
        kind = serializers.ChoiceField(choices=[])  # the registered kinds, filled per instance
        file = serializers.FileField(required=False)
        dataset = serializers.CharField(
            required=False, help_text="ir_datasets id to import instead of a file (kind ir_datasets)"
        )
        collection = serializers.PrimaryKeyRelatedField(queryset=Collection.objects.all(), required=False)
        options = serializers.JSONField(required=False, help_text='JSON object, e.g. {"name": "bm25", "strict": true}')
        extra_file = serializers.FileField(required=False, help_text="resolved TSV (topics) or queries (qrels/runs)")

        class Meta:
            ref_name = "ImportStartInput"

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            # Other apps register their kinds in ready(), after this class is built.
            kind: Any = self.fields["kind"]
            kind.choices = registry.names()

        def validate_options(self, value: Any) -> dict[str, Any]:
            if isinstance(value, str):
                try:
                    value = json.loads(value)
                except json.JSONDecodeError as exc:
                    raise serializers.ValidationError(f"options must be a JSON object: {exc.msg}") from exc
            if not isinstance(value, dict):
                raise serializers.ValidationError("options must be a JSON object")
            return value

        def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
            wants_dataset = attrs["kind"] == irds.KIND
            if wants_dataset and not attrs.get("dataset"):
                raise serializers.ValidationError({"dataset": "kind ir_datasets imports a dataset id: give dataset"})
            if not wants_dataset and attrs.get("dataset"):
                raise serializers.ValidationError({"dataset": "only kind ir_datasets imports a dataset id"})
            if not wants_dataset and attrs.get("file") is None:
                raise serializers.ValidationError({"file": "No file was submitted."})
            return attrs

    @extend_schema(
        request={"multipart/form-data": InputSerializer},
        responses={202: ImportJobOutput, 400: ImportJobOutput, 413: OpenApiResponse(description="upload too large")},
    )
    def post(self, request: Request) -> Response:
        too_large = body_too_large(request._request)
        if too_large:
            raise DomainError(too_large, code="too_large")
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        extras = {}
        if v.get("extra_file") is not None:
            key = registry.second_file(v["kind"])
            if key is None:
                raise serializers.ValidationError({"extra_file": "this kind takes no second file"})
            extras[key] = v["extra_file"]
        if v.get("dataset"):
            job = services.import_dataset_start(
                dataset_id=v["dataset"], collection=v.get("collection"), options=v.get("options"), user=request.user
            )
        else:
            job = services.import_job_start(
                kind=v["kind"],
                uploaded=v["file"],
                collection=v.get("collection"),
                options=v.get("options") or {},
                user=request.user,
                extra_uploads=extras,
            )
        job.refresh_from_db()
        code = status.HTTP_400_BAD_REQUEST if job.status == ImportJob.Status.FAILED and not job.stored_path else 202
        return Response(ImportJobOutput(job).data, status=code)


class ImportJobApi(AdminApi):
    """Status, progress, counts and the full error report of one import."""

    @extend_schema(responses=ImportJobOutput)
    def get(self, request: Request, pk: int) -> Response:
        job = get_object_or_404(ImportJob.objects.select_related("collection"), pk=pk)
        return Response(ImportJobOutput(job).data)


RELEASE_PARAMS = [
    OpenApiParameter("collection", OpenApiTypes.STR, description="collection id or name (default: all)"),
    OpenApiParameter("status", OpenApiTypes.STR, enum=list(releases.STATUSES), description="default approved"),
]


def _release_queryset(request: Request):
    collection = None
    value = request.query_params.get("collection", "").strip()
    if value:
        collection = Collection.objects.filter(pk=int(value)).first() if value.isdigit() else None
        collection = collection or Collection.objects.filter(name=value).first()
        if collection is None:
            raise serializers.ValidationError({"collection": f"no collection {value!r}"})
    st = request.query_params.get("status", "approved")
    if st not in releases.STATUSES:
        raise serializers.ValidationError({"status": f"must be one of {', '.join(releases.STATUSES)}"})
    name = (collection.name if collection else "all").replace(" ", "_")
    return releases.release_pairs(collection=collection, status=st), f"ecast-{name}-{st}"


class ReleaseCsvApi(AdminApi):
    """The ECAsT-format CSV (TURN_ID, MANUAL PARAPHRASE, RAW PARAPHRASE), streamed."""

    @extend_schema(parameters=RELEASE_PARAMS, responses={(200, "text/csv"): OpenApiResponse(OpenApiTypes.BINARY)})
    def get(self, request: Request) -> StreamingHttpResponse:
        qs, stem = _release_queryset(request)
        return csv_streaming_response(f"{stem}.csv", releases.release_csv_lines(pairs_queryset=qs))


class ReleaseJsonlApi(AdminApi):
    """Every released pair with both members' provenance and the original turn texts, as JSON Lines, streamed."""

    @extend_schema(
        parameters=RELEASE_PARAMS, responses={(200, "application/jsonl"): OpenApiResponse(OpenApiTypes.BINARY)}
    )
    def get(self, request: Request) -> StreamingHttpResponse:
        qs, stem = _release_queryset(request)
        response = StreamingHttpResponse(
            releases.jsonl_lines(releases.release_jsonl_rows(pairs_queryset=qs)),
            content_type="application/jsonl; charset=utf-8",
        )
        response["Content-Disposition"] = f'attachment; filename="{stem}.jsonl"'
        return response
