"""Forms of the response-judging pages: an admin's new task, anyone's new nugget bank."""

from __future__ import annotations

from django import forms
from django.contrib.auth import get_user_model

from ecast.core.fields import IdChoiceField, IdMultipleChoiceField
from ecast.core.permissions import ASSESSOR
from ecast.forms import preselect_single_choices
from ecast.models import Collection
from evaluation.models import NuggetBank, ResponseLabelSet, ResponseRun


class TaskCreateForm(forms.Form):
    kind = forms.ChoiceField(choices=ResponseLabelSet.Kind.choices, widget=forms.RadioSelect)
    name = forms.CharField(required=False, max_length=100, help_text="Also the name of the label set it fills.")
    runs = IdMultipleChoiceField(queryset=ResponseRun.objects.none(), widget=forms.CheckboxSelectMultiple)
    turn_ids = forms.CharField(required=False, help_text="Optional: only these turn ids (space or comma separated).")
    bank = IdChoiceField(
        queryset=NuggetBank.objects.none(), required=False, label="Nugget bank", help_text="Nugget assignment only."
    )
    llm_label_set = IdChoiceField(
        queryset=ResponseLabelSet.objects.none(),
        required=False,
        label="Post-edit the labels of",
        empty_label="Nobody: blind (no LLM label shown)",
        help_text="Post-edit: the assessor sees this LLM set's label preselected and confirms or changes it.",
    )
    assessors = IdMultipleChoiceField(
        queryset=get_user_model().objects.none(),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="None ticked: every assessor.",
    )
    lease_seconds = forms.IntegerField(min_value=60, max_value=86400, initial=1800, label="Lease (seconds)")

    def __init__(self, *args, collection: Collection, **kwargs):
        super().__init__(*args, **kwargs)
        fields = self.fields
        fields["runs"].queryset = ResponseRun.objects.filter(collection=collection)  # type: ignore[attr-defined]
        fields["bank"].queryset = NuggetBank.objects.filter(collection=collection)  # type: ignore[attr-defined]
        fields["bank"].label_from_instance = lambda b: b.name  # type: ignore[attr-defined]
        llm = ResponseLabelSet.objects.filter(collection=collection, source=ResponseLabelSet.Source.LLM)
        fields["llm_label_set"].queryset = llm  # type: ignore[attr-defined]
        fields["llm_label_set"].label_from_instance = (  # type: ignore[attr-defined]
            lambda s: f"{s.name} ({s.get_kind_display().lower()})"
        )
        users = get_user_model().objects.filter(groups__name=ASSESSOR).distinct().order_by("username")
        fields["assessors"].queryset = users  # type: ignore[attr-defined]
        preselect_single_choices(self)


class BankCreateForm(forms.Form):
    collection = IdChoiceField(queryset=Collection.objects.none())
    name = forms.CharField(max_length=100, help_text="E.g. “post-edited”, or “by hand”.")
    copy_of = IdChoiceField(
        queryset=NuggetBank.objects.none(),
        required=False,
        label="Start from",
        empty_label="An empty bank",
        help_text="A copy of another bank of the collection (an LLM draft, say) to post-edit.",
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["collection"].queryset = Collection.objects.all()  # type: ignore[attr-defined]
        self.fields["copy_of"].queryset = NuggetBank.objects.select_related("collection")  # type: ignore[attr-defined]
        preselect_single_choices(self)
