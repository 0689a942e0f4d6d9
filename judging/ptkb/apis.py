"""REST API of PTKB assessment tasks: admins create tasks and read their progress; assessors submit a turn."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from ecast.core.permissions import IsAssessor
from ecast.core.rest import AdminApi
from ecast.models import Collection
from judging.ptkb import selectors as sel
from judging.ptkb import services as svc
from judging.relevance import selectors as relevance_sel
from judging.relevance.qrels_export import AGGREGATIONS


class TaskOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    collection = serializers.CharField(source="collection.ptkb_source.name", help_text="The iKAT collection")
    ptkb_collection = serializers.CharField(source="collection.name", help_text="Its PTKB companion")
    qrels_version = serializers.IntegerField(source="target_version_id", help_text="Where the judgments go")
    status = serializers.CharField()
    assessors_per_pair = serializers.IntegerField()
    turns = serializers.IntegerField(source="stats.turns")
    statements = serializers.IntegerField(source="stats.pairs")
    turn_filter = serializers.ListField(child=serializers.CharField())


class PtkbTaskCreateApi(AdminApi):
    """Create a PTKB assessment task for an iKAT collection: every turn, or the turn ids given (admins)."""

    class InputSerializer(serializers.Serializer):
        collection = serializers.IntegerField()
        turn_ids = serializers.ListField(child=serializers.CharField(), required=False, allow_null=True, default=None)
        name = serializers.CharField(required=False, allow_blank=True, default="")
        assessors_per_pair = serializers.IntegerField(default=1, min_value=1, max_value=10)
        aggregation = serializers.ChoiceField(choices=list(AGGREGATIONS), default="majority")

    @extend_schema(request=InputSerializer, responses={201: TaskOutputSerializer})
    def post(self, request):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        pool = svc.ptkb_task_create(
            collection=get_object_or_404(Collection, pk=v["collection"]),
            turn_ids=v["turn_ids"],
            name=v["name"],
            assessors_per_pair=v["assessors_per_pair"],
            aggregation=v["aggregation"],
            created_by=request.user,
        )
        return Response(TaskOutputSerializer(pool).data, status=status.HTTP_201_CREATED)


class PtkbTaskDetailApi(AdminApi):
    """One PTKB task with its progress: turns and statements judged, relevant marks, per assessor (admins)."""

    class OutputSerializer(TaskOutputSerializer):
        progress = serializers.DictField()

    @extend_schema(responses={200: OutputSerializer})
    def get(self, request, pk: int):
        pool = sel.ptkb_task_get(pk=pk)
        pool.progress = sel.ptkb_task_progress(pool=pool)  # type: ignore[attr-defined]
        return Response(self.OutputSerializer(pool).data)


class PtkbTurnSubmitApi(APIView):
    """Submit one turn of the caller's PTKB topic: the statements listed are relevant (1), the rest not (0)."""

    permission_classes = [IsAuthenticated, IsAssessor]

    class InputSerializer(serializers.Serializer):
        turn = serializers.CharField(help_text="Turn id, e.g. 9-1_3")
        relevant = serializers.ListField(child=serializers.IntegerField(min_value=1), allow_empty=True)

    class OutputSerializer(serializers.Serializer):
        turn = serializers.CharField()
        changed = serializers.IntegerField(help_text="Statements whose grade this submit changed")
        relevant = serializers.IntegerField()
        statements = serializers.IntegerField()
        progress = serializers.DictField(child=serializers.IntegerField())
        completed = serializers.BooleanField()

    @extend_schema(request=InputSerializer, responses={200: OutputSerializer})
    def post(self, request, pk: int):
        assignment = relevance_sel.assignment_for(user=request.user, pk=pk)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        result = svc.ptkb_turn_submit(
            assignment=assignment,
            turn_id=data.validated_data["turn"],
            relevant=data.validated_data["relevant"],
            assessor=request.user,
        )
        assignment.refresh_from_db(fields=["completed_at"])
        out = {
            "turn": data.validated_data["turn"],
            **result,
            "progress": sel.ptkb_assignment_progress(assignment=assignment),
            "completed": assignment.completed_at is not None,
        }
        return Response(self.OutputSerializer(out).data)
