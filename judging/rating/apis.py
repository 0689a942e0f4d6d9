"""REST API for rating campaigns (token or session auth; one APIView per operation).

Raters reach only their own assignments (every lookup is filtered by ``rater=request.user``); everything that shows
other people's ratings, reports, exports or configuration is admin-only.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404, StreamingHttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from ecast import releases
from ecast.core.csvfiles import csv_streaming_response
from ecast.core.permissions import IsRater, user_roles
from ecast.core.rest import AdminApi, validated
from ecast.models import Collection
from judging.models import DEFAULT_MEASURES, MEASURES, Campaign, RatingAssignment
from judging.rating import leasing, rendering, sampling
from judging.rating import selectors as sel
from judging.rating import services as svc


class MeasureSerializer(serializers.Serializer):
    key = serializers.CharField()
    name = serializers.CharField()
    question = serializers.CharField()
    anchors = serializers.ListField(child=serializers.CharField())
    shows = serializers.CharField(required=False, help_text="What the measure compares (admins only).")


class MeApi(APIView):
    """Who am I (any authenticated user); also the cheap baseline endpoint of the load benchmark."""

    permission_classes = [IsAuthenticated]

    @extend_schema(
        responses={
            200: inline_serializer("MeOutput", {"username": serializers.CharField(), "roles": serializers.ListField()})
        }
    )
    def get(self, request):
        return Response({"username": request.user.username, "roles": sorted(user_roles(request.user))})


class MeasureListApi(AdminApi):
    """The measure registry (ECAsT Table 5 questions and 1–5 anchors); the five defaults first."""

    @extend_schema(responses={200: MeasureSerializer(many=True)})
    def get(self, request):
        keys = DEFAULT_MEASURES + [k for k in MEASURES if k not in DEFAULT_MEASURES]
        return Response(MeasureSerializer([{"key": k, **MEASURES[k]} for k in keys], many=True).data)


class RaterQueueApi(APIView):
    """The requesting rater's open campaigns with their own progress."""

    permission_classes = [IsAuthenticated, IsRater]

    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField(source="campaign.id")
        name = serializers.CharField(source="campaign.name")
        done = serializers.IntegerField()
        left = serializers.IntegerField()
        paused = serializers.BooleanField()

    @extend_schema(responses={200: OutputSerializer(many=True)})
    def get(self, request):
        return Response(self.OutputSerializer(sel.rater_queue(rater=request.user), many=True).data)


class AssignmentSerializer(serializers.Serializer):
    assignment_id = serializers.IntegerField()
    campaign_id = serializers.IntegerField()
    item_id = serializers.IntegerField()
    kind = serializers.CharField()
    expires_at = serializers.DateTimeField()
    context = serializers.DictField()  # type: ignore[assignment]  # the metaclass pops declared fields
    passage_id = serializers.CharField()
    passage_text = serializers.CharField()
    measures = MeasureSerializer(many=True)
    previous_values = serializers.DictField(
        child=serializers.IntegerField(), help_text="The answer withdrawn with undo, to correct (empty otherwise)."
    )


class AssignmentNextApi(APIView):
    """Lease the next item (or get back the live lease); ``assignment`` is null when the rater has nothing left."""

    permission_classes = [IsAuthenticated, IsRater]

    class OutputSerializer(serializers.Serializer):
        assignment = AssignmentSerializer(allow_null=True)
        done = serializers.IntegerField()

    @extend_schema(request=None, responses={200: OutputSerializer})
    def post(self, request, campaign_id: int):
        try:
            campaign = sel.campaign_cached(campaign_id=campaign_id)
        except Campaign.DoesNotExist as exc:
            raise Http404("no such campaign") from exc
        lease = leasing.assignment_lease(campaign=campaign, rater=request.user)
        payload = sel.assignment_payload(assignment=lease.assignment) if lease.assignment else None
        return Response(rendering.next_json(payload, lease.done))


class RatingSubmitApi(APIView):
    """Submit scores for one of your assignments; a repeated idempotency key returns the stored rating (200)."""

    permission_classes = [IsAuthenticated, IsRater]

    class InputSerializer(serializers.Serializer):
        values = serializers.DictField(child=serializers.IntegerField())
        idempotency_key = serializers.CharField(max_length=64)
        seconds_on_task = serializers.FloatField(required=False, allow_null=True)

    class OutputSerializer(serializers.Serializer):
        rating_id = serializers.IntegerField(source="pk")
        assignment_id = serializers.IntegerField()
        values = serializers.DictField()
        submitted_at = serializers.DateTimeField()
        created = serializers.BooleanField()

    @extend_schema(request=InputSerializer, responses={201: OutputSerializer, 200: OutputSerializer})
    def post(self, request, assignment_id: int):
        data = validated(self.InputSerializer, request.data)
        rating, created = svc.rating_submit(
            assignment_id=assignment_id,
            rater=request.user,
            values=data["values"],
            idempotency_key=data["idempotency_key"],
            seconds_on_task=data.get("seconds_on_task"),
        )
        return Response(rendering.submit_json(rating=rating, created=created), status=201 if created else 200)


class RatingUndoApi(APIView):
    """Withdraw your last submission for this assignment within the campaign's undo window."""

    permission_classes = [IsAuthenticated, IsRater]

    @extend_schema(request=None, responses={200: AssignmentSerializer})
    def post(self, request, assignment_id: int):
        assignment = svc.rating_undo(assignment_id=assignment_id, rater=request.user)
        return Response(AssignmentSerializer(sel.assignment_payload(assignment=assignment)).data)


class CampaignOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    kind = serializers.CharField()
    status = serializers.CharField()
    collections = serializers.SerializerMethodField()
    measures = MeasureSerializer(many=True)
    raters_per_item = serializers.IntegerField()
    lease_seconds = serializers.IntegerField()
    undo_seconds = serializers.IntegerField()
    gold_threshold = serializers.FloatField()
    sample_size = serializers.IntegerField()
    include_candidates = serializers.BooleanField()
    seed = serializers.IntegerField()
    strata = serializers.DictField()
    created_at = serializers.DateTimeField()

    def get_collections(self, c: Campaign) -> list[str]:
        return [x.name for x in c.collections.all()]


class CampaignListApi(AdminApi):
    """All rating campaigns (admins)."""

    @extend_schema(responses={200: CampaignOutputSerializer(many=True)})
    def get(self, request):
        return Response(CampaignOutputSerializer(sel.campaign_list(), many=True).data)


class CampaignCreateApi(AdminApi):
    """Create a campaign from a seeded sample stratified by year and paraphrase source (admins)."""

    class InputSerializer(serializers.Serializer):
        name = serializers.CharField(max_length=200)
        collection_ids = serializers.ListField(child=serializers.IntegerField(), min_length=1)
        sample_size = serializers.IntegerField(min_value=1)
        seed = serializers.IntegerField(default=0)
        measures = serializers.ListField(child=serializers.CharField(), default=list)
        raters_per_item = serializers.IntegerField(min_value=1, max_value=50, default=5)
        lease_seconds = serializers.IntegerField(min_value=30, default=600)
        undo_seconds = serializers.IntegerField(min_value=0, default=30)
        gold = serializers.CharField(required=False, allow_blank=True, default="")
        gold_threshold = serializers.FloatField(min_value=0, max_value=1, default=0.6)
        gold_every = serializers.IntegerField(min_value=1, default=5)
        guidelines = serializers.CharField(required=False, allow_blank=True, default="")
        include_candidates = serializers.BooleanField(
            default=False, help_text="Also sample generated candidates nobody has approved (default: approved only)."
        )

    @extend_schema(request=InputSerializer, responses={201: CampaignOutputSerializer})
    def post(self, request):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        d = data.validated_data
        collections = list(Collection.objects.filter(pk__in=d["collection_ids"]))
        if len(collections) != len(set(d["collection_ids"])):
            raise DjangoValidationError("unknown collection id")
        keys = d["measures"] or DEFAULT_MEASURES
        campaign = svc.campaign_create(
            name=d["name"],
            collections=collections,
            sample_size=d["sample_size"],
            seed=d["seed"],
            measure_keys=keys,
            raters_per_item=d["raters_per_item"],
            lease_seconds=d["lease_seconds"],
            undo_seconds=d["undo_seconds"],
            gold=sampling.parse_gold_spec(d["gold"], measure_keys=keys),
            gold_threshold=d["gold_threshold"],
            gold_every=d["gold_every"],
            guidelines=d["guidelines"],
            created_by=request.user,
            include_candidates=d["include_candidates"],
        )
        return Response(CampaignOutputSerializer(campaign).data, status=201)


class CampaignDetailApi(AdminApi):
    """One campaign with its progress (admins)."""

    @extend_schema(
        responses={
            200: inline_serializer(
                "CampaignDetailOutput", {"campaign": CampaignOutputSerializer(), "progress": serializers.DictField()}
            )
        }
    )
    def get(self, request, campaign_id: int):
        campaign = get_object_or_404(Campaign, pk=campaign_id)
        return Response(
            {"campaign": CampaignOutputSerializer(campaign).data, "progress": sel.campaign_progress(campaign=campaign)}
        )


class CampaignAgreementApi(AdminApi):
    """Kappa before/after ECAsT filtering, Krippendorff's alpha with CI, items kept, per-rater agreement (admins)."""

    class MeasureAgreementSerializer(serializers.Serializer):
        key = serializers.CharField()
        name = serializers.CharField()
        n_items = serializers.IntegerField()
        n_incomplete = serializers.IntegerField()
        kappa_raw = serializers.FloatField(allow_null=True)
        n_kept = serializers.IntegerField()
        kappa_grouped = serializers.FloatField(allow_null=True)
        n_labelled = serializers.IntegerField()
        alpha = serializers.DictField()

    class OutputSerializer(serializers.Serializer):
        measures = serializers.ListField()
        per_rater = serializers.DictField()
        n_ratings = serializers.IntegerField()
        progress = serializers.DictField()

    @extend_schema(responses={200: OutputSerializer})
    def get(self, request, campaign_id: int):
        campaign = get_object_or_404(Campaign, pk=campaign_id)
        report = sel.campaign_agreement(campaign=campaign)
        measures = [self.MeasureAgreementSerializer({"key": k, **rep}).data for k, rep in report["measures"].items()]
        users = dict(get_user_model().objects.filter(pk__in=report["per_rater"]).values_list("pk", "username"))
        per_rater = {users.get(pk, str(pk)): st for pk, st in report["per_rater"].items()}
        return Response(
            {
                "measures": measures,
                "per_rater": per_rater,
                "n_ratings": report["n_ratings"],
                "progress": sel.campaign_progress(campaign=campaign),
            }
        )


class RaterPauseApi(AdminApi):
    """Pause a rater in a campaign (their ratings are excluded) or reinstate them with ``{"paused": false}``."""

    class InputSerializer(serializers.Serializer):
        paused = serializers.BooleanField()
        reason = serializers.CharField(required=False, allow_blank=True, default="paused by an admin")

    @extend_schema(
        request=InputSerializer,
        responses={
            200: inline_serializer(
                "RaterPauseOutput", {"rater": serializers.CharField(), "paused": serializers.BooleanField()}
            )
        },
    )
    def post(self, request, campaign_id: int, user_id: int):
        campaign = get_object_or_404(Campaign, pk=campaign_id)
        user = get_object_or_404(get_user_model(), pk=user_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        if data.validated_data["paused"]:
            st = svc.rater_pause(campaign=campaign, rater=user, reason=data.validated_data["reason"])
        else:
            st = svc.rater_resume(campaign=campaign, rater=user)
        return Response({"rater": user.username, "paused": st.paused})


RELEASE_PARAMS = [
    # Not "format": DRF reserves that query parameter for choosing a renderer.
    OpenApiParameter("output", OpenApiTypes.STR, enum=["csv", "jsonl"], description="csv (ECAsT) or jsonl"),
    *[OpenApiParameter(f"min_{k}", OpenApiTypes.INT, description=f"minimum label for {k} (1–5)") for k in MEASURES],
]


class AssignmentListMineApi(APIView):
    """Your own assignments in a campaign (status and times; never anyone else's)."""

    permission_classes = [IsAuthenticated, IsRater]

    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        item_id = serializers.IntegerField()
        status = serializers.CharField()
        leased_at = serializers.DateTimeField()
        completed_at = serializers.DateTimeField(allow_null=True)

    @extend_schema(responses={200: OutputSerializer(many=True)})
    def get(self, request, campaign_id: int):
        qs = RatingAssignment.objects.filter(campaign_id=campaign_id, rater=request.user).order_by("leased_at")
        return Response(self.OutputSerializer(qs, many=True).data)


def _download(lines: Iterator[str], *, content_type: str, filename: str) -> StreamingHttpResponse:
    """A streamed download of ``lines`` saved as ``filename``."""
    response = StreamingHttpResponse(lines, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def release_thresholds(params: Any, campaign: Campaign) -> dict[str, int]:
    """``min_<measure>=k`` query parameters → {measure: k}; only the campaign's measures, 1..5."""
    out: dict[str, int] = {}
    for key in campaign.measure_keys:
        raw = params.get(f"min_{key}")
        if raw in (None, ""):
            continue
        if not str(raw).isdigit() or not 1 <= int(raw) <= 5:
            raise DjangoValidationError(f"min_{key} must be an integer 1..5")
        out[key] = int(raw)
    return out


class CampaignReleaseApi(AdminApi):
    """Stream the ECAsT-format release (CSV or JSONL) of the paraphrases whose labels pass the thresholds."""

    @extend_schema(parameters=RELEASE_PARAMS, responses={(200, "text/csv"): OpenApiTypes.STR})
    def get(self, request, campaign_id: int):
        campaign = get_object_or_404(Campaign, pk=campaign_id)
        fmt = request.query_params.get("output", "csv")
        if fmt not in ("csv", "jsonl"):
            raise DjangoValidationError("output must be csv or jsonl")
        thresholds = release_thresholds(request.query_params, campaign)
        pairs = sel.qualifying_paraphrases(campaign=campaign, thresholds=thresholds)
        suffix = "-".join(f"{k}{v}" for k, v in thresholds.items()) or "all"
        filename = f"campaign{campaign.pk}-release-{suffix}.{fmt}"
        if fmt == "csv":
            return csv_streaming_response(filename, releases.release_csv_lines(pairs_queryset=pairs))
        lines = releases.jsonl_lines(releases.release_jsonl_rows(pairs_queryset=pairs))
        return _download(lines, content_type="application/x-ndjson", filename=filename)


class CampaignRatingsCsvApi(AdminApi):
    """Raw ratings as CSV: one row per rating with rater id, item, scores, time on task and exclusion flag."""

    @extend_schema(responses={(200, "text/csv"): OpenApiTypes.STR})
    def get(self, request, campaign_id: int):
        campaign = get_object_or_404(Campaign, pk=campaign_id)
        return csv_streaming_response(f"campaign{campaign.pk}-ratings.csv", sel.ratings_csv_lines(campaign=campaign))


class CampaignLabelsCsvApi(AdminApi):
    """Aggregated labels as CSV: per item, the label per measure (score ≥ 3 raters agree on) and counts."""

    @extend_schema(responses={(200, "text/csv"): OpenApiTypes.STR})
    def get(self, request, campaign_id: int):
        campaign = get_object_or_404(Campaign, pk=campaign_id)
        return csv_streaming_response(f"campaign{campaign.pk}-labels.csv", sel.labels_csv_lines(campaign=campaign))
