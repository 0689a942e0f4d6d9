"""REST API for response judging: tasks (admins create them), the assessor's answers and labels, nugget banks by
hand. Assessors and admins judge and edit; raters get 403; anonymous callers 401."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from ecast.core.pages import query_id
from ecast.core.permissions import IsAssessorOrAdmin
from ecast.core.rest import AdminApi
from ecast.models import Collection, Turn
from evaluation.models import Nugget, NuggetBank, ResponseLabelSet, ResponseRun
from judging.models import ResponseTask
from judging.nuggets import banks, leasing, services
from judging.nuggets import selectors as sel


class JudgeApi(APIView):
    permission_classes = [IsAuthenticated, IsAssessorOrAdmin]


def task_for(user: Any, pk: int) -> ResponseTask:
    """A task the user may judge, or 404 (a task they may not judge is not confirmed to exist)."""
    task = ResponseTask.objects.filter(pk=pk).select_related("label_set").first()
    if task is None or not leasing.may_judge(task, user):
        raise leasing.TaskError("No such judging task open to you.", code="not_found")
    return task


class ResponseTaskOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    kind = serializers.CharField()
    collection = serializers.CharField(source="collection.name")
    condition = serializers.CharField()
    label_set = serializers.IntegerField(source="label_set_id")
    bank = serializers.IntegerField(source="bank_id", allow_null=True)
    llm_label_set = serializers.IntegerField(source="llm_label_set_id", allow_null=True)
    runs = serializers.SerializerMethodField()
    turn_filter = serializers.ListField(child=serializers.CharField())
    assessors = serializers.SerializerMethodField()
    lease_seconds = serializers.IntegerField()
    status = serializers.CharField()
    progress = serializers.SerializerMethodField()

    def get_runs(self, task: ResponseTask) -> list[str]:
        return sorted(r.name for r in task.runs.all())

    def get_assessors(self, task: ResponseTask) -> list[str]:
        return sorted(u.username for u in task.assessors.all())

    def get_progress(self, task: ResponseTask) -> dict[str, int]:
        return leasing.task_progress(task)


class TaskListApi(AdminApi):
    """Every response-judging task with its progress (admins)."""

    @extend_schema(responses={200: ResponseTaskOutputSerializer(many=True)})
    def get(self, request):
        return Response(ResponseTaskOutputSerializer(sel.task_list(), many=True).data)


class TaskCreateApi(AdminApi):
    """Create a nugget-assignment or citation-support task and the assessed label set it writes into (admins)."""

    class InputSerializer(serializers.Serializer):
        collection = serializers.IntegerField()
        kind = serializers.ChoiceField(choices=ResponseLabelSet.Kind.values)
        runs = serializers.ListField(child=serializers.IntegerField(), allow_empty=False)
        name = serializers.CharField(required=False, allow_blank=True, default="", max_length=100)
        turn_ids = serializers.ListField(child=serializers.CharField(), required=False, default=list)
        bank = serializers.IntegerField(required=False, allow_null=True, default=None)
        llm_label_set = serializers.IntegerField(
            required=False, allow_null=True, default=None, help_text="Post-edit: the LLM set shown preselected"
        )
        assessors = serializers.ListField(child=serializers.IntegerField(), required=False, default=list)
        lease_seconds = serializers.IntegerField(required=False, default=1800, min_value=60, max_value=86400)

    @extend_schema(request=InputSerializer, responses={201: ResponseTaskOutputSerializer})
    def post(self, request):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        collection = get_object_or_404(Collection, pk=v["collection"])
        runs = list(ResponseRun.objects.filter(pk__in=v["runs"]))
        if len(runs) != len(set(v["runs"])):
            raise leasing.TaskError("runs: unknown response run id")
        task = services.task_create(
            collection=collection,
            kind=v["kind"],
            runs=runs,
            name=v["name"],
            turn_ids=v["turn_ids"],
            bank=None if v["bank"] is None else get_object_or_404(NuggetBank, pk=v["bank"]),
            llm_label_set=None
            if v["llm_label_set"] is None
            else get_object_or_404(ResponseLabelSet, pk=v["llm_label_set"]),
            assessors=list(get_user_model().objects.filter(pk__in=v["assessors"])),
            lease_seconds=v["lease_seconds"],
            created_by=request.user,
        )
        return Response(ResponseTaskOutputSerializer(task).data, status=status.HTTP_201_CREATED)


ITEM_HELP = (
    "{lease, done, expires_at, response: {id, run, text}, turn, conversation, items}: items are the turn's nuggets "
    "(vital first) or the answer's sentences with the first cited passage's text; 'llm' only in post-edit tasks"
)


class NextOutputSerializer(serializers.Serializer):
    progress = serializers.DictField(child=serializers.IntegerField())
    item = serializers.DictField(allow_null=True, help_text=ITEM_HELP)


def _next(task: ResponseTask, user: Any) -> dict[str, Any]:
    lease = leasing.lease_next(task=task, assessor=user)
    return {
        "progress": leasing.task_progress(task, user),
        "item": sel.lease_payload(lease=lease) if lease else None,
    }


class TaskNextApi(JudgeApi):
    """The caller's current answer of the task, or a new lease on the next free one (item null when none is left)."""

    @extend_schema(request=None, responses={200: NextOutputSerializer})
    def post(self, request, pk: int):
        return Response(_next(task_for(request.user, pk), request.user))


class TaskPreviousApi(JudgeApi):
    """The caller's answer finished before the one named by ``before`` (their last finished one without it)."""

    @extend_schema(parameters=[OpenApiParameter("before", int)], responses={200: NextOutputSerializer})
    def get(self, request, pk: int):
        task = task_for(request.user, pk)
        before_id = query_id(request.query_params, "before")
        before = leasing.lease_for(user=request.user, pk=before_id) if before_id else None
        lease = leasing.lease_previous(task=task, assessor=request.user, before=before)
        if lease is None:
            raise leasing.TaskError("No earlier answer of yours in this task.", code="not_found")
        payload = {"progress": leasing.task_progress(task, request.user), "item": sel.lease_payload(lease=lease)}
        return Response(NextOutputSerializer(payload).data)


class LabelsInputSerializer(serializers.Serializer):
    labels = serializers.DictField(
        child=serializers.CharField(),
        allow_empty=True,
        help_text="nugget id → support / partial_support / not_support, or sentence id → full / partial / none /"
        " not_needed",
    )


class LeaseLabelsApi(JudgeApi):
    """Store labels of an answer the caller holds (or finished); a repeat stores nothing new."""

    class OutputSerializer(serializers.Serializer):
        changed = serializers.IntegerField()
        missing = serializers.ListField(child=serializers.IntegerField())

    @extend_schema(request=LabelsInputSerializer, responses={200: OutputSerializer})
    def post(self, request, pk: int):
        lease = leasing.lease_for(user=request.user, pk=pk)
        data = LabelsInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        changed = services.labels_submit(lease=lease, labels=data.validated_data["labels"])
        return Response({"changed": changed, "missing": services.lease_missing(lease)})


class LeaseCompleteApi(JudgeApi):
    """Store the answer's last labels, mark it done and answer with the caller's next answer."""

    @extend_schema(request=LabelsInputSerializer, responses={200: NextOutputSerializer})
    def post(self, request, pk: int):
        lease = leasing.lease_for(user=request.user, pk=pk)
        data = LabelsInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        services.lease_complete(lease=lease, labels=data.validated_data["labels"])
        return Response(_next(lease.task, request.user))


# ---------------------------------------------------------------- banks


class BankCreateApi(JudgeApi):
    """A new nugget bank of a collection: empty, or a copy of another bank to post-edit."""

    class InputSerializer(serializers.Serializer):
        collection = serializers.IntegerField()
        name = serializers.CharField(max_length=100)
        copy_of = serializers.IntegerField(required=False, allow_null=True, default=None)
        description = serializers.CharField(required=False, allow_blank=True, default="")

    @extend_schema(request=InputSerializer, responses={201: OpenApiTypes.OBJECT})
    def post(self, request):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        collection = get_object_or_404(Collection, pk=v["collection"])
        copy_of = None
        if v["copy_of"] is not None:
            copy_of = get_object_or_404(NuggetBank, pk=v["copy_of"], collection=collection)
        bank = banks.bank_create(
            collection=collection, name=v["name"], copy_of=copy_of, description=v["description"], user=request.user
        )
        body = {"id": bank.pk, "name": bank.name, "parent": bank.parent_id, "nuggets": bank.nuggets.count()}
        return Response(body, status=status.HTTP_201_CREATED)


def bank_for(user: Any, pk: int) -> NuggetBank:
    bank = NuggetBank.objects.filter(pk=pk).first()
    if bank is None or not banks.may_edit(user, bank):
        raise leasing.TaskError("No such nugget bank among those you may edit.", code="not_found")
    return bank


def nugget_for(user: Any, pk: int) -> Nugget:
    nugget = Nugget.objects.select_related("bank").filter(pk=pk).first()
    if nugget is None or not banks.may_edit(user, nugget.bank):
        raise leasing.TaskError("No such nugget among the banks you may edit.", code="not_found")
    return nugget


def _rows(bank: NuggetBank, turn_id: int) -> dict[str, Any]:
    return {"nuggets": sel.nugget_rows(bank=bank, turn_id=turn_id)}


class BankTurnApi(JudgeApi):
    """The nuggets of one turn in a bank the caller may edit (merged ones last)."""

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def get(self, request, pk: int, turn: int):
        bank = bank_for(request.user, pk)
        get_object_or_404(Turn, pk=turn, collection_id=bank.collection_id)
        return Response(_rows(bank, turn))


class NuggetAddApi(JudgeApi):
    """Add a nugget to a turn (a span of a passage, or typed); answers with the turn's nuggets."""

    class InputSerializer(serializers.Serializer):
        text = serializers.CharField(max_length=banks.MAX_NUGGET_CHARS)
        importance = serializers.ChoiceField(choices=Nugget.Importance.values, default=Nugget.Importance.OKAY)
        source_passages = serializers.ListField(
            child=serializers.CharField(max_length=200), required=False, default=list
        )

    @extend_schema(request=InputSerializer, responses={201: OpenApiTypes.OBJECT})
    def post(self, request, pk: int, turn: int):
        bank = bank_for(request.user, pk)
        turn_row = get_object_or_404(Turn, pk=turn, collection_id=bank.collection_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        nugget = banks.nugget_add(bank=bank, turn=turn_row, user=request.user, **data.validated_data)
        return Response({"id": nugget.pk, **_rows(bank, turn)}, status=status.HTTP_201_CREATED)


class NuggetEditApi(JudgeApi):
    """Change a nugget's text or importance (or both); the earlier version is kept."""

    class InputSerializer(serializers.Serializer):
        text = serializers.CharField(required=False, max_length=banks.MAX_NUGGET_CHARS)
        importance = serializers.ChoiceField(choices=Nugget.Importance.values, required=False)

    @extend_schema(request=InputSerializer, responses={200: OpenApiTypes.OBJECT})
    def post(self, request, pk: int):
        nugget = nugget_for(request.user, pk)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        changed = banks.nugget_edit(nugget=nugget, user=request.user, **data.validated_data)
        return Response({"changed": changed, **_rows(nugget.bank, nugget.turn_id)})


class NuggetDeleteApi(JudgeApi):
    """Delete a nugget without labels."""

    @extend_schema(request=None, responses={200: OpenApiTypes.OBJECT})
    def post(self, request, pk: int):
        nugget = nugget_for(request.user, pk)
        bank, turn = nugget.bank, nugget.turn_id
        banks.nugget_delete(nugget=nugget, user=request.user)
        return Response(_rows(bank, turn))


class NuggetMergeApi(JudgeApi):
    """Mark a nugget a duplicate of another of its turn (``into``)."""

    class InputSerializer(serializers.Serializer):
        into = serializers.IntegerField()

    @extend_schema(request=InputSerializer, responses={200: OpenApiTypes.OBJECT})
    def post(self, request, pk: int):
        nugget = nugget_for(request.user, pk)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        into = nugget_for(request.user, data.validated_data["into"])
        banks.nugget_merge(nugget=nugget, into=into, user=request.user)
        return Response(_rows(nugget.bank, nugget.turn_id))
