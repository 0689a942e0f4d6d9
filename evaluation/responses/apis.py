"""REST API of response-level judging: runs of answers, answers with their sentences, nugget banks with their
nuggets, label sets with their labels, scores, and the downloads. One APIView per resource and operation.

Roles: runs, answers and nugget banks are what assessors judge, so assessors and admins read them; label sets, their
labels and their scores are evaluation data, admins only like every evaluation endpoint (and an assessor judging
blind must not be able to read the LLM's labels of the same items). Admins delete runs, banks and label sets.
Raters get 403, anonymous callers 401.
"""

from __future__ import annotations

from typing import Any

from django.db.models import F, Prefetch
from django.http import StreamingHttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.pagination import PageNumberPagination
from rest_framework.permissions import SAFE_METHODS, BasePermission, IsAuthenticated
from rest_framework.response import Response as ApiResponse
from rest_framework.views import APIView

from ecast.core.pages import query_id
from ecast.core.permissions import is_admin, is_assessor
from ecast.core.rest import AUTHENTICATION, AdminApi
from evaluation.models import (
    CitationLabel,
    Nugget,
    NuggetAssignment,
    NuggetBank,
    Response,
    ResponseLabelSet,
    ResponseRun,
    ResponseSentence,
)
from evaluation.responses import exports, scores, services
from evaluation.responses import selectors as sel

COLLECTION_PARAM = OpenApiParameter("collection", int, description="only this collection's")
PAGE_PARAM = OpenApiParameter("page", int)
PAGE_SIZE = 100


class AssessorsReadAdminsWrite(BasePermission):
    """Reads for assessors and admins; every other method for admins."""

    message = "Only assessors and admins may read this; only admins may change it."

    def has_permission(self, request: Any, view: Any) -> bool:
        if request.method in SAFE_METHODS:
            return is_admin(request.user) or is_assessor(request.user)
        return is_admin(request.user)


class SharedApi(APIView):
    authentication_classes = AUTHENTICATION
    permission_classes = [IsAuthenticated, AssessorsReadAdminsWrite]


def _collection_filter(request: Any) -> int | None:
    return query_id(request.query_params, "collection")


def _listed(request: Any, rows: Any, output: type[serializers.Serializer]) -> ApiResponse:
    """A list API's answer: ``rows`` of the ``?collection=`` asked for (all when none), as ``output``."""
    cid = _collection_filter(request)
    return ApiResponse(output(rows if cid is None else rows.filter(collection_id=cid), many=True).data)


def _paged(request: Any, view: APIView, rows: Any, serializer: type[serializers.Serializer]) -> ApiResponse:
    paginator = PageNumberPagination()
    paginator.page_size = PAGE_SIZE
    page: Any = paginator.paginate_queryset(rows, request, view=view)
    return paginator.get_paginated_response(serializer(page, many=True).data)


# --- runs and answers ----------------------------------------------------------------------------------------------


class RunOutput(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    collection = serializers.IntegerField(source="collection_id")
    name = serializers.CharField()
    description = serializers.CharField()
    source_file = serializers.CharField()
    source_format = serializers.CharField()
    import_report = serializers.JSONField()
    provenance = serializers.JSONField()
    created_at = serializers.DateTimeField()
    responses = serializers.IntegerField(source="n_responses")


class RunListApi(SharedApi):
    """Response runs (``?collection=`` to filter), with their number of answers."""

    @extend_schema(parameters=[COLLECTION_PARAM], responses={200: RunOutput(many=True)})
    def get(self, request):
        return _listed(request, sel.response_run_list(), RunOutput)


class RunDetailApi(SharedApi):
    """One response run (GET); delete it with its answers and every label given to them (DELETE, admins)."""

    @extend_schema(responses={200: RunOutput})
    def get(self, request, pk: int):
        return ApiResponse(RunOutput(get_object_or_404(sel.response_run_list(), pk=pk)).data)

    @extend_schema(responses={204: None})
    def delete(self, request, pk: int):
        services.response_run_delete(run=get_object_or_404(ResponseRun, pk=pk))
        return ApiResponse(status=status.HTTP_204_NO_CONTENT)


class SentenceOutput(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    index = serializers.IntegerField()
    text = serializers.CharField()
    citations = serializers.ListField(child=serializers.CharField())


class ResponseOutput(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    run = serializers.IntegerField(source="run_id")
    turn = serializers.CharField(source="turn.turn_id")
    text = serializers.CharField()
    references = serializers.ListField(child=serializers.CharField())
    length = serializers.IntegerField(allow_null=True)
    metadata = serializers.JSONField()
    sentences = SentenceOutput(many=True)


def _responses() -> Any:
    sentences = Prefetch("sentences", queryset=ResponseSentence.objects.order_by("index"))
    return Response.objects.select_related("turn").prefetch_related(sentences)


class RunResponsesApi(SharedApi):
    """A run's answers with their sentences and citations, 100 per page."""

    @extend_schema(parameters=[PAGE_PARAM], responses={200: ResponseOutput(many=True)})
    def get(self, request, pk: int):
        run = get_object_or_404(ResponseRun, pk=pk)
        return _paged(request, self, _responses().filter(run=run).order_by("turn__turn_id"), ResponseOutput)


class ResponseDetailApi(SharedApi):
    """One answer with its sentences and citations."""

    @extend_schema(responses={200: ResponseOutput})
    def get(self, request, pk: int):
        return ApiResponse(ResponseOutput(get_object_or_404(_responses(), pk=pk)).data)


# --- nugget banks --------------------------------------------------------------------------------------------------


class NuggetOutput(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    turn = serializers.CharField(source="turn.turn_id")
    position = serializers.IntegerField()
    text = serializers.CharField()
    importance = serializers.CharField()
    grade = serializers.IntegerField(allow_null=True)
    origin = serializers.CharField()
    source_passages = serializers.ListField(child=serializers.CharField())
    external_id = serializers.CharField()
    merged_into = serializers.IntegerField(source="merged_into_id", allow_null=True)


class BankOutput(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    collection = serializers.IntegerField(source="collection_id")
    name = serializers.CharField()
    parent = serializers.IntegerField(source="parent_id", allow_null=True)  # type: ignore[assignment]  # not Field.parent
    description = serializers.CharField()
    source_file = serializers.CharField()
    provenance = serializers.JSONField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    nugget_count = serializers.IntegerField(source="n_nuggets", help_text="nuggets not merged into another")


class BankDetailOutput(BankOutput):
    nuggets = NuggetOutput(many=True, source="nugget_rows")


class BankListApi(SharedApi):
    """Nugget banks (``?collection=`` to filter), with their number of nuggets."""

    @extend_schema(parameters=[COLLECTION_PARAM], responses={200: BankOutput(many=True)})
    def get(self, request):
        return _listed(request, sel.nugget_bank_list(), BankOutput)


class BankDetailApi(SharedApi):
    """One bank with every nugget (GET); delete it (DELETE, admins; refused while a label set assigns it)."""

    @extend_schema(responses={200: BankDetailOutput})
    def get(self, request, pk: int):
        bank = get_object_or_404(sel.nugget_bank_list(), pk=pk)
        bank.nugget_rows = list(  # type: ignore[attr-defined]
            Nugget.objects.filter(bank=bank).select_related("turn").order_by("turn__turn_id", "position", "id")
        )
        return ApiResponse(BankDetailOutput(bank).data)

    @extend_schema(responses={204: None})
    def delete(self, request, pk: int):
        services.nugget_bank_delete(bank=get_object_or_404(NuggetBank, pk=pk))
        return ApiResponse(status=status.HTTP_204_NO_CONTENT)


BINARY = OpenApiResponse(OpenApiTypes.BINARY)


class BankDownloadApi(SharedApi):
    """A bank as nuggetizer nuggets JSONL: ``{"query", "qid", "nuggets": [{"text", "importance"}]}`` per turn."""

    @extend_schema(responses={200: BINARY})
    def get(self, request, pk: int) -> StreamingHttpResponse:
        return exports.bank_download(bank=get_object_or_404(NuggetBank.objects.select_related("collection"), pk=pk))


# --- label sets, labels, scores (admins) ---------------------------------------------------------------------------


class LabelSetOutput(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    collection = serializers.IntegerField(source="collection_id")
    name = serializers.CharField()
    kind = serializers.CharField()
    source = serializers.CharField()  # type: ignore[assignment]  # the output field, not Field.source
    bank = serializers.IntegerField(source="bank_id", allow_null=True)
    description = serializers.CharField()
    source_file = serializers.CharField()
    provenance = serializers.JSONField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField(help_text="moves with every label written: scores are recomputed after it")


class LabelSetDetailOutput(LabelSetOutput):
    labels = serializers.DictField(child=serializers.IntegerField(), help_text="labels by label value")
    conditions = serializers.DictField(child=serializers.IntegerField(), help_text="labels by condition")
    downloads = serializers.ListField(child=serializers.CharField())


class LabelSetListApi(AdminApi):
    """Label sets (``?collection=`` to filter)."""

    @extend_schema(parameters=[COLLECTION_PARAM], responses={200: LabelSetOutput(many=True)})
    def get(self, request):
        return _listed(request, sel.label_set_list(), LabelSetOutput)


class LabelSetDetailApi(AdminApi):
    """One label set with its counts by label and condition (GET); delete it with its labels (DELETE)."""

    @extend_schema(responses={200: LabelSetDetailOutput})
    def get(self, request, pk: int):
        label_set = get_object_or_404(sel.label_set_list(), pk=pk)
        counts = sel.label_counts(label_sets=[label_set])[label_set.pk]
        label_set.labels = dict(counts["label"])  # type: ignore[attr-defined]
        label_set.conditions = dict(counts["condition"])  # type: ignore[attr-defined]
        label_set.downloads = exports.files_for(label_set)  # type: ignore[attr-defined]
        return ApiResponse(LabelSetDetailOutput(label_set).data)

    @extend_schema(responses={204: None})
    def delete(self, request, pk: int):
        services.label_set_delete(label_set=get_object_or_404(ResponseLabelSet, pk=pk))
        return ApiResponse(status=status.HTTP_204_NO_CONTENT)


class LabelOutput(serializers.Serializer):
    id = serializers.IntegerField()
    response = serializers.IntegerField(source="response_id")
    run = serializers.CharField()
    turn = serializers.CharField()
    nugget = serializers.IntegerField(source="nugget_id", required=False, help_text="nugget-assignment sets")
    label = serializers.CharField(required=False, help_text="nugget-assignment sets")  # type: ignore[assignment]
    sentence = serializers.IntegerField(
        source="sentence_index", required=False, help_text="citation sets: the sentence's index"
    )
    passage_id = serializers.CharField(required=False, help_text="citation sets")
    support = serializers.CharField(required=False, help_text="citation sets")
    condition = serializers.CharField()
    assessor = serializers.CharField(source="assessor_name", allow_null=True)
    provenance = serializers.JSONField()
    updated_at = serializers.DateTimeField()


class LabelSetLabelsApi(AdminApi):
    """A label set's labels, 100 per page, in the order they were made."""

    @extend_schema(parameters=[PAGE_PARAM], responses={200: LabelOutput(many=True)})
    def get(self, request, pk: int):
        label_set = get_object_or_404(ResponseLabelSet, pk=pk)
        common = ["id", "condition", "provenance", "updated_at"]
        rows: Any
        if label_set.kind == ResponseLabelSet.Kind.NUGGETS:
            rows = (
                NuggetAssignment.objects.filter(label_set=label_set)
                .order_by("id")
                .values(
                    *common, "nugget_id", "label", "response_id", run=F("response__run__name"),
                    turn=F("response__turn__turn_id"), assessor_name=F("assessor__username"),
                )
            )  # fmt: skip
        else:
            rows = (
                CitationLabel.objects.filter(label_set=label_set)
                .order_by("id")
                .values(
                    *common, "passage_id", "support", response_id=F("sentence__response_id"),
                    run=F("sentence__response__run__name"), turn=F("sentence__response__turn__turn_id"),
                    sentence_index=F("sentence__index"), assessor_name=F("assessor__username"),
                )
            )  # fmt: skip
        return _paged(request, self, rows, LabelOutput)


class RunScoreOutput(serializers.Serializer):
    run_id = serializers.IntegerField()
    run = serializers.CharField()
    rank = serializers.IntegerField(allow_null=True)
    values = serializers.DictField(child=serializers.FloatField(allow_null=True))
    scored = serializers.IntegerField(help_text="responses scored (nuggets) / judged topics answered (citations)")
    labelled = serializers.IntegerField(help_text="responses with any label (nuggets) / judged topics (citations)")
    responses = serializers.IntegerField()


class ResponseScoreOutput(serializers.Serializer):
    response = serializers.IntegerField()
    run = serializers.IntegerField()
    values = serializers.DictField(child=serializers.FloatField())


class ScoresOutput(serializers.Serializer):
    label_set = serializers.IntegerField()
    kind = serializers.CharField()
    measure = serializers.CharField()
    measures = serializers.ListField(child=serializers.CharField())
    updated_at = serializers.DateTimeField()
    runs = RunScoreOutput(many=True)
    responses = ResponseScoreOutput(many=True)


class LabelSetScoresApi(AdminApi):
    """Per-run (ranked by ``?measure=``) and per-response scores of a label set, as the labels stand now.

    Nuggets (castorini/nuggetizer): V_strict, A_strict, V, A; a response is scored once all its turn's nuggets
    are labelled, a run's figure is the mean over its scored responses. Citations (TREC 2024 RAG support):
    precision and recall of first citations; a run's figure is the mean over the judged topics (unanswered = 0)."""

    @extend_schema(
        parameters=[OpenApiParameter("measure", str, enum=[*scores.NUGGET_MEASURES, *scores.CITATION_MEASURES])],
        responses={200: ScoresOutput},
    )
    def get(self, request, pk: int):
        label_set = get_object_or_404(ResponseLabelSet, pk=pk)
        measures = sel.measures_of(label_set)
        measure = request.query_params.get("measure") or measures[0]
        if measure not in measures:
            raise serializers.ValidationError({"detail": f"measure must be one of {', '.join(measures)}"})
        table = sel.label_set_scores(label_set=label_set)
        runs = sel.leaderboard(label_set=label_set, measure=measure, table=table)
        run_of = table.response_run
        body = {
            "label_set": label_set.pk,
            "kind": label_set.kind,
            "measure": measure,
            "measures": list(measures),
            "updated_at": label_set.updated_at,
            "runs": [vars(r) for r in runs],
            "responses": [
                {"response": pk, "run": run_of[pk], "values": {m: v[m] for m in measures}}
                for pk, v in sorted(table.per_response.items())
            ],
        }
        return ApiResponse(ScoresOutput(body).data)


class LabelSetDownloadApi(AdminApi):
    """A label set's files: ``assignments.jsonl`` (nuggetizer, nugget sets), ``citations.jsonl`` (TREC 2024 RAG
    support, citation sets), ``per-response.csv`` and ``per-run.csv`` (scores)."""

    @extend_schema(
        parameters=[OpenApiParameter("what", str, OpenApiParameter.PATH, enum=list(exports.LABEL_SET_FILES))],
        responses={200: BINARY},
    )
    def get(self, request, pk: int, what: str) -> StreamingHttpResponse:
        label_set = get_object_or_404(ResponseLabelSet.objects.select_related("collection"), pk=pk)
        return exports.label_set_download(label_set=label_set, what=what)
