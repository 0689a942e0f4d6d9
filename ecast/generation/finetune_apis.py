"""REST API for fine-tune jobs and their adapters (admins)."""

from __future__ import annotations

from typing import Any

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from ecast.core.rest import JOB_HEALTH_FIELDS, AdminApi, JobHealthFields
from ecast.generation import finetune
from ecast.models import Adapter, Collection, FinetuneJob


class AdapterOutput(serializers.ModelSerializer):
    label = serializers.CharField(read_only=True)  # type: ignore[assignment]  # a field, not DRF's Field.label
    backend = serializers.SerializerMethodField(help_text="The generation config that uses it.")

    class Meta:
        model = Adapter
        fields = ["id", "label", "collection", "job", "stage", "base_model", "sha256", "metrics", "training", "backend"]

    def get_backend(self, adapter: Adapter) -> dict[str, Any]:
        return {"backend": "adapter", "params": {"adapter": adapter.pk}}


class FinetuneJobOutput(JobHealthFields, serializers.ModelSerializer):
    job_kind = finetune.KIND
    adapter = serializers.SerializerMethodField()

    class Meta:
        model = FinetuneJob
        fields = [
            "id", "collection", "stage", "base_model", "params", "exclude_topics", "status", "message", "error",
            "progress_done", "progress_total", "metrics", "adapter", "created_at", "started_at", "finished_at",
            *JOB_HEALTH_FIELDS,
        ]  # fmt: skip

    def get_adapter(self, job: FinetuneJob) -> int | None:
        return Adapter.objects.filter(job=job).values_list("pk", flat=True).first()


class FinetuneJobListApi(AdminApi):
    @extend_schema(responses=FinetuneJobOutput(many=True), operation_id="finetune_jobs_list")
    def get(self, request: Request) -> Response:
        jobs = FinetuneJob.objects.all()[:200]
        return Response(FinetuneJobOutput(jobs, many=True).data)


class FinetuneJobCreateApi(AdminApi):
    class InputSerializer(serializers.Serializer):
        collection = serializers.PrimaryKeyRelatedField(queryset=Collection.objects.all())
        stage = serializers.ChoiceField(choices=FinetuneJob.Stage.choices, default=FinetuneJob.Stage.PARAPHRASE)
        params = serializers.DictField(required=False, default=dict, help_text="epochs, learning_rate, rank, …")
        exclude_topics = serializers.ListField(child=serializers.CharField(max_length=32), required=False, default=list)

    @extend_schema(request=InputSerializer, responses={201: FinetuneJobOutput}, operation_id="finetune_jobs_create")
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        job = finetune.finetune_job_create(**data.validated_data, created_by=request.user)
        return Response(FinetuneJobOutput(job).data, status=status.HTTP_201_CREATED)


class FinetuneJobDetailApi(AdminApi):
    @extend_schema(responses=FinetuneJobOutput, operation_id="finetune_jobs_retrieve")
    def get(self, request: Request, pk: int) -> Response:
        return Response(FinetuneJobOutput(get_object_or_404(FinetuneJob, pk=pk)).data)


class FinetuneJobCancelApi(AdminApi):
    @extend_schema(request=None, responses=FinetuneJobOutput, operation_id="finetune_jobs_cancel")
    def post(self, request: Request, pk: int) -> Response:
        job = finetune.finetune_cancel(job=get_object_or_404(FinetuneJob, pk=pk))
        return Response(FinetuneJobOutput(job).data)


class AdapterListApi(AdminApi):
    @extend_schema(responses=AdapterOutput(many=True), operation_id="adapters_list")
    def get(self, request: Request) -> Response:
        rows = Adapter.objects.select_related("collection").defer("weights")[:200]
        return Response(AdapterOutput(rows, many=True).data)
