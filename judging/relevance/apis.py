"""REST API for relevance judging (token or session auth; one APIView per operation)."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.http import StreamingHttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.pagination import PageNumberPagination
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from ecast.core.permissions import IsAssessor
from ecast.core.rest import AdminApi, JobHealthFields
from ecast.models import Collection
from evaluation.adjudication import DEFAULT_STRATEGY, STRATEGIES
from evaluation.models import QrelsVersion, Run
from judging.models import Pool, PoolPair
from judging.relevance import ordering, pools, versions
from judging.relevance import selectors as sel
from judging.relevance import services as svc
from judging.relevance.qrels_export import AGGREGATIONS, iter_qrels_chunks


class PoolOutputSerializer(JobHealthFields, serializers.Serializer):
    job_kind = pools.KIND
    id = serializers.IntegerField()
    name = serializers.CharField()
    kind = serializers.CharField(help_text='"passages" (graded 0–4) or "ptkb" (PTKB statements, 0/1: a PTKB task)')
    collection = serializers.CharField(source="collection.name")
    qrels_version = serializers.CharField(source="qrels_version.name")
    target_version = serializers.CharField(source="target_version.name", allow_null=True, default=None)
    runs = serializers.SerializerMethodField()
    depth = serializers.IntegerField()
    text_only = serializers.BooleanField(help_text="Only passages with text were pooled, depth counted over them.")
    cluster_near_duplicates = serializers.BooleanField()
    assessors_per_pair = serializers.IntegerField()
    aggregation = serializers.CharField()
    strategy = serializers.CharField(help_text="Judging order: " + ", ".join(STRATEGIES))
    prior_version = serializers.CharField(source="prior_version.name", allow_null=True, default=None)
    status = serializers.CharField()
    error = serializers.CharField()
    stats = serializers.DictField()

    def get_runs(self, pool: Pool) -> list[str]:
        return sorted(r.name for r in pool.runs.all())


class PoolListApi(AdminApi):
    """All relevance pools (admins)."""

    @extend_schema(responses={200: PoolOutputSerializer(many=True)})
    def get(self, request):
        return Response(PoolOutputSerializer(sel.pool_list(), many=True).data)


class PoolSourceSerializer(serializers.Serializer):
    """What a pool is made from: runs, the qrels version that decides "judged", depth and turns."""

    collection = serializers.IntegerField()
    qrels_version = serializers.IntegerField(
        required=False,
        allow_null=True,
        default=None,
        help_text='Required when the collection has qrels; without, the pool starts an empty "judged here" version',
    )
    runs = serializers.ListField(child=serializers.IntegerField(), allow_empty=False)
    depth = serializers.IntegerField(default=3, min_value=1, max_value=pools.MAX_DEPTH)
    turn_ids = serializers.ListField(child=serializers.CharField(), required=False, allow_null=True, default=None)


def _pool_sources(v: dict[str, Any]) -> tuple[Collection, QrelsVersion | None, list[Run]]:
    collection = get_object_or_404(Collection, pk=v["collection"])
    version = None if v["qrels_version"] is None else get_object_or_404(QrelsVersion, pk=v["qrels_version"])
    runs = list(Run.objects.filter(pk__in=v["runs"]))
    if len(runs) != len(set(v["runs"])):
        raise ValidationError("runs: unknown run id")
    return collection, version, runs


def _prior_version(pk: int | None) -> QrelsVersion | None:
    if pk is None:
        return None
    version = QrelsVersion.objects.filter(pk=pk).first()
    if version is None:
        raise ValidationError(f"prior_version: unknown qrels version id {pk}")
    return version


class PoolPreviewApi(AdminApi):
    """What a pool would hold, before it is made (admins): its unjudged pairs and passages, how many have text, and
    the pool "only passages with text" would make (depth counted over passages with text). Stores nothing."""

    class TextOnlySerializer(serializers.Serializer):
        pairs = serializers.IntegerField()
        passages = serializers.IntegerField()
        turns = serializers.IntegerField()
        already_judged_skipped = serializers.IntegerField()
        deepest_rank = serializers.IntegerField(help_text="The deepest rank taken to find depth passages with text.")

    class OutputSerializer(serializers.Serializer):
        depth = serializers.IntegerField()
        runs = serializers.IntegerField()
        turns = serializers.IntegerField()
        pairs = serializers.IntegerField()
        pairs_with_text = serializers.IntegerField()
        passages = serializers.IntegerField()
        passages_with_text = serializers.IntegerField()
        already_judged_skipped = serializers.IntegerField()
        text_only = serializers.DictField()
        text_only_default = serializers.BooleanField()

    @extend_schema(
        parameters=[
            OpenApiParameter("collection", int, required=True),
            OpenApiParameter(
                "qrels_version", int, description="The version that decides 'judged'; required when there is one"
            ),
            OpenApiParameter("runs", int, many=True, required=True, description="Repeat: runs=1&runs=2"),
            OpenApiParameter("depth", int),
            OpenApiParameter("turn_ids", str, many=True, description="Repeat, or one value separated by , or spaces"),
        ],
        responses={200: OutputSerializer},
    )
    def get(self, request):
        params = request.query_params.copy()
        turn_ids = [t for value in params.getlist("turn_ids") for t in value.replace(",", " ").split()]
        params.setlist("turn_ids", turn_ids)
        data = PoolSourceSerializer(data=params)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        collection, version, runs = _pool_sources(v)
        preview = pools.pool_preview(
            collection=collection, qrels_version=version, runs=runs, depth=v["depth"], turn_ids=v["turn_ids"] or None
        )
        return Response(self.OutputSerializer(preview).data)


class PoolCreateApi(AdminApi):
    """Create a depth-k pool of unjudged (turn, passage) pairs from runs (admins); it feeds "<version> + <name>"."""

    class InputSerializer(PoolSourceSerializer):
        name = serializers.CharField(required=False, allow_blank=True, default="")
        text_only = serializers.BooleanField(
            required=False,
            allow_null=True,
            default=None,
            help_text="Only passages with text, depth counted over them; default: on when any pooled passage has text",
        )
        feed_version = serializers.BooleanField(
            default=True,
            help_text='Judgments go into the derived version "<qrels_version> + <name>", created if missing',
        )
        cluster_near_duplicates = serializers.BooleanField(default=False)
        cluster_threshold = serializers.FloatField(default=0.9, min_value=0.01, max_value=1.0)
        assessors_per_pair = serializers.IntegerField(default=1, min_value=1, max_value=10)
        aggregation = serializers.ChoiceField(choices=list(AGGREGATIONS), default="majority")
        strategy = serializers.ChoiceField(
            choices=list(STRATEGIES), default=DEFAULT_STRATEGY, help_text="Judging order of each topic's pairs"
        )
        prior_version = serializers.IntegerField(
            required=False, allow_null=True, default=None, help_text="MM / MM-NS: a qrels version seeding the arms"
        )

    @extend_schema(request=InputSerializer, responses={202: PoolOutputSerializer})
    def post(self, request):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        collection, version, runs = _pool_sources(v)
        pool = pools.pool_create_start(
            collection=collection,
            qrels_version=version,
            runs=runs,
            depth=v["depth"],
            turn_ids=v["turn_ids"],
            name=v["name"],
            text_only=v["text_only"],
            feed_version=v["feed_version"],
            cluster_near_duplicates=v["cluster_near_duplicates"],
            cluster_threshold=v["cluster_threshold"],
            assessors_per_pair=v["assessors_per_pair"],
            aggregation=v["aggregation"],
            strategy=v["strategy"],
            prior_version=_prior_version(v["prior_version"]),
            created_by=request.user,
        )
        # 202: the worker computes the pairs; poll the pool until its status is "open" (or "failed").
        return Response(PoolOutputSerializer(sel.pool_get(pk=pool.pk)).data, status=status.HTTP_202_ACCEPTED)


class PoolDetailApi(AdminApi):
    """One pool with statistics, per-topic progress and the grade distribution of its judgments (admins)."""

    class OutputSerializer(PoolOutputSerializer):
        topics = serializers.ListField(child=serializers.DictField())
        judgments = serializers.DictField()
        found_curve = serializers.DictField(help_text="Relevant pairs found against judgments made, in order")

    @extend_schema(responses={200: OutputSerializer})
    def get(self, request, pk: int):
        pool = sel.pool_get(pk=pk)
        pool.topics = sel.pool_topic_progress(pool=pool)  # type: ignore[attr-defined]
        pool.judgments = sel.pool_judgment_summary(pool=pool)  # type: ignore[attr-defined]
        pool.found_curve = ordering.pool_found_curve(pool=pool)  # type: ignore[attr-defined]
        return Response(self.OutputSerializer(pool).data)


class PoolPairsApi(AdminApi):
    """A pool's pairs with runs, cluster head and every assessor's grade (admins); paginated, 100 per page."""

    class PairSerializer(serializers.Serializer):
        turn_id = serializers.CharField()
        passage_id = serializers.CharField()
        best_rank = serializers.IntegerField()
        runs = serializers.ListField(child=serializers.CharField())
        has_text = serializers.BooleanField()
        cluster_head = serializers.CharField(allow_null=True)
        judgments = serializers.ListField(child=serializers.DictField())
        aggregated = serializers.IntegerField(allow_null=True)

    @extend_schema(
        parameters=[
            OpenApiParameter("turn", str, description="Only this turn id, e.g. 81_2"),
            OpenApiParameter("only", str, enum=["judged", "unjudged", "disagreements"]),
            OpenApiParameter("page", int),
        ],
        responses={200: PairSerializer(many=True)},
    )
    def get(self, request, pk: int):
        pool = sel.pool_get(pk=pk)
        only = request.query_params.get("only", "")
        if only not in ("", "judged", "unjudged", "disagreements"):
            raise ValidationError("only must be judged, unjudged or disagreements")
        rows = sel.pool_pairs(pool=pool, turn_id=request.query_params.get("turn", ""), only=only)
        paginator = PageNumberPagination()
        paginator.page_size = 100
        page = paginator.paginate_queryset(rows, request, view=self)  # type: ignore[arg-type]
        return paginator.get_paginated_response(self.PairSerializer(page, many=True).data)


class AssignmentOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    pool = serializers.IntegerField(source="pool_id")
    pool_name = serializers.CharField(source="pool.name")
    topic_id = serializers.CharField(source="conversation.topic_id")
    slot = serializers.IntegerField()
    completed = serializers.SerializerMethodField()
    progress = serializers.SerializerMethodField()

    def get_completed(self, a) -> bool:
        return a.completed_at is not None

    def get_progress(self, a) -> dict[str, int]:
        return sel.assignment_progress(assignment=a)


class PoolTakeApi(APIView):
    """Take (lease) the next topic of a pool that still needs an assessor, or get back one's unfinished topic."""

    permission_classes = [IsAuthenticated, IsAssessor]

    @extend_schema(request=None, responses={200: AssignmentOutputSerializer})
    def post(self, request, pk: int):
        open_pools = {p.pk: p for p in sel.pools_open_for(user=request.user)}
        if pk not in open_pools:
            raise NotFound("No such open pool for you.")
        assignment = svc.assignment_take(pool=open_pools[pk], assessor=request.user)
        return Response(AssignmentOutputSerializer(assignment).data)


class AssignmentListApi(APIView):
    """The caller's own topic leases with progress."""

    permission_classes = [IsAuthenticated, IsAssessor]

    @extend_schema(responses={200: AssignmentOutputSerializer(many=True)})
    def get(self, request):
        return Response(AssignmentOutputSerializer(sel.assignments_for(user=request.user), many=True).data)


class AssignmentItemsApi(APIView):
    """The conversation and the pairs of one of the caller's topics, with the caller's own grades."""

    permission_classes = [IsAuthenticated, IsAssessor]

    class OutputSerializer(serializers.Serializer):
        turns = serializers.ListField(child=serializers.DictField())
        pairs = serializers.ListField(child=serializers.DictField())
        ptkb = serializers.ListField(child=serializers.DictField(), help_text="The user's PTKB (iKAT), numbered.")
        ordered = serializers.BooleanField(help_text="The pool's order adapts to the judgments (MTF, MM-NS)")
        strategy = serializers.CharField()
        progress = serializers.DictField(child=serializers.IntegerField())

    @extend_schema(responses={200: OutputSerializer})
    def get(self, request, pk: int):
        assignment = sel.assignment_for(user=request.user, pk=pk)
        data = sel.assignment_items(assignment=assignment)
        data["progress"] = sel.assignment_progress(assignment=assignment)
        return Response(self.OutputSerializer(data).data)


class JudgmentSubmitApi(APIView):
    """Grade one pair of the caller's topic (0–4); repeating the same submit stores nothing new."""

    permission_classes = [IsAuthenticated, IsAssessor]

    class InputSerializer(serializers.Serializer):
        pair = serializers.IntegerField()
        grade = serializers.IntegerField(min_value=0, max_value=4)

    class OutputSerializer(serializers.Serializer):
        pair = serializers.IntegerField()
        grade = serializers.IntegerField()
        changed = serializers.BooleanField()
        progress = serializers.DictField(child=serializers.IntegerField())
        completed = serializers.BooleanField()
        queue = serializers.ListField(
            child=serializers.IntegerField(),
            help_text="Adaptive pools: the topic's unjudged pairs in judging order, the first to judge next; empty for"
            " depth-first pools, whose order never changes",
        )

    @extend_schema(request=InputSerializer, responses={200: OutputSerializer})
    def post(self, request, pk: int):
        assignment = sel.assignment_for(user=request.user, pk=pk)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        pair = get_object_or_404(
            PoolPair.objects.select_related("turn"), pk=data.validated_data["pair"], pool_id=assignment.pool_id
        )
        judgment, changed = svc.judgment_submit(
            assignment=assignment, pair=pair, grade=data.validated_data["grade"], assessor=request.user
        )
        assignment.refresh_from_db(fields=["completed_at"])
        out = {
            "pair": pair.pk,
            "grade": judgment.grade,
            "changed": changed,
            "progress": sel.assignment_progress(assignment=assignment),
            "completed": assignment.completed_at is not None,
            # Only an adaptive order changes with a grade; depth-first pages keep the order they loaded.
            "queue": ordering.assignment_queue(assignment=assignment) if ordering.is_ordered(assignment.pool) else [],
        }
        return Response(self.OutputSerializer(out).data)


class QrelsVersionDeriveApi(AdminApi):
    """Create a derived qrels version ("original + new") that a pool's judgments are written into (admins)."""

    class InputSerializer(serializers.Serializer):
        parent = serializers.IntegerField()  # type: ignore[assignment]
        pool = serializers.IntegerField()
        name = serializers.CharField(required=False, allow_blank=True, default="")

    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        name = serializers.CharField()
        parent = serializers.CharField(source="parent.name")  # type: ignore[assignment]
        rows = serializers.IntegerField()

    @extend_schema(request=InputSerializer, responses={201: OutputSerializer})
    def post(self, request):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        parent = get_object_or_404(QrelsVersion, pk=data.validated_data["parent"])
        pool = get_object_or_404(Pool, pk=data.validated_data["pool"])
        version = versions.qrels_version_derive(
            parent=parent, pool=pool, name=data.validated_data["name"], created_by=request.user
        )
        version.rows = version.qrels.count()  # type: ignore[attr-defined]
        return Response(self.OutputSerializer(version).data, status=status.HTTP_201_CREATED)


AGGREGATION_PARAM = OpenApiParameter(
    "aggregation", str, enum=list(AGGREGATIONS), description="How several assessors' grades become one"
)


def _aggregation(request) -> str:
    value = request.query_params.get("aggregation", "majority")
    if value not in AGGREGATIONS:
        raise ValidationError(f"aggregation must be one of {', '.join(AGGREGATIONS)}")
    return value


class QrelsExportApi(AdminApi):
    """A qrels version in TREC format, streamed (admins)."""

    @extend_schema(parameters=[AGGREGATION_PARAM], responses={(200, "text/plain"): OpenApiTypes.STR})
    def get(self, request, pk: int):
        version = get_object_or_404(QrelsVersion.objects.select_related("collection"), pk=pk)
        aggregation = _aggregation(request)
        return qrels_streaming_response(version=version, aggregation=aggregation)


class QrelsSidecarApi(AdminApi):
    """The JSON sidecar of a qrels export: threshold, pools (runs, depth), assessors, counts (admins)."""

    @extend_schema(parameters=[AGGREGATION_PARAM], responses={200: OpenApiTypes.OBJECT})
    def get(self, request, pk: int):
        version = get_object_or_404(QrelsVersion.objects.select_related("collection", "parent"), pk=pk)
        aggregation = _aggregation(request)
        return Response(sel.qrels_export_sidecar(version=version, aggregation=aggregation))


def export_file_name(version: QrelsVersion, aggregation: str, ext: str) -> str:
    """A safe, descriptive download name."""
    base = f"{version.collection.name}-{version.name}-{aggregation}"
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in base) + ext


def qrels_streaming_response(*, version: QrelsVersion, aggregation: str) -> StreamingHttpResponse:
    """The streamed qrels download shared by the page and the API."""
    chunks = iter_qrels_chunks(sel.qrels_export_rows(version=version, aggregation=aggregation))
    response = StreamingHttpResponse(chunks, content_type="text/plain; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{export_file_name(version, aggregation, ".qrels")}"'
    return response
