"""REST API of the agreement report between two qrels versions (admins only)."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from ecast.core.rest import AdminApi
from evaluation import metrics
from evaluation.agreement import selectors as asel
from evaluation.models import QrelsVersion


class AgreementKappaSerializer(serializers.Serializer):
    value = serializers.FloatField(allow_null=True, help_text="Cohen's κ (scikit-learn); null when undefined")
    weights = serializers.CharField(allow_null=True, help_text='"linear" on graded scales, null when binary')
    n = serializers.IntegerField(help_text="items both assessments judged")
    why_undefined = serializers.CharField(allow_blank=True)
    se = serializers.FloatField(allow_null=True, help_text="asymptotic standard error (statsmodels)")
    low = serializers.FloatField(allow_null=True, help_text="95% interval, lower end")
    high = serializers.FloatField(allow_null=True, help_text="95% interval, upper end")


class AgreementGradeSerializer(serializers.Serializer):
    grade = serializers.IntegerField()
    precision = serializers.FloatField(allow_null=True, help_text="of the items B gave this grade, share A gave it")
    recall = serializers.FloatField(allow_null=True, help_text="of the items A gave this grade, share B gave it")
    f1 = serializers.FloatField(allow_null=True)
    in_a = serializers.IntegerField(help_text="items A gave this grade")
    in_b = serializers.IntegerField(help_text="items B gave this grade")


class AgreementBinarySerializer(serializers.Serializer):
    threshold = serializers.IntegerField(help_text="relevant = grade at or above it")
    already_binary = serializers.BooleanField()
    exact = serializers.FloatField(allow_null=True)
    kappa = AgreementKappaSerializer()
    confusion = serializers.ListField(child=serializers.ListField(child=serializers.IntegerField()))
    per_grade = AgreementGradeSerializer(many=True)
    relevant_a = serializers.IntegerField()
    relevant_b = serializers.IntegerField()
    relevant_both = serializers.IntegerField()
    overlap = serializers.FloatField(allow_null=True, help_text="|A ∩ B| / |A ∪ B| of the relevant items")


class AgreementTopicSerializer(serializers.Serializer):
    topic = serializers.CharField()
    items = serializers.IntegerField()
    exact = serializers.FloatField(allow_null=True)
    kappa = serializers.FloatField(allow_null=True)
    why_undefined = serializers.CharField(allow_blank=True)
    overlap = serializers.FloatField(allow_null=True)


class AgreementSystemSerializer(serializers.Serializer):
    system = serializers.CharField()
    a = serializers.FloatField()
    b = serializers.FloatField()
    rank_a = serializers.IntegerField()
    rank_b = serializers.IntegerField()


class AgreementSwapSerializer(serializers.Serializer):
    x = serializers.CharField(help_text="ranked above y under A, below it under B")
    y = serializers.CharField()
    a_x = serializers.FloatField()
    a_y = serializers.FloatField()
    b_x = serializers.FloatField()
    b_y = serializers.FloatField()


class AgreementRankingSerializer(serializers.Serializer):
    measure = serializers.CharField()
    tau = serializers.FloatField(allow_null=True, help_text="Kendall's τ-b (scipy) of the two run rankings")
    pvalue = serializers.FloatField(allow_null=True)
    n = serializers.IntegerField(help_text="runs scored under both versions on the shared turns")
    why_undefined = serializers.CharField(help_text="why tau is null, or empty")
    shared_turns = serializers.IntegerField(help_text="turns both versions judged: the run means tau compares")
    turns_a = serializers.IntegerField(help_text="turns A judged")
    turns_b = serializers.IntegerField(help_text="turns B judged")
    restricted = serializers.BooleanField(
        help_text="the versions judge different turns, so the run means differ from the leaderboards'"
    )
    runs = serializers.IntegerField()
    systems = AgreementSystemSerializer(many=True)
    swapped = AgreementSwapSerializer(many=True)
    tied = serializers.ListField(child=serializers.ListField(child=serializers.CharField()))
    unscored = serializers.ListField(child=serializers.CharField())
    stored = serializers.BooleanField(help_text="whether any score of this measure is stored for either version")
    pending = serializers.IntegerField(help_text="re-judged turns and evaluation jobs still waiting")


class AgreementApi(AdminApi):
    """Agreement of two qrels versions of one collection over the items both judged: Cohen's κ (linear-weighted on
    graded scales) with a 95% interval, confusion matrix, the same binarised at the collection's relevance
    threshold, per topic, and Kendall's τ between the run rankings by ``measure``."""

    class InputSerializer(serializers.Serializer):
        a = serializers.IntegerField(help_text="qrels version id of assessment A")
        b = serializers.IntegerField(help_text="qrels version id of assessment B (same collection)")
        measure = serializers.CharField(required=False, default=metrics.HEADLINE)

        class Meta:
            ref_name = "AgreementInput"

    class OutputSerializer(serializers.Serializer):
        collection = serializers.DictField()
        a = serializers.DictField()
        b = serializers.DictField()
        threshold = serializers.IntegerField()
        items = serializers.IntegerField(help_text="items judged in both")
        only_a = serializers.IntegerField()
        only_b = serializers.IntegerField()
        graded = serializers.BooleanField(help_text="both assessments use graded scales (κ linear-weighted)")
        mixed = serializers.BooleanField(
            help_text="one assessment is graded and the other binary: κ is computed on the binary view"
        )
        scale = serializers.ListField(child=serializers.IntegerField(), help_text="the labels κ is computed over")
        scale_a = serializers.ListField(child=serializers.IntegerField(), help_text="rows of the confusion matrix")
        scale_b = serializers.ListField(child=serializers.IntegerField(), help_text="columns of the confusion matrix")
        derived = serializers.BooleanField(
            help_text="B was derived from A and holds every judgment of A, so the items both judged agree unless "
            "B replaced a grade"
        )
        made_from_a = serializers.BooleanField(help_text="B names A as its parent (derived copy or LLM labels of A)")
        relabelled = serializers.BooleanField(help_text="B names A as its parent and holds a model's labels (LLM)")
        weights = serializers.CharField(allow_null=True)
        ci_method = serializers.CharField()
        exact = serializers.FloatField(allow_null=True)
        kappa = AgreementKappaSerializer()
        confusion = serializers.ListField(
            child=serializers.ListField(child=serializers.IntegerField()),
            help_text="rows: scale_a (grades of A); columns: scale_b (grades of B)",
        )
        per_grade = AgreementGradeSerializer(
            many=True, help_text="precision/recall of B against A per grade (scikit-learn)"
        )
        binary = AgreementBinarySerializer()
        topics = AgreementTopicSerializer(many=True)
        ranking = AgreementRankingSerializer()
        seconds = serializers.FloatField(help_text="time the item-level report took when computed")
        cached = serializers.BooleanField()

        class Meta:
            ref_name = "AgreementReport"

    @extend_schema(parameters=[InputSerializer], responses={200: OutputSerializer})
    def get(self, request):
        params = self.InputSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        d = params.validated_data
        try:
            metrics.parse_measure(d["measure"])
        except metrics.MeasureError as exc:
            raise serializers.ValidationError({"measure": str(exc)}) from exc
        a = get_object_or_404(QrelsVersion.objects.select_related("collection"), pk=d["a"])
        b = get_object_or_404(QrelsVersion.objects.select_related("collection"), pk=d["b"])
        report = asel.agreement_report(a=a, b=b, measure=d["measure"])
        return Response(self.OutputSerializer(report).data)
