"""Dataset REST API: one view per operation, nested input/output serializers, admin-only.

Raters and assessors reach their work through the judging endpoints; the dataset (including paraphrase statuses
and canonical responses) is readable and writable by admins only.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import authenticate
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404
from django.urls import Resolver404, resolve
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import generics, serializers, status
from rest_framework.authtoken.models import Token
from rest_framework.exceptions import NotFound, Throttled
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from ecast import selectors, services
from ecast.core import auth
from ecast.core.rest import AUTHENTICATION, AdminApi
from ecast.filters import CollectionFilter, ConversationFilter, ParaphraseFilter, PassageFilter, TurnFilter
from ecast.models import Collection, Conversation, Paraphrase, Passage, PtkbStatement, Turn

# ---------------------------------------------------------------- serializers shared by several views


class CollectionOutput(serializers.ModelSerializer):
    class Meta:
        model = Collection
        fields = ["id", "name", "year", "corpus_note", "relevance_threshold", "created_at"]


class ParaphraseOutput(serializers.ModelSerializer):
    turn_id = serializers.CharField(source="turn.turn_id", read_only=True)
    created_by = serializers.CharField(source="created_by.username", read_only=True, default=None)

    class Meta:
        model = Paraphrase
        fields = [
            "id",
            "turn",
            "turn_id",
            "kind",
            "text",
            "status",
            "origin",
            "provenance",
            "edited_from",
            "pair",
            "is_current",
            "created_by",
            "created_at",
            "updated_at",
        ]


# ---------------------------------------------------------------- token


class TokenApi(APIView):
    """The caller's API token: GET shows it (creating it once), POST replaces it."""

    authentication_classes = AUTHENTICATION
    permission_classes = [IsAuthenticated]

    class OutputSerializer(serializers.Serializer):
        token = serializers.CharField()
        username = serializers.CharField()

        class Meta:
            ref_name = "ApiToken"

    @extend_schema(responses=OutputSerializer, operation_id="token_retrieve")
    def get(self, request: Request) -> Response:
        user: Any = request.user
        token, _ = Token.objects.get_or_create(user=user)
        return Response({"token": token.key, "username": user.get_username()})

    @extend_schema(request=None, responses=OutputSerializer, operation_id="token_regenerate")
    def post(self, request: Request) -> Response:
        user: Any = request.user
        Token.objects.filter(user=user).delete()
        token = Token.objects.create(user=user)
        return Response({"token": token.key, "username": user.get_username()})


class LoginRefused(Throttled):
    """429 with the log-in limit's own message (which says how long to wait) and ``Retry-After``."""

    def __init__(self, detail: str, *, wait: int) -> None:
        super().__init__(detail=detail)  # no wait here: DRF would append its own "Expected available in…"
        self.wait = wait


class TokenObtainApi(APIView):
    """Exchange a username and password for the user's token (same lock-out as the log-in page)."""

    authentication_classes: list = []
    permission_classes = [AllowAny]
    # No DRF throttle: ecast.core.auth counts attempts per address (shared with the log-in page) and per username.
    throttle_classes: list = []

    class InputSerializer(serializers.Serializer):
        username = serializers.CharField()
        password = serializers.CharField(style={"input_type": "password"})

        class Meta:
            ref_name = "TokenObtainInput"

    @extend_schema(
        request=InputSerializer,
        responses={
            200: TokenApi.OutputSerializer,
            400: OpenApiResponse(description="Wrong credentials"),
            429: OpenApiResponse(description="Too many attempts from this address, or for this username from it"),
        },
    )
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        username, ip = data.validated_data["username"], auth.client_ip(request)
        attempt = auth.login_attempt(username=username, ip=ip)
        if attempt.refused:
            raise LoginRefused(attempt.refused, wait=attempt.retry_after)
        user = authenticate(request._request, username=username, password=data.validated_data["password"])
        if user is None:
            raise ValidationError("Wrong username or password.")
        auth.clear_failures(username, ip)
        token, _ = Token.objects.get_or_create(user=user)
        return Response({"token": token.key, "username": user.get_username()})


# ---------------------------------------------------------------- collections


class CollectionListApi(AdminApi, generics.ListAPIView):
    """Collections, filterable by name (contains) and year."""

    serializer_class = CollectionOutput
    filterset_class = CollectionFilter
    queryset = Collection.objects.order_by("id")


class CollectionDetailApi(AdminApi, generics.RetrieveAPIView):
    """One collection."""

    serializer_class = CollectionOutput
    queryset = Collection.objects.all()


class CollectionCreateApi(AdminApi):
    """Create a collection."""

    class InputSerializer(serializers.Serializer):
        name = serializers.CharField(max_length=100)
        year = serializers.IntegerField(required=False, allow_null=True)
        corpus_note = serializers.CharField(required=False, allow_blank=True, default="")
        relevance_threshold = serializers.IntegerField(min_value=0, max_value=4, default=1)

        class Meta:
            ref_name = "CollectionCreateInput"

    @extend_schema(request=InputSerializer, responses={201: CollectionOutput})
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        collection = services.collection_create(**data.validated_data)
        return Response(CollectionOutput(collection).data, status=status.HTTP_201_CREATED)


class CollectionUpdateApi(AdminApi):
    """Change a collection's name, year, corpus note or relevance threshold."""

    class InputSerializer(serializers.Serializer):
        name = serializers.CharField(max_length=100, required=False)
        year = serializers.IntegerField(required=False, allow_null=True)
        corpus_note = serializers.CharField(required=False, allow_blank=True)
        relevance_threshold = serializers.IntegerField(min_value=0, max_value=4, required=False)

        class Meta:
            ref_name = "CollectionUpdateInput"

    @extend_schema(request=InputSerializer, responses={200: CollectionOutput})
    def patch(self, request: Request, pk: int) -> Response:
        collection = get_object_or_404(Collection, pk=pk)
        data = self.InputSerializer(data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        collection = services.collection_update(collection=collection, **data.validated_data)
        return Response(CollectionOutput(collection).data)


# ---------------------------------------------------------------- conversations, turns, passages


class ConversationListApi(AdminApi, generics.ListAPIView):
    """Conversations (CAsT topics), filterable by collection and topic id."""

    filterset_class = ConversationFilter
    queryset = Conversation.objects.order_by("id")

    class OutputSerializer(serializers.ModelSerializer):
        class Meta:
            model = Conversation
            fields = ["id", "collection", "topic_id", "title", "description"]
            ref_name = "Conversation"

    serializer_class = OutputSerializer


class PtkbStatementOutput(serializers.ModelSerializer):
    class Meta:
        model = PtkbStatement
        fields = ["number", "text"]


class ConversationDetailApi(AdminApi, generics.RetrieveAPIView):
    """One conversation with its turn ids and, for iKAT, the user's PTKB statements."""

    queryset = Conversation.objects.prefetch_related("turns", "ptkb")

    class OutputSerializer(serializers.ModelSerializer):
        turns: Any = serializers.SlugRelatedField(many=True, read_only=True, slug_field="turn_id")
        ptkb = PtkbStatementOutput(many=True, read_only=True)

        class Meta:
            model = Conversation
            fields = ["id", "collection", "topic_id", "title", "description", "turns", "ptkb"]
            ref_name = "ConversationDetail"

    serializer_class = OutputSerializer


class TurnOutput(serializers.ModelSerializer):
    topic_id = serializers.CharField(source="conversation.topic_id", read_only=True)
    # Conversation trees (CAsT 2022): the turn id of the turn this one follows; null for a first or linear turn.
    parent_turn_id = serializers.CharField(source="parent.turn_id", read_only=True, default=None)

    class Meta:
        model = Turn
        fields = [
            "id",
            "collection",
            "conversation",
            "topic_id",
            "number",
            "turn_id",
            "raw_utterance",
            "manual_rewrite",
            "automatic_rewrite",
            "canonical_response_id",
            "canonical_response_text",
            "canonical_response_unreliable",
            "replacement_response_id",
            "feedback_sentences",
            "revealment_sentences",
            "utterance_class",
            "depends_on",
            "relevant_turn_numbers",
            "response_provenance",
            "ptkb_provenance",
            "participant",
            "parent",
            "parent_turn_id",
            "tree_number",
            "mixed_initiative",
        ]


class TurnListApi(AdminApi, generics.ListAPIView):
    """Turns, filterable by collection, conversation, turn id, utterance class and text (``q``)."""

    serializer_class = TurnOutput
    filterset_class = TurnFilter
    queryset = Turn.objects.select_related("conversation", "parent").order_by("conversation_id", "number")


class TurnDetailApi(AdminApi, generics.RetrieveAPIView):
    """One turn with its source texts."""

    serializer_class = TurnOutput
    queryset = Turn.objects.select_related("conversation", "parent")


class PassageOutput(serializers.ModelSerializer):
    class Meta:
        model = Passage
        fields = ["passage_id", "text", "source"]


class PassageListApi(AdminApi, generics.ListAPIView):
    """Passage texts, filterable by id, source and text (``q``)."""

    serializer_class = PassageOutput
    filterset_class = PassageFilter
    queryset = Passage.objects.order_by("passage_id")


class PassageDetailApi(AdminApi, generics.RetrieveAPIView):
    """One passage by its corpus id (e.g. MARCO_1104225)."""

    serializer_class = PassageOutput
    queryset = Passage.objects.all()
    lookup_field = "passage_id"


# ---------------------------------------------------------------- paraphrases


class ParaphraseListApi(AdminApi, generics.ListAPIView):
    """Current paraphrases (``history=1`` adds the superseded rows of edits, ``is_current=false`` gives only them),
    filterable by collection, turn, kind, status, origin, utterance class and text."""

    serializer_class = ParaphraseOutput
    filterset_class = ParaphraseFilter
    queryset = Paraphrase.objects.select_related("turn", "created_by").order_by("turn_id", "id")


class ParaphraseDetailApi(AdminApi, generics.RetrieveAPIView):
    """One paraphrase."""

    serializer_class = ParaphraseOutput
    queryset = Paraphrase.objects.select_related("turn", "created_by")


class ParaphraseHistoryApi(AdminApi):
    """The edit chain of a paraphrase, oldest first."""

    @extend_schema(responses=ParaphraseOutput(many=True))
    def get(self, request: Request, pk: int) -> Response:
        paraphrase = get_object_or_404(Paraphrase, pk=pk)
        chain = selectors.paraphrase_history(paraphrase=paraphrase)
        return Response(ParaphraseOutput(chain, many=True).data)


class _StatusApi(AdminApi):
    action: str = ""

    def _run(self, request: Request, pk: int) -> Response:
        paraphrase = get_object_or_404(Paraphrase, pk=pk)
        service: Any = {"approve": services.paraphrase_approve, "reject": services.paraphrase_reject}[self.action]
        paraphrase = service(paraphrase=paraphrase, user=request.user)
        return Response(ParaphraseOutput(paraphrase).data)


class ParaphraseApproveApi(_StatusApi):
    """Approve a current paraphrase together with its manual/raw partner."""

    action = "approve"

    @extend_schema(request=None, responses={200: ParaphraseOutput})
    def post(self, request: Request, pk: int) -> Response:
        return self._run(request, pk)


class ParaphraseRejectApi(_StatusApi):
    """Reject a current paraphrase together with its manual/raw partner."""

    action = "reject"

    @extend_schema(request=None, responses={200: ParaphraseOutput})
    def post(self, request: Request, pk: int) -> Response:
        return self._run(request, pk)


class ParaphraseBulkStatusApi(AdminApi):
    """Approve, reject or reset many paraphrases at once, each with its pair partner, in one transaction."""

    class InputSerializer(serializers.Serializer):
        ids = serializers.ListField(child=serializers.IntegerField(), allow_empty=False, max_length=100_000)
        status = serializers.ChoiceField(choices=list(services.BULK_STATUSES))

        class Meta:
            ref_name = "ParaphraseBulkStatusInput"

    class OutputSerializer(serializers.Serializer):
        pairs = serializers.IntegerField()
        paraphrases = serializers.IntegerField(help_text="Rows whose status changed.")

    @extend_schema(request=InputSerializer, responses={200: OutputSerializer})
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        done = services.paraphrase_bulk_status(
            paraphrases=Paraphrase.objects.filter(pk__in=data.validated_data["ids"]),
            status=data.validated_data["status"],
            user=request.user,
        )
        return Response(self.OutputSerializer(done).data)


class ParaphraseEditApi(AdminApi):
    """Edit a paraphrase: creates a new row (origin=edited) and retires the old one; returns the new row."""

    class InputSerializer(serializers.Serializer):
        text = serializers.CharField()

        class Meta:
            ref_name = "ParaphraseEditInput"

    @extend_schema(request=InputSerializer, responses={201: ParaphraseOutput})
    def post(self, request: Request, pk: int) -> Response:
        paraphrase = get_object_or_404(Paraphrase, pk=pk)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        new = services.paraphrase_edit(paraphrase=paraphrase, text=data.validated_data["text"], user=request.user)
        return Response(ParaphraseOutput(new).data, status=status.HTTP_201_CREATED)


class ParaphraseAddApi(AdminApi):
    """Add a manual + raw paraphrase pair to a turn (raw defaults to manual on first turns)."""

    class InputSerializer(serializers.Serializer):
        turn = serializers.PrimaryKeyRelatedField(queryset=Turn.objects.all())
        manual_text = serializers.CharField()
        raw_text = serializers.CharField(required=False, allow_blank=True, allow_null=True)

        class Meta:
            ref_name = "ParaphraseAddInput"

    @extend_schema(
        request=InputSerializer,
        responses={
            201: inline_serializer(
                "ParaphraseAddOutput", fields={"manual": ParaphraseOutput(), "raw": ParaphraseOutput()}
            )
        },
    )
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        manual, raw = services.paraphrase_add(
            turn=data.validated_data["turn"],
            manual_text=data.validated_data["manual_text"],
            raw_text=data.validated_data.get("raw_text"),
            user=request.user,
        )
        return Response(
            {"manual": ParaphraseOutput(manual).data, "raw": ParaphraseOutput(raw).data},
            status=status.HTTP_201_CREATED,
        )


# ---------------------------------------------------------------- unknown endpoints


def _serves(path_info: str) -> bool:
    """Whether an endpoint other than the catch-all answers ``path_info``."""
    try:
        return resolve(path_info).url_name != "api-not-found"
    except Resolver404:
        return False


class ApiNotFoundApi(APIView):
    """Any path under /api/ that no endpoint serves: a JSON 404 through the one exception handler, never a page."""

    schema = None  # not an endpoint: left out of the OpenAPI schema
    authentication_classes: list[Any] = []
    permission_classes = [AllowAny]

    def _not_found(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        path = request.path
        hint = ""
        if not path.endswith("/") and _serves(request.path_info + "/"):
            # What APPEND_SLASH did before this catch-all matched every path: redirect a read, explain a write.
            if request.method in ("GET", "HEAD"):
                query = request.META.get("QUERY_STRING", "")
                location = path + "/" + (f"?{query}" if query else "")
                return Response(status=status.HTTP_301_MOVED_PERMANENTLY, headers={"Location": location})
            hint = f" Did you mean {path}/?"
        raise NotFound(f"No API endpoint at {path}.{hint} The endpoints are listed at /api/docs/.")

    get = post = put = patch = delete = head = options = _not_found
