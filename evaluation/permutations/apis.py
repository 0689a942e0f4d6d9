"""REST API for SE/FT/PT labels and permutation experiments (token auth; one APIView per operation)."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from ecast.core.permissions import IsAdmin, IsRater, is_admin
from ecast.core.rest import AUTHENTICATION, AdminApi, JobHealthFields
from ecast.models import Collection, Conversation, Turn
from evaluation.models import PermutationExperiment, QrelsVersion
from evaluation.permutations import selectors as sel
from evaluation.permutations import services as svc
from evaluation.permutations.retrieval import SYSTEMS


class UtteranceLabelSetApi(APIView):
    """Set the caller's SE/FT/PT class of a turn (admins also set the turn's class)."""

    authentication_classes = AUTHENTICATION
    permission_classes = [IsAuthenticated, IsAdmin | IsRater]

    class InputSerializer(serializers.Serializer):
        turn = serializers.IntegerField()
        utterance_class = serializers.ChoiceField(choices=["SE", "FT", "PT"])

    class OutputSerializer(serializers.Serializer):
        turn = serializers.IntegerField()
        utterance_class = serializers.CharField()
        applied = serializers.BooleanField()
        depends_on = serializers.DictField(child=serializers.IntegerField(allow_null=True))

    @extend_schema(request=InputSerializer, responses={200: OutputSerializer})
    def post(self, request):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        turn = get_object_or_404(Turn.objects.select_related("conversation"), pk=data.validated_data["turn"])
        admin = is_admin(request.user)
        svc.utterance_label_set(
            turn=turn, labeler=request.user, utterance_class=data.validated_data["utterance_class"], apply=admin
        )
        deps = {
            str(t.number): (t.depends_on.number if t.depends_on_id else None)
            for t in turn.conversation.turns.select_related("depends_on")
        }
        out = {
            "turn": turn.pk,
            "utterance_class": data.validated_data["utterance_class"],
            "applied": admin,
            "depends_on": deps,
        }
        return Response(self.OutputSerializer(out).data)


class LabelAgreementApi(AdminApi):
    """Fleiss' kappa of the SE/FT/PT labels of a collection's labelers."""

    @extend_schema(
        responses={
            200: inline_serializer(
                "LabelAgreement",
                {
                    "labelers": serializers.IntegerField(),
                    "turns_labelled": serializers.IntegerField(),
                    "items": serializers.IntegerField(),
                    "kappa": serializers.FloatField(allow_null=True),
                },
            )
        }
    )
    def get(self, request, pk: int):
        coll = get_object_or_404(Collection, pk=pk)
        return Response(sel.label_agreement(collection=coll))


class ExperimentCreateApi(AdminApi):
    """Create a permutation experiment; sampling its orders, retrieval and scoring run in the worker."""

    class InputSerializer(serializers.Serializer):
        collection = serializers.IntegerField()
        name = serializers.CharField(max_length=200)
        qrels_version = serializers.IntegerField()
        systems = serializers.ListField(child=serializers.ChoiceField(choices=list(SYSTEMS)), allow_empty=True)
        k = serializers.IntegerField(default=100, min_value=0, max_value=10_000)
        seed = serializers.IntegerField(default=0)
        measure = serializers.CharField(default="nDCG@3")
        corpus = serializers.ChoiceField(choices=["qrels", "all"], default="qrels")
        depth = serializers.IntegerField(default=100, min_value=1, max_value=1000)
        topics = serializers.ListField(child=serializers.CharField(), required=False)

    class OutputSerializer(JobHealthFields, serializers.Serializer):
        job_kind = svc.KIND
        id = serializers.IntegerField()
        status = serializers.CharField()
        warnings = serializers.ListField(child=serializers.CharField())

    @extend_schema(request=InputSerializer, responses={201: OutputSerializer})
    def post(self, request):
        s = self.InputSerializer(data=request.data)
        s.is_valid(raise_exception=True)
        d = s.validated_data
        coll = get_object_or_404(Collection, pk=d["collection"])
        version = get_object_or_404(QrelsVersion, pk=d["qrels_version"])
        convs = None
        if d.get("topics"):
            convs = list(Conversation.objects.filter(collection=coll, topic_id__in=d["topics"]))
            missing = set(d["topics"]) - {c.topic_id for c in convs}
            if missing:
                raise ValidationError(f"unknown topics: {sorted(missing)}")
        exp = svc.permutation_experiment_create(
            collection=coll,
            name=d["name"],
            qrels_version=version,
            systems=d["systems"],
            k=d["k"],
            seed=d["seed"],
            measure=d["measure"],
            corpus=d["corpus"],
            depth=d["depth"],
            conversations=convs,
            created_by=request.user,
        )
        exp.refresh_from_db()
        return Response(self.OutputSerializer(exp).data, status=status.HTTP_201_CREATED)


class ExperimentStatusApi(AdminApi):
    """Progress of an experiment and the qrels version its scores reflect."""

    class OutputSerializer(JobHealthFields, serializers.Serializer):
        job_kind = svc.KIND
        id = serializers.IntegerField()
        status = serializers.CharField()
        status_label = serializers.CharField(help_text="The status as the experiment page words it.")
        chunks_done = serializers.IntegerField()
        chunks_total = serializers.IntegerField()
        error = serializers.CharField(allow_blank=True)
        scored_at = serializers.CharField(allow_null=True)
        scored_version = serializers.CharField(allow_null=True)
        qrels_judgments = serializers.IntegerField(allow_null=True)
        sampled = inline_serializer(
            "PermutationSampled",
            {
                "conversation": serializers.IntegerField(),
                "path": serializers.CharField(),
                "orders": serializers.IntegerField(),
            },
            many=True,
        )

    @extend_schema(responses={200: OutputSerializer})
    def get(self, request, pk: int):
        exp = get_object_or_404(sel.experiment_list(), pk=pk)
        return Response(self.OutputSerializer(sel.experiment_progress(experiment=exp)).data)


class ExperimentAnalysisApi(AdminApi):
    """All analyses (Tables 2–3, win fractions, MD0/MD1 ANOVA with Tukey tiers) as JSON."""

    @extend_schema(responses={200: inline_serializer("PermutationAnalysis", {"rows": serializers.IntegerField()})})
    def get(self, request, pk: int):
        exp = get_object_or_404(sel.experiment_list(), pk=pk)
        systems = [s for s in request.query_params.getlist("systems") if s] or None
        return Response(sel.experiment_analysis(experiment=exp, systems=systems))


class ExperimentTopicsApi(AdminApi):
    """The permuted conversations as CAsT-format topics (one topic object per permutation)."""

    @extend_schema(
        responses={200: inline_serializer("PermutedTopic", {"permutation_id": serializers.CharField()}, many=True)}
    )
    def get(self, request, pk: int):
        exp = get_object_or_404(PermutationExperiment, pk=pk)
        return Response(sel.permutation_topics(experiment=exp))
