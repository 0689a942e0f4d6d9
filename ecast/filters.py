"""django-filter filter sets for the dataset API (query parameters documented in the OpenAPI schema)."""

from __future__ import annotations

from decimal import Decimal

import django_filters
from django.db.models import Q, QuerySet

from ecast.models import Collection, Conversation, Paraphrase, Passage, Turn, UtteranceClass


class CollectionFilter(django_filters.FilterSet):
    name = django_filters.CharFilter(lookup_expr="icontains")

    class Meta:
        model = Collection
        fields = ["name", "year"]


class ConversationFilter(django_filters.FilterSet):
    class Meta:
        model = Conversation
        fields = ["collection", "topic_id"]


class TurnFilter(django_filters.FilterSet):
    q = django_filters.CharFilter(method="filter_q", label="Text in the raw utterance or its rewrites")
    utterance_class = django_filters.ChoiceFilter(choices=UtteranceClass.choices)

    class Meta:
        model = Turn
        fields = ["collection", "conversation", "turn_id", "number", "utterance_class"]

    def filter_q(self, queryset: QuerySet[Turn], name: str, value: str) -> QuerySet[Turn]:
        return queryset.filter(
            Q(raw_utterance__icontains=value)
            | Q(manual_rewrite__icontains=value)
            | Q(automatic_rewrite__icontains=value)
        )


class PassageFilter(django_filters.FilterSet):
    q = django_filters.CharFilter(field_name="text", lookup_expr="icontains", label="Text in the passage")
    source = django_filters.CharFilter(lookup_expr="icontains")

    class Meta:
        model = Passage
        fields = ["passage_id", "source"]


class ParaphraseFilter(django_filters.FilterSet):
    """Current rows only unless ``is_current`` is given (false: only the superseded rows) or ``history`` is true
    (current and superseded rows: every version of every edit)."""

    q = django_filters.CharFilter(field_name="text", lookup_expr="icontains", label="Text in the paraphrase")
    collection = django_filters.ModelChoiceFilter(field_name="turn__collection", queryset=Collection.objects.all())
    turn_id = django_filters.CharFilter(field_name="turn__turn_id", label="CAsT turn id, e.g. 81_2")
    utterance_class = django_filters.ChoiceFilter(field_name="turn__utterance_class", choices=UtteranceClass.choices)
    is_current = django_filters.BooleanFilter(
        widget=django_filters.widgets.BooleanWidget(),
        label="true/1: only current rows (the default); false/0: only the superseded rows of edited paraphrases",
    )
    job = django_filters.NumberFilter(method="filter_job", label="Generation job id: what that job wrote")
    history = django_filters.BooleanFilter(
        method="filter_history",
        widget=django_filters.widgets.BooleanWidget(),
        label="Also the superseded rows of edited paraphrases (true/1); by default only the current rows",
    )

    class Meta:
        model = Paraphrase
        fields = ["turn", "kind", "status", "origin", "is_current"]

    def filter_job(self, queryset: QuerySet[Paraphrase], name: str, value: Decimal) -> QuerySet[Paraphrase]:
        # the id is an int in the provenance JSON; the filter's Decimal would not compare equal to it
        return queryset.filter(provenance__job=int(value))

    def filter_history(self, queryset: QuerySet[Paraphrase], name: str, value: bool | None) -> QuerySet[Paraphrase]:
        return queryset  # applied in filter_queryset, which also sees whether is_current was given

    def filter_queryset(self, queryset: QuerySet[Paraphrase]) -> QuerySet[Paraphrase]:
        queryset = super().filter_queryset(queryset)
        if self.form.cleaned_data.get("is_current") is None and not self.form.cleaned_data.get("history"):
            queryset = queryset.filter(is_current=True)
        return queryset
