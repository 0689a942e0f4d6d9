"""REST API for stored scores: leaderboard, per-turn scores, run upload, jobs, recompute, significance, stability.

Admins (researchers) only; one APIView per operation with nested serializers.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response

from ecast.core.rest import AdminApi, JobHealthFields
from ecast.models import Collection, TestSet
from evaluation import metrics, significance, stats
from evaluation import selectors as sel
from evaluation import services as svc
from evaluation.models import EvaluationJob, QrelsVersion, Run

MEASURE_PARAM = OpenApiParameter(
    "measure",
    str,
    description="any ir_measures string pytrec_eval computes per turn (default nDCG@3); one not stored yet for the "
    "version is computed in the background and the answer is 202 until it is",
)


def _measures_stored(
    request, versions: list[QrelsVersion], raw: list[str], *, field: str = "measure"
) -> tuple[list[str], Response | None]:
    """The stored spellings of the measures ``raw`` under ``versions``, each stored on demand, and, while one is still
    being computed, the 202 answer saying so (400 naming the string, under ``field``, when ir_measures cannot parse
    it or pytrec_eval cannot compute it per turn)."""
    names, jobs = [], []
    try:
        for m in raw:
            for version in versions:
                state = svc.measure_request(version=version, measure=m, user=request.user)
                if state.job is not None:
                    jobs.append(state.job)
            names.append(state.measure)
    except metrics.MeasureError as exc:
        # "detail" as every 400 of the API carries it, and the parameter named (the baseline API reads it by name).
        raise serializers.ValidationError({"detail": str(exc), field: [str(exc)]}) from exc
    if not jobs:
        return names, None
    computing = list(dict.fromkeys(m for j in jobs for m in j.measures))
    body = {
        "measure": computing[0],
        "measures": computing,
        "version": jobs[0].version_id,
        "status": "computing",
        "detail": f"{', '.join(computing)} being computed for every run; ask again when the job ends",
        "job": _JobSerializer(jobs[0]).data,
        "jobs": [_JobSerializer(j).data for j in jobs],
        "progress": reverse("job-progress", args=[jobs[0].job_kind, jobs[0].pk]),
    }
    return names, Response(body, status=status.HTTP_202_ACCEPTED)


def _measure_stored(request, version: QrelsVersion) -> tuple[str, Response | None]:
    """``?measure=`` (default nDCG@3) for ``version``, stored on demand (see ``_measures_stored``)."""
    names, computing = _measures_stored(request, [version], [request.query_params.get("measure") or metrics.HEADLINE])
    return names[0], computing


class _JobSerializer(JobHealthFields, serializers.Serializer):
    job_kind = svc.JOB_KIND
    id = serializers.IntegerField(source="pk")
    kind = serializers.CharField()
    status = serializers.CharField()
    done = serializers.IntegerField(source="progress_done")
    total = serializers.IntegerField(source="progress_total")
    error = serializers.CharField()
    run = serializers.IntegerField(source="run_id", allow_null=True)


class LeaderboardApi(AdminApi):
    """Means per run under a qrels version, ranked by ``measure`` (polled by the leaderboard page)."""

    class RowSerializer(serializers.Serializer):
        run_id = serializers.IntegerField()
        run = serializers.CharField()
        test_set = serializers.CharField()
        turns = serializers.IntegerField()
        rank = serializers.IntegerField(allow_null=True)
        headline = serializers.FloatField(allow_null=True)
        stderr = serializers.FloatField()
        means = serializers.DictField(child=serializers.FloatField(allow_null=True))

    class OutputSerializer(serializers.Serializer):
        collection = serializers.CharField()
        version = serializers.DictField()
        measure = serializers.CharField()
        measures = serializers.ListField(child=serializers.CharField())
        threshold = serializers.IntegerField()
        missing_turns = serializers.CharField()
        status = serializers.DictField()
        rows = serializers.ListField(child=serializers.DictField())

    @extend_schema(parameters=[MEASURE_PARAM], responses={200: OutputSerializer, 202: dict})
    def get(self, request, pk: int):
        version = get_object_or_404(QrelsVersion.objects.select_related("collection"), pk=pk)
        measure, computing = _measure_stored(request, version)
        if computing is not None:
            return computing
        data = sel.leaderboard_data(version=version, measure=measure)
        data["rows"] = [self.RowSerializer(r).data for r in data["rows"]]
        return Response(self.OutputSerializer(data).data)


class VersionStatusApi(AdminApi):
    """A cheap fingerprint of a version's scores (count, last computed, snapshot id, pending turns, jobs)."""

    class OutputSerializer(serializers.Serializer):
        version = serializers.IntegerField()
        scores = serializers.IntegerField()
        last_computed = serializers.CharField(allow_null=True)
        snapshot = serializers.IntegerField(allow_null=True)
        pending_turns = serializers.IntegerField()
        jobs = serializers.ListField(child=serializers.DictField())
        recent_jobs = serializers.ListField(child=serializers.DictField())

    @extend_schema(responses={200: OutputSerializer})
    def get(self, request, pk: int):
        version = get_object_or_404(QrelsVersion, pk=pk)
        return Response(self.OutputSerializer(sel.status_for_version(version=version)).data)


class RunScoresApi(AdminApi):
    """Per-turn values of one run under a qrels version for a measure."""

    class OutputSerializer(serializers.Serializer):
        run = serializers.CharField()
        version = serializers.CharField()
        measure = serializers.CharField()
        threshold = serializers.IntegerField()
        mean = serializers.FloatField()
        turns = serializers.DictField(child=serializers.FloatField())

    @extend_schema(
        parameters=[OpenApiParameter("version", int, required=True), MEASURE_PARAM],
        responses={200: OutputSerializer, 202: dict},
    )
    def get(self, request, pk: int):
        run = get_object_or_404(Run.objects.select_related("collection"), pk=pk)
        vid = request.query_params.get("version", "")
        if not vid.isdigit():
            raise DjangoValidationError("version: required (a qrels version id)")
        version = get_object_or_404(QrelsVersion, pk=int(vid), collection_id=run.collection_id)
        measure, computing = _measure_stored(request, version)
        if computing is not None:
            return computing
        turns = sel.per_turn_scores(run=run, version=version, measure=measure)
        out = {
            "run": run.name,
            "version": version.name,
            "measure": measure,
            "threshold": int(run.collection.relevance_threshold),
            "mean": metrics.mean(turns),
            "turns": turns,
        }
        return Response(self.OutputSerializer(out).data)


class RunUploadApi(AdminApi):
    """Upload a TREC run file (multipart); it is imported, then evaluated in the background."""

    parser_classes = [MultiPartParser, FormParser]

    class InputSerializer(serializers.Serializer):
        collection = serializers.IntegerField()
        file = serializers.FileField()
        name = serializers.CharField(required=False, allow_blank=True)
        test_set = serializers.IntegerField(required=False, allow_null=True)

    class OutputSerializer(serializers.Serializer):
        run = serializers.IntegerField()
        name = serializers.CharField()
        job = _JobSerializer()

    @extend_schema(request={"multipart/form-data": InputSerializer}, responses={201: OutputSerializer})
    def post(self, request):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        d = data.validated_data
        collection = get_object_or_404(Collection, pk=d["collection"])
        test_set = get_object_or_404(TestSet, pk=d["test_set"]) if d.get("test_set") else None
        try:
            run, job = svc.run_upload(
                collection=collection,
                uploaded=d["file"],
                name=d.get("name") or None,
                test_set=test_set,
                user=request.user,
            )
        except DjangoValidationError as exc:
            # The importer's every message, also as a list: the one shape of a failed file (docs/api.md).
            raise serializers.ValidationError({"detail": "; ".join(exc.messages), "errors": exc.messages}) from exc
        job.refresh_from_db()
        return Response(self.OutputSerializer({"run": run.pk, "name": run.name, "job": job}).data, status=201)


class _RunSerializer(serializers.ModelSerializer):
    test_set_name = serializers.CharField(source="test_set.name", default=None, read_only=True)

    class Meta:
        model = Run
        fields = ["id", "collection", "name", "description", "source_file", "test_set", "test_set_name", "created_at"]
        ref_name = "RunListItem"


class RunListApi(AdminApi, generics.ListAPIView):
    """Runs, filterable by ``collection`` and ``test_set`` (ids), by collection then name."""

    serializer_class = _RunSerializer
    filterset_fields = ["collection", "test_set"]
    queryset = Run.objects.select_related("test_set").order_by("collection_id", "name", "id")


class RunsApi(RunUploadApi, RunListApi):
    """``/api/evaluation/runs/``: GET lists runs (``?collection=<id>``), POST uploads one (multipart)."""


class JobStatusApi(AdminApi):
    """Progress of an evaluation job."""

    @extend_schema(responses={200: _JobSerializer})
    def get(self, request, pk: int):
        return Response(_JobSerializer(get_object_or_404(EvaluationJob, pk=pk)).data)


class RecomputeApi(AdminApi):
    """Queue a full recompute of every run under every qrels version of a collection."""

    @extend_schema(request=None, responses={202: _JobSerializer})
    def post(self, request, pk: int):
        collection = get_object_or_404(Collection, pk=pk)
        job = svc.evaluation_job_create(collection=collection, kind=EvaluationJob.Kind.FULL, user=request.user)
        job.refresh_from_db()
        return Response(_JobSerializer(job).data, status=status.HTTP_202_ACCEPTED)


class SignificanceApi(AdminApi):
    """Paired t-test and randomization test between two runs on per-turn scores."""

    class InputSerializer(serializers.Serializer):
        a = serializers.IntegerField()
        b = serializers.IntegerField()
        version = serializers.IntegerField()
        measure = serializers.CharField(required=False, default=metrics.HEADLINE)
        permutations = serializers.IntegerField(required=False, default=10_000, min_value=100, max_value=100_000)
        seed = serializers.IntegerField(required=False, default=42)

    class OutputSerializer(serializers.Serializer):
        n = serializers.IntegerField()
        mean_a = serializers.FloatField(allow_null=True)
        mean_b = serializers.FloatField(allow_null=True)
        mean_diff = serializers.FloatField(allow_null=True)
        t_statistic = serializers.FloatField(allow_null=True)
        t_pvalue = serializers.FloatField(allow_null=True)
        randomization_pvalue = serializers.FloatField(allow_null=True)
        permutations = serializers.IntegerField()
        seed = serializers.IntegerField()

    @extend_schema(parameters=[InputSerializer], responses={200: OutputSerializer, 202: dict})
    def get(self, request):
        data = self.InputSerializer(data=request.query_params)
        data.is_valid(raise_exception=True)
        d = data.validated_data
        version = get_object_or_404(QrelsVersion, pk=d["version"])
        a = get_object_or_404(Run, pk=d["a"], collection_id=version.collection_id)
        b = get_object_or_404(Run, pk=d["b"], collection_id=version.collection_id)
        (measure,), computing = _measures_stored(request, [version], [d["measure"]])
        if computing is not None:
            return computing
        res = stats.paired_compare(
            sel.per_turn_scores(run=a, version=version, measure=measure),
            sel.per_turn_scores(run=b, version=version, measure=measure),
            permutations=d["permutations"],
            seed=d["seed"],
        )
        return Response(self.OutputSerializer(res.as_dict()).data)


class BaselineSignificanceApi(AdminApi):
    """Every run of the version's collection against a baseline run on chosen measures: mean, baseline mean, turns
    better and worse, p of a paired test, p corrected over the runs of each measure, and whether it rejects."""

    class InputSerializer(serializers.Serializer):
        version = serializers.IntegerField()
        baseline = serializers.IntegerField()
        measures = serializers.CharField(required=False, default=metrics.HEADLINE, help_text="comma-separated")
        test = serializers.ChoiceField(choices=list(significance.TESTS), default=significance.DEFAULT_TEST)
        correction = serializers.ChoiceField(
            choices=list(significance.CORRECTIONS), default=significance.DEFAULT_CORRECTION
        )
        alpha = serializers.FloatField(required=False, default=significance.DEFAULT_ALPHA, min_value=0.0, max_value=1.0)

    class RowSerializer(serializers.Serializer):
        run = serializers.CharField()
        measure = serializers.CharField()
        n = serializers.IntegerField()
        mean = serializers.FloatField(allow_null=True)
        baseline_mean = serializers.FloatField(allow_null=True)
        better = serializers.IntegerField()
        worse = serializers.IntegerField()
        pvalue = serializers.FloatField(allow_null=True)
        corrected = serializers.FloatField(allow_null=True)
        reject = serializers.BooleanField()

    class OutputSerializer(serializers.Serializer):
        version = serializers.CharField()
        baseline = serializers.CharField()
        measures = serializers.ListField(child=serializers.CharField())
        test = serializers.CharField()
        correction = serializers.CharField()
        alpha = serializers.FloatField()
        resamples = serializers.IntegerField()
        seed = serializers.IntegerField()
        threshold = serializers.IntegerField()
        rows = serializers.ListField(child=serializers.DictField())

    @extend_schema(parameters=[InputSerializer], responses={200: OutputSerializer, 202: dict})
    def get(self, request):
        data = self.InputSerializer(data=request.query_params)
        data.is_valid(raise_exception=True)
        d = data.validated_data
        significance.check(test=d["test"], correction=d["correction"], alpha=d["alpha"])
        version = get_object_or_404(QrelsVersion.objects.select_related("collection"), pk=d["version"])
        baseline = Run.objects.filter(pk=d["baseline"], collection_id=version.collection_id).first()
        if baseline is None:
            raise significance.SignificanceError("baseline", f"no run {d['baseline']} in {version.collection}")
        measures, computing = _measures_stored(
            request, [version], significance.measures_parse(d["measures"]), field="measures"
        )
        if computing is not None:
            return computing
        out = sel.baseline_comparison(
            version=version,
            baseline=baseline,
            measures=measures,
            test=d["test"],
            correction=d["correction"],
            alpha=d["alpha"],
        )
        out["rows"] = [self.RowSerializer(r).data for r in out["rows"]]
        return Response(self.OutputSerializer(out).data)


class StabilityApi(AdminApi):
    """Kendall's tau between the system rankings of two qrels versions, and the swapped pairs."""

    class InputSerializer(serializers.Serializer):
        before = serializers.IntegerField()
        after = serializers.IntegerField()
        measure = serializers.CharField(required=False, default=metrics.HEADLINE)

    class OutputSerializer(serializers.Serializer):
        tau = serializers.FloatField(allow_null=True)
        pvalue = serializers.FloatField(allow_null=True)
        n = serializers.IntegerField()
        swapped = serializers.ListField(child=serializers.DictField())
        tied = serializers.ListField(child=serializers.ListField(child=serializers.CharField()))

    @extend_schema(parameters=[InputSerializer], responses={200: OutputSerializer, 202: dict})
    def get(self, request):
        data = self.InputSerializer(data=request.query_params)
        data.is_valid(raise_exception=True)
        d = data.validated_data
        before = get_object_or_404(QrelsVersion, pk=d["before"])
        after = get_object_or_404(QrelsVersion, pk=d["after"], collection_id=before.collection_id)
        (measure,), computing = _measures_stored(request, [before, after], [d["measure"]])
        if computing is not None:
            return computing
        names = dict(Run.objects.filter(collection_id=before.collection_id).values_list("pk", "name"))
        mb = {names[r]: v[measure] for r, v in sel.score_means(version=before, measures=[measure]).items() if v}
        ma = {names[r]: v[measure] for r, v in sel.score_means(version=after, measures=[measure]).items() if v}
        return Response(self.OutputSerializer(stats.kendall_tau(mb, ma)).data)
