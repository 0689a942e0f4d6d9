"""REST API for LLM pre-judgments (admins; token or session): start a job, follow it, read its labels."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response

from ecast.core.rest import AdminApi, JobHealthFields
from evaluation.models import QrelsVersion
from judging.llm import judge, services
from judging.llm import selectors as sel
from judging.models import LlmJudgeJob


class LlmJobOutputSerializer(JobHealthFields, serializers.Serializer):
    job_kind = services.KIND
    id = serializers.IntegerField()
    collection = serializers.CharField(source="collection.name")
    source_version = serializers.IntegerField(source="source_version_id")
    source_version_name = serializers.CharField(source="source_version.name")
    target_version = serializers.IntegerField(source="target_version_id", allow_null=True)
    target_version_name = serializers.CharField(source="target_version.name", allow_null=True, default=None)
    model = serializers.CharField()
    model_id = serializers.CharField()
    revision = serializers.CharField()
    params = serializers.DictField()
    provenance = serializers.DictField()
    limit = serializers.IntegerField(allow_null=True)
    status = serializers.CharField()
    done = serializers.IntegerField(source="progress_done")
    total = serializers.IntegerField(source="progress_total")
    pairs_per_second = serializers.SerializerMethodField()
    error = serializers.CharField()
    agreement_url = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)

    def get_pairs_per_second(self, job: LlmJudgeJob) -> float | None:
        return sel.llm_job_progress(job=job)["pairs_per_second"]

    def get_agreement_url(self, job: LlmJudgeJob) -> str | None:
        return sel.agreement_url(job=job)


class LlmJobListCreateApi(AdminApi):
    """GET: every LLM pre-judgment job. POST: label a human version's judged pairs with text into "llm: <model>"."""

    class InputSerializer(serializers.Serializer):
        source_version = serializers.IntegerField(help_text="The human qrels version whose pairs are labelled.")
        model = serializers.CharField(
            default=judge.DEFAULT_MODEL,
            help_text="'smollm', a model folder or .gguf file, or 'openai' (an OpenAI-compatible endpoint)",
        )
        revision = serializers.CharField(default="", allow_blank=True)
        params = serializers.DictField(
            default=dict,
            help_text=f"optional: {', '.join(sorted(services.PARAM_BOUNDS))} (integers); for 'openai': base_url and "
            "served_model (else the settings')",
        )
        limit = serializers.IntegerField(required=False, allow_null=True, default=None, min_value=1)
        api_key = serializers.CharField(
            required=False,
            allow_blank=True,
            default="",
            write_only=True,
            help_text="'openai' only: the endpoint's key for this job (never returned); empty: the settings'.",
        )

    @extend_schema(responses={200: LlmJobOutputSerializer(many=True)})
    def get(self, request):
        return Response(LlmJobOutputSerializer(list(sel.llm_job_list()), many=True).data)

    @extend_schema(request=InputSerializer, responses={202: LlmJobOutputSerializer})
    def post(self, request):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        version = get_object_or_404(QrelsVersion.objects.select_related("collection"), pk=v["source_version"])
        job = services.llm_judge_job_create(
            collection=version.collection,
            source_version=version,
            model=v["model"],
            revision=v["revision"],
            params=v["params"],
            limit=v["limit"],
            created_by=request.user,
            api_key=v["api_key"],
        )
        # 202: the worker labels the pairs; poll the job until its status is "succeeded" (or "failed").
        return Response(LlmJobOutputSerializer(sel.llm_job_get(pk=job.pk)).data, status=status.HTTP_202_ACCEPTED)


class LlmJobDetailApi(AdminApi):
    """One job: progress, provenance, the LLM version and the link to its agreement report."""

    @extend_schema(responses={200: LlmJobOutputSerializer})
    def get(self, request, pk: int):
        return Response(LlmJobOutputSerializer(get_object_or_404(sel.llm_job_list(), pk=pk)).data)


class LlmLabelOutputSerializer(serializers.Serializer):
    turn_id = serializers.CharField()
    passage_id = serializers.CharField()
    grade = serializers.IntegerField()
    human_grade = serializers.IntegerField(allow_null=True)
    probabilities = serializers.ListField(child=serializers.FloatField())
    digit_mass = serializers.FloatField()
    prompt = serializers.CharField()
    provenance = serializers.DictField()


class LlmJobLabelsApi(AdminApi):
    """Every label of a job, with the human grade, the prompt and the provenance."""

    @extend_schema(responses={200: LlmLabelOutputSerializer(many=True)})
    def get(self, request, pk: int):
        job = get_object_or_404(LlmJudgeJob, pk=pk)
        return Response(LlmLabelOutputSerializer(sel.llm_job_labels(job=job), many=True).data)
