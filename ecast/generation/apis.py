"""Generation REST API (admin only): jobs, progress, cancel/retry, backends, BLEU reports, test sets."""

from __future__ import annotations

from typing import Any

from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request
from rest_framework.response import Response

from ecast.core.openai_endpoint import endpoint_status
from ecast.core.pages import query_id
from ecast.core.rest import JOB_HEALTH_FIELDS, AdminApi, JobHealthFields
from ecast.generation import reports, selectors, services, testsets
from ecast.models import Collection, GenerationJob, TestSet
from ecast.pipeline.backends import status_table
from ecast.pipeline.run import STAGE_LABELS


class ProgressOutput(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.CharField()
    total = serializers.IntegerField()
    done = serializers.IntegerField()
    failed = serializers.IntegerField()
    cancelled = serializers.IntegerField()
    pending = serializers.IntegerField()
    paraphrase_pairs = serializers.IntegerField()
    percent = serializers.FloatField()
    eta_seconds = serializers.FloatField(allow_null=True)
    eta_text = serializers.CharField()
    error = serializers.CharField()
    cancel_requested = serializers.BooleanField()


class JobOutput(JobHealthFields, serializers.ModelSerializer):
    job_kind = services.KIND
    progress = serializers.SerializerMethodField()
    total_turns = serializers.IntegerField(source="progress_total", read_only=True)

    class Meta:
        model = GenerationJob
        fields = [
            "id",
            "name",
            "collection",
            "selection",
            "config",
            "seed",
            "chunk_size",
            "status",
            "total_turns",
            "created_at",
            "started_at",
            "finished_at",
            "progress",
            *JOB_HEALTH_FIELDS,
        ]

    @extend_schema(exclude=True)
    def get_progress(self, job: GenerationJob) -> dict[str, Any]:
        return selectors.generation_job_progress(job=job)


class JobDetailOutput(JobOutput):
    drops = serializers.SerializerMethodField(help_text="Outputs each stage dropped, {stage: {reason: count}}.")

    class Meta(JobOutput.Meta):
        fields = [*JobOutput.Meta.fields, "drops"]

    @extend_schema_field(OpenApiTypes.OBJECT)
    def get_drops(self, job: GenerationJob) -> dict[str, dict[str, int]]:
        return selectors.generation_job_drops(job=job)["by_stage"]


class GenerationJobListApi(AdminApi):
    @extend_schema(responses=JobOutput(many=True), operation_id="generation_jobs_list")
    def get(self, request: Request) -> Response:
        jobs = selectors.generation_job_list()[:200]
        return Response(JobOutput(jobs, many=True).data)


class GenerationJobCreateApi(AdminApi):
    class InputSerializer(serializers.Serializer):
        collection = serializers.PrimaryKeyRelatedField(queryset=Collection.objects.all())
        name = serializers.CharField(required=False, allow_blank=True, default="")
        selection = serializers.DictField(
            required=False, default=dict, help_text="{conversations: [topic ids], turns: [turn ids]}"
        )
        config = serializers.DictField(
            required=False, default=dict, help_text="{cqr|paraphrase|cr: {backend, params}, clean: {min_similarity}}"
        )
        seed = serializers.IntegerField(required=False, default=0)
        chunk_size = serializers.IntegerField(required=False, default=10)
        api_key = serializers.CharField(
            required=False,
            allow_blank=True,
            default="",
            write_only=True,
            help_text="Key for an openai stage's endpoint, for this job only (never returned); empty: the settings'.",
        )

    @extend_schema(request=InputSerializer, responses={201: JobOutput}, operation_id="generation_jobs_create")
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        job = services.generation_job_create(**data.validated_data, user=request.user)
        services.generation_job_start(job=job)
        return Response(JobOutput(job).data, status=status.HTTP_201_CREATED)


class GenerationJobDetailApi(AdminApi):
    @extend_schema(responses=JobDetailOutput, operation_id="generation_jobs_retrieve")
    def get(self, request: Request, pk: int) -> Response:
        return Response(JobDetailOutput(get_object_or_404(GenerationJob, pk=pk)).data)


class GenerationJobDroppedApi(AdminApi):
    """The outputs a job's finished turns dropped, each with its turn, stage, reason and source; 100 per page."""

    class DroppedSerializer(serializers.Serializer):
        turn = serializers.CharField()
        stage = serializers.CharField(help_text="cqr, paraphrase or cr")
        stage_label = serializers.CharField()
        reason = serializers.CharField()
        text = serializers.CharField(allow_blank=True)
        made_from = serializers.CharField(allow_blank=True, help_text="the text the dropped output was made from")
        rules = serializers.ListField(child=serializers.CharField(), help_text="grammar rules that fired")

    @extend_schema(
        parameters=[
            OpenApiParameter("turn", str, description="Only this turn id, e.g. 83_2"),
            OpenApiParameter("stage", str, enum=list(STAGE_LABELS)),
            OpenApiParameter("reason", str, description="Only this reason, e.g. 'polarity flip'"),
            OpenApiParameter("page", int),
        ],
        responses={200: DroppedSerializer(many=True)},
        operation_id="generation_jobs_dropped",
    )
    def get(self, request: Request, pk: int) -> Response:
        job = get_object_or_404(GenerationJob, pk=pk)
        stage = request.query_params.get("stage", "")
        if stage and stage not in STAGE_LABELS:
            raise ValidationError({"stage": f"stage must be one of {', '.join(STAGE_LABELS)}"})
        rows = selectors.generation_job_dropped(
            job=job,
            turn_id=request.query_params.get("turn", ""),
            stage=stage,
            reason=request.query_params.get("reason", ""),
        )
        paginator = PageNumberPagination()
        paginator.page_size = 100
        page = paginator.paginate_queryset(rows, request, view=self)  # type: ignore[arg-type]
        return paginator.get_paginated_response(self.DroppedSerializer(page, many=True).data)


class _JobActionApi(AdminApi):
    action = ""

    @extend_schema(request=None, responses=ProgressOutput)
    def post(self, request: Request, pk: int) -> Response:
        job = get_object_or_404(GenerationJob, pk=pk)
        job = getattr(services, f"generation_job_{self.action}")(job=job)
        return Response(selectors.generation_job_progress(job=job))


class GenerationJobCancelApi(_JobActionApi):
    action = "cancel"


class GenerationJobRetryApi(AdminApi):
    class InputSerializer(serializers.Serializer):
        api_key = serializers.CharField(
            required=False,
            allow_blank=True,
            default="",
            write_only=True,
            help_text="Key for an openai stage's endpoint for this run (the job's was cleared when it ended; never "
            "returned); empty: the settings'.",
        )

    @extend_schema(request=InputSerializer, responses=ProgressOutput, operation_id="generation_jobs_retry_create")
    def post(self, request: Request, pk: int) -> Response:
        job = get_object_or_404(GenerationJob, pk=pk)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        job = services.generation_job_retry(job=job, **data.validated_data)
        return Response(selectors.generation_job_progress(job=job))


class GenerationJobResumeApi(_JobActionApi):
    action = "resume"


class BackendOutput(serializers.Serializer):
    name = serializers.CharField()
    stages = serializers.ListField(child=serializers.CharField())
    usable = serializers.BooleanField()
    reason = serializers.CharField()
    description = serializers.CharField()


class BackendStatusApi(AdminApi):
    @extend_schema(responses=BackendOutput(many=True), operation_id="generation_backends_list")
    def get(self, request: Request) -> Response:
        return Response(BackendOutput(status_table({"openai": endpoint_status()}), many=True).data)


class DiversityRow(serializers.Serializer):
    collection = serializers.CharField()
    paraphrases = serializers.IntegerField()
    edited = serializers.IntegerField()
    para_auto = serializers.FloatField(allow_null=True)
    para_diverse = serializers.FloatField(allow_null=True)
    change_pct = serializers.FloatField(allow_null=True)


class DiversityReportApi(AdminApi):
    @extend_schema(responses=DiversityRow(many=True), operation_id="generation_diversity_report")
    def get(self, request: Request) -> Response:
        return Response(DiversityRow(reports.diversity_rows(), many=True).data)


class CrRow(serializers.Serializer):
    system = serializers.CharField()
    turns = serializers.IntegerField()
    bleu = serializers.FloatField(allow_null=True)
    job = serializers.IntegerField(allow_null=True)
    paper = serializers.FloatField(allow_null=True, help_text="ECAsT Table 9's figure for this row, where it has one")


class CrReportApi(AdminApi):
    @extend_schema(responses=CrRow(many=True), operation_id="generation_context_removal_report")
    def get(self, request: Request, collection_pk: int) -> Response:
        collection = get_object_or_404(Collection, pk=collection_pk)
        return Response(CrRow(reports.context_removal_rows(collection=collection), many=True).data)


class TestSetOutput(serializers.ModelSerializer):
    n_items = serializers.SerializerMethodField()

    class Meta:
        model = TestSet
        fields = ["id", "collection", "name", "kind", "index", "seed", "parameters", "created_at", "n_items"]

    @extend_schema(exclude=True)
    def get_n_items(self, ts: TestSet) -> int:
        return ts.items.count()


class TestSetListApi(AdminApi):
    @extend_schema(responses=TestSetOutput(many=True), operation_id="generation_test_sets_list")
    def get(self, request: Request) -> Response:
        qs = TestSet.objects.order_by("collection_id", "kind", "index")
        collection_id = query_id(request.query_params, "collection")
        if collection_id is not None:
            qs = qs.filter(collection_id=collection_id)
        return Response(TestSetOutput(qs, many=True).data)


class TestSetCreateApi(AdminApi):
    class InputSerializer(serializers.Serializer):
        collection = serializers.PrimaryKeyRelatedField(queryset=Collection.objects.all())
        kind = serializers.ChoiceField(choices=TestSet.Kind.choices)
        n_sets = serializers.IntegerField(default=3)
        seed = serializers.IntegerField(default=0)
        statuses = serializers.ListField(child=serializers.CharField(), default=["approved"])

    @extend_schema(
        request=InputSerializer, responses={201: TestSetOutput(many=True)}, operation_id="generation_test_sets_create"
    )
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        d = data.validated_data
        created = testsets.test_sets_create(
            collection=d["collection"],
            kind=d["kind"],
            n_sets=d["n_sets"],
            seed=d["seed"],
            statuses=tuple(d["statuses"]),
        )
        return Response(TestSetOutput(created, many=True).data, status=status.HTTP_201_CREATED)


class TestSetExportApi(AdminApi):
    @extend_schema(responses={200: OpenApiTypes.OBJECT}, operation_id="generation_test_sets_export")
    def get(self, request: Request, pk: int) -> Response:
        return Response(testsets.test_set_export(test_set=get_object_or_404(TestSet, pk=pk)))
