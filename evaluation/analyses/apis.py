"""REST API of the analyses (admin token): create pivot / meta-evaluation / calibration / stochastic analyses,
read status and results, and the cross-EE comparison tool."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.http import Http404
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from ecast.core.errors import DomainError
from ecast.core.rest import AdminApi, JobHealthFields
from ecast.models import Collection
from evaluation.analyses import budget, pivots
from evaluation.analyses import calibration as cal
from evaluation.analyses.selectors import ANALYSIS_MODELS
from evaluation.analyses.services import budget as budget_services
from evaluation.analyses.services import calibration as calibration_services
from evaluation.analyses.services import metaeval as metaeval_services
from evaluation.analyses.services import pivots as pivot_services
from evaluation.analyses.services.common import analysis_job_kind
from evaluation.models import QrelsVersion, Run


class AnalysisOutputSerializer(JobHealthFields, serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    collection = serializers.IntegerField(source="collection_id")
    qrels_version = serializers.CharField(source="qrels_version.name", allow_null=True, default=None)
    parameters = serializers.JSONField()
    status = serializers.CharField()
    progress_done = serializers.IntegerField()
    progress_total = serializers.IntegerField()
    error = serializers.CharField()
    computed_at = serializers.DateTimeField(allow_null=True)
    results = serializers.JSONField()

    def job_kind_of(self, instance: Any) -> str:
        return analysis_job_kind(ANALYSIS_KINDS[type(instance)])


ANALYSIS_KINDS = {model: kind for kind, model in ANALYSIS_MODELS.items()}


def _created(obj: Any) -> Response:
    """201 with the stored analysis, re-read: its computation may already have run (eager mode)."""
    obj.refresh_from_db()
    return Response(AnalysisOutputSerializer(obj).data, status=status.HTTP_201_CREATED)


def _collection(pk: int) -> Collection:
    return get_object_or_404(Collection, pk=pk)


def _runs(collection: Collection, ids: list[int]) -> list[Run]:
    runs = list(Run.objects.filter(pk__in=ids))
    missing = set(ids) - {r.pk for r in runs}
    if missing:
        raise ValidationError({"runs": f"unknown run id(s): {', '.join(map(str, sorted(missing)))}"})
    return runs


def _version(pk: int | None) -> QrelsVersion | None:
    if pk is None:
        return None
    try:
        return QrelsVersion.objects.get(pk=pk)
    except QrelsVersion.DoesNotExist as exc:
        raise ValidationError({"qrels_version": f"unknown qrels version id {pk}"}) from exc


class PivotAnalysisCreateApi(AdminApi):
    class InputSerializer(serializers.Serializer):
        collection = serializers.IntegerField()
        runs = serializers.ListField(child=serializers.IntegerField(), min_length=3)
        qrels_version = serializers.IntegerField(required=False, allow_null=True)
        metrics = serializers.ListField(child=serializers.CharField(), default=list(pivots.DEFAULT_METRICS))
        n_splits = serializers.IntegerField(default=pivots.DEFAULT_SPLITS, min_value=1, max_value=1000)
        seed = serializers.IntegerField(default=0)
        ee_kind = serializers.ChoiceField(choices=list(pivot_services.EE_KINDS), default="splits")
        qrels_versions = serializers.ListField(child=serializers.IntegerField(), default=list)
        name = serializers.CharField(required=False, allow_blank=True, default="")
        auto_recompute = serializers.BooleanField(default=True)

    @extend_schema(request=InputSerializer, responses={201: AnalysisOutputSerializer}, summary="Start a pivot analysis")
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        d: dict[str, Any] = data.validated_data
        collection = _collection(d["collection"])
        obj = pivot_services.pivot_analysis_create(
            collection=collection,
            runs=_runs(collection, d["runs"]),
            qrels_version=_version(d.get("qrels_version")),
            metrics=d["metrics"],
            n_splits=d["n_splits"],
            seed=d["seed"],
            ee_kind=d["ee_kind"],
            qrels_versions=[v for v in (_version(i) for i in d["qrels_versions"]) if v is not None],
            name=d["name"],
            auto_recompute=d["auto_recompute"],
            created_by=request.user,
        )
        return _created(obj)


class MetaEvaluationCreateApi(AdminApi):
    parser_classes = [MultiPartParser, FormParser, JSONParser]

    class InputSerializer(serializers.Serializer):
        collection = serializers.IntegerField()
        complex_metrics = serializers.ListField(child=serializers.CharField(), min_length=2)
        dimensions = serializers.JSONField(help_text='{"Rel": ["p"], "Rel+Div": ["p", "strec"]}')
        upload = serializers.FileField(required=False)
        runs = serializers.ListField(child=serializers.IntegerField(), default=list)
        qrels_version = serializers.IntegerField(required=False, allow_null=True)
        depth = serializers.IntegerField(default=10, min_value=1)
        lengths = serializers.FileField(required=False, help_text="TSV passage_id<TAB>length in words")
        name = serializers.CharField(required=False, allow_blank=True, default="")

    @extend_schema(
        request={"multipart/form-data": InputSerializer, "application/json": InputSerializer},
        responses={201: AnalysisOutputSerializer},
        summary="Start a meta-evaluation (upload a per-topic table, or use the app's scores of runs)",
    )
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        d: dict[str, Any] = data.validated_data
        collection = _collection(d["collection"])
        dims = d["dimensions"]
        if not isinstance(dims, dict):
            raise ValidationError({"dimensions": "a JSON object {name: [simple metrics]}"})
        upload = d.get("upload")
        obj = metaeval_services.meta_evaluation_create(
            collection=collection,
            complex_metrics=d["complex_metrics"],
            dimensions=dims,
            upload=upload,
            upload_name=upload.name if upload is not None else "table.csv",
            runs=_runs(collection, d["runs"]) if upload is None else [],
            qrels_version=_version(d.get("qrels_version")),
            depth=d["depth"],
            lengths_upload=d.get("lengths"),
            lengths_name=d["lengths"].name if d.get("lengths") else "lengths.tsv",
            name=d["name"],
            created_by=request.user,
        )
        return _created(obj)


class CalibrationReportCreateApi(AdminApi):
    class InputSerializer(serializers.Serializer):
        run = serializers.IntegerField()
        qrels_version = serializers.IntegerField()
        normalisation = serializers.ChoiceField(choices=list(cal.NORMALISATIONS), default="none")
        depth = serializers.IntegerField(required=False, allow_null=True, min_value=1)
        n_buckets = serializers.IntegerField(default=10, min_value=2, max_value=100)

    @extend_schema(
        request=InputSerializer, responses={201: AnalysisOutputSerializer}, summary="Start a calibration report"
    )
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        d: dict[str, Any] = data.validated_data
        run = get_object_or_404(Run, pk=d["run"])
        obj = calibration_services.calibration_report_create(
            run=run,
            qrels_version=_version(d["qrels_version"]),
            normalisation=d["normalisation"],
            depth=d.get("depth"),
            n_buckets=d["n_buckets"],
            created_by=request.user,
        )
        return _created(obj)


class BudgetSimulationCreateApi(AdminApi):
    class InputSerializer(serializers.Serializer):
        collection = serializers.IntegerField()
        runs = serializers.ListField(child=serializers.IntegerField(), min_length=2)
        qrels_version = serializers.IntegerField(help_text="Complete judgments the strategies are replayed against")
        depth = serializers.IntegerField(default=10, min_value=1, max_value=100)
        strategies = serializers.ListField(child=serializers.CharField(), default=list(budget.DEFAULT_STRATEGIES))
        measures = serializers.ListField(child=serializers.CharField(), default=list(budget.DEFAULT_MEASURES))
        fractions = serializers.ListField(child=serializers.FloatField(), default=list(budget.DEFAULT_FRACTIONS))
        prior_version = serializers.IntegerField(
            required=False, allow_null=True, default=None, help_text="A qrels version seeding the bandit orders"
        )
        name = serializers.CharField(required=False, allow_blank=True, default="")

    @extend_schema(
        request=InputSerializer,
        responses={201: AnalysisOutputSerializer},
        summary="Simulate judging budgets: adjudication orders replayed on a complete qrels version",
    )
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        d: dict[str, Any] = data.validated_data
        collection = _collection(d["collection"])
        obj = budget_services.budget_simulation_create(
            collection=collection,
            runs=_runs(collection, d["runs"]),
            qrels_version=_version(d["qrels_version"]),
            depth=d["depth"],
            strategies=d["strategies"],
            measures=d["measures"],
            fractions=d["fractions"],
            prior_version=_version(d["prior_version"]) if d["prior_version"] is not None else None,
            name=d["name"],
            created_by=request.user,
        )
        return _created(obj)


class StochasticSystemCreateApi(AdminApi):
    class InputSerializer(serializers.Serializer):
        collection = serializers.IntegerField()
        runs = serializers.ListField(child=serializers.IntegerField(), min_length=2)
        qrels_version = serializers.IntegerField()
        b_values = serializers.ListField(
            child=serializers.FloatField(), default=list(calibration_services.DEFAULT_B_VALUES)
        )
        measure = serializers.CharField(default="nDCG@3")
        depth = serializers.IntegerField(default=100, min_value=1)
        normalisation = serializers.ChoiceField(
            choices=list(cal.NORMALISATIONS),
            default=calibration_services.DEFAULT_SAMPLE_NORMALISATION,
            help_text="How each sample's scores reach [0, 1] per turn before E − b·var − 2b·Σcov",
        )
        name = serializers.CharField(required=False, allow_blank=True, default="")

    @extend_schema(
        request=InputSerializer,
        responses={201: AnalysisOutputSerializer},
        summary="Group sample runs as a stochastic system",
    )
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        d: dict[str, Any] = data.validated_data
        collection = _collection(d["collection"])
        obj = calibration_services.stochastic_system_create(
            collection=collection,
            runs=_runs(collection, d["runs"]),
            qrels_version=_version(d["qrels_version"]),
            b_values=d["b_values"],
            measure=d["measure"],
            depth=d["depth"],
            normalisation=d["normalisation"],
            name=d["name"],
            created_by=request.user,
        )
        return _created(obj)


class AnalysisDetailApi(AdminApi):
    @extend_schema(
        responses={200: AnalysisOutputSerializer},
        parameters=[OpenApiParameter("kind", str, OpenApiParameter.PATH, enum=list(ANALYSIS_MODELS))],
        summary="Status, parameters, qrels version, computed_at and results of an analysis",
    )
    def get(self, request: Request, kind: str, pk: int) -> Response:
        if kind not in ANALYSIS_MODELS:
            raise Http404("unknown analysis kind")
        obj = get_object_or_404(ANALYSIS_MODELS[kind].objects.select_related("qrels_version"), pk=pk)
        return Response(AnalysisOutputSerializer(obj).data)


class PivotCompareApi(AdminApi):
    class InputSerializer(serializers.Serializer):
        metric = serializers.CharField()
        pivot = serializers.CharField()
        choices = serializers.DictField(child=serializers.CharField(), help_text="{system: evaluation environment}")

    class OutputSerializer(serializers.Serializer):
        metric = serializers.CharField()
        pivot = serializers.CharField()
        ranking = serializers.ListField(child=serializers.DictField())
        consistency = serializers.DictField()
        correctness = serializers.DictField()

    @extend_schema(
        request=InputSerializer, responses={200: OutputSerializer}, summary="Cross-EE ranking through a pivot"
    )
    def post(self, request: Request, pk: int) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        d: dict[str, Any] = data.validated_data
        obj = get_object_or_404(ANALYSIS_MODELS["pivots"], pk=pk)
        if not obj.results:
            raise DomainError("This analysis has no results yet.", code="conflict")
        out = pivot_services.pivot_cross_ee(analysis=obj, metric=d["metric"], pivot=d["pivot"], choices=d["choices"])
        return Response(self.OutputSerializer(out).data)
