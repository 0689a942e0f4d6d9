"""REST API for response-LLM jobs (admins; token or session): follow them (they are started from their page)."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from ecast.core.rest import AdminApi, JobHealthFields
from judging.llm import response_selectors as sel
from judging.llm import response_services as services


class ResponseJobOutputSerializer(JobHealthFields, serializers.Serializer):
    job_kind = services.KIND
    id = serializers.IntegerField()
    task = serializers.CharField()
    collection = serializers.CharField(source="collection.name")
    bank = serializers.IntegerField(source="bank_id", allow_null=True)
    label_set = serializers.IntegerField(source="label_set_id", allow_null=True)
    run = serializers.IntegerField(source="run_id", allow_null=True)
    qrels_version = serializers.IntegerField(source="qrels_version_id", allow_null=True)
    threshold = serializers.IntegerField(allow_null=True)
    turns = serializers.ListField(child=serializers.CharField())
    model = serializers.CharField()
    model_id = serializers.CharField()
    revision = serializers.CharField()
    params = serializers.DictField()
    provenance = serializers.DictField()
    limit = serializers.IntegerField(allow_null=True)
    status = serializers.CharField()
    done = serializers.IntegerField(source="progress_done")
    total = serializers.IntegerField(source="progress_total")
    error = serializers.CharField()
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)


class ResponseJobListApi(AdminApi):
    """Every response-LLM job (nugget drafts, nugget assignment, citation support, baseline answers), newest first."""

    @extend_schema(responses={200: ResponseJobOutputSerializer(many=True)})
    def get(self, request):
        return Response(ResponseJobOutputSerializer(list(sel.response_job_list()[:500]), many=True).data)


class ResponseJobDetailApi(AdminApi):
    """One job: progress, provenance, what it writes into."""

    @extend_schema(responses={200: ResponseJobOutputSerializer})
    def get(self, request, pk: int):
        return Response(ResponseJobOutputSerializer(get_object_or_404(sel.response_job_list(), pk=pk)).data)
