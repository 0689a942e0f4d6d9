"""REST API for adjudication: make the queue of two versions' disagreements (admins), read it and set final grades
(admins and assessors)."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from ecast.core.permissions import IsAssessorOrAdmin
from ecast.core.rest import AdminApi
from evaluation.models import QrelsVersion
from judging.relevance import adjudication as adj


class ProgressSerializer(serializers.Serializer):
    done = serializers.IntegerField(help_text="Disagreements with a final grade")
    total = serializers.IntegerField(help_text="Disagreements queued when the adjudication was made")


class AdjudicationCreateApi(AdminApi):
    """Queue the items versions A and B grade differently and make "adjudicated: A vs B" (admins); the adjudication
    of A and B already made is returned as it is."""

    class InputSerializer(serializers.Serializer):
        a = serializers.IntegerField(help_text="Qrels version A (the new version's parent)")
        b = serializers.IntegerField(help_text="Qrels version B")

    class OutputSerializer(serializers.Serializer):
        version = serializers.IntegerField(help_text="The adjudicated qrels version")
        name = serializers.CharField()
        a = serializers.CharField()
        b = serializers.CharField()
        progress = ProgressSerializer()

    @extend_schema(request=InputSerializer, responses={201: OutputSerializer})
    def post(self, request):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        a = get_object_or_404(QrelsVersion, pk=data.validated_data["a"])
        b = get_object_or_404(QrelsVersion, pk=data.validated_data["b"])
        made = adj.adjudication_create(a=a, b=b, created_by=request.user)
        out = {
            "version": made.version_id,
            "name": made.version.name,
            "a": a.name,
            "b": b.name,
            "progress": adj.adjudication_progress(adjudication=made),
        }
        return Response(self.OutputSerializer(out).data, status=status.HTTP_201_CREATED)


class AdjudicationApi(APIView):
    """An adjudication's progress and its next waiting items with both grades (admins and assessors)."""

    permission_classes = [IsAuthenticated, IsAssessorOrAdmin]

    class OutputSerializer(serializers.Serializer):
        version = serializers.IntegerField()
        name = serializers.CharField()
        a = serializers.CharField()
        b = serializers.CharField()
        progress = ProgressSerializer()
        items = serializers.ListField(child=serializers.DictField(), help_text="The next waiting items")

    @extend_schema(responses={200: OutputSerializer})
    def get(self, request, pk: int):
        made = adj.adjudication_for_version(version_id=pk)
        out = {
            "version": made.version_id,
            "name": made.version.name,
            "a": made.version_a.name,
            "b": made.version_b.name,
            "progress": adj.adjudication_progress(adjudication=made),
            "items": adj.adjudication_batch(adjudication=made)["items"],
        }
        return Response(self.OutputSerializer(out).data)


class AdjudicationSubmitApi(APIView):
    """Set an item's final grade (0–4, "a" or "b" for that version's grade) or take it back (null); repeating the
    stored grade changes nothing (admins and assessors)."""

    permission_classes = [IsAuthenticated, IsAssessorOrAdmin]

    class InputSerializer(serializers.Serializer):
        item = serializers.IntegerField()
        # Checked by the service, which names what it got: 0–4, "a", "b" or null.
        grade = serializers.JSONField(allow_null=True)

    class OutputSerializer(serializers.Serializer):
        item = serializers.IntegerField()
        grade = serializers.IntegerField(allow_null=True)
        changed = serializers.BooleanField()
        progress = ProgressSerializer()

    @extend_schema(request=InputSerializer, responses={200: OutputSerializer})
    def post(self, request, pk: int):
        made = adj.adjudication_for_version(version_id=pk)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        item = adj.adjudication_item(adjudication=made, pk=data.validated_data["item"])
        item, changed = adj.adjudication_submit(item=item, grade=data.validated_data["grade"], user=request.user)
        out = {
            "item": item.pk,
            "grade": item.grade,
            "changed": changed,
            "progress": adj.adjudication_progress(adjudication=made),
        }
        return Response(self.OutputSerializer(out).data)
