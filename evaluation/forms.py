"""Forms of the evaluation pages: a run upload, a run's test set and description, a comparison against a baseline."""

from __future__ import annotations

from typing import Any

from django import forms

from ecast.core.fields import IdChoiceField
from ecast.forms import preselect_single_choices
from ecast.models import TestSet
from evaluation import metrics, significance
from evaluation import selectors as sel
from evaluation.models import Run


class RunUploadForm(forms.Form):
    # A run ranks turns: only collections with turns can take one (the TREC DD demo table has none).
    collection = IdChoiceField(queryset=sel.collection_list_with_turns())
    file = forms.FileField(
        help_text="TREC run (qid Q0 docid rank score tag) or PyTerrier results CSV (qid,docno,score,rank); plain or .gz"
    )
    name = forms.CharField(max_length=200, required=False, help_text="Run name; defaults to the run tag")
    test_set = IdChoiceField(queryset=sel.test_set_list(), required=False, empty_label="(none)")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The list spans collections, and every collection has its own Rm_1, Rr_1, …
        self.fields["test_set"].label_from_instance = lambda ts: f"{ts.name} · {ts.collection.name}"  # type: ignore[attr-defined]
        preselect_single_choices(self)


class RunLinkForm(forms.Form):
    test_set = IdChoiceField(queryset=TestSet.objects.none(), required=False)
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False)


class BaselineForm(forms.Form):
    """Every run against one baseline (GET): which run, which stored measures, which test and correction, alpha."""

    baseline = IdChoiceField(queryset=Run.objects.none(), label="Baseline run")
    measures = forms.MultipleChoiceField(
        choices=[(m, m) for m in metrics.DEFAULT_MEASURES],
        initial=[metrics.HEADLINE],
        widget=forms.CheckboxSelectMultiple,
        required=False,
    )
    test = forms.ChoiceField(choices=list(significance.TESTS.items()), initial=significance.DEFAULT_TEST)
    correction = forms.ChoiceField(
        choices=list(significance.CORRECTIONS.items()),
        initial=significance.DEFAULT_CORRECTION,
        help_text="over the runs compared on each measure (statsmodels multipletests)",
    )
    alpha = forms.FloatField(initial=significance.DEFAULT_ALPHA, min_value=0.0, max_value=1.0)

    more = forms.CharField(
        required=False,
        label="Other measures",
        help_text="comma-separated ir_measures strings (nDCG@100, P(rel=2)@5, …), computed on demand",
    )

    def __init__(self, *args: Any, runs: Any, stored: list[str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["baseline"].queryset = runs  # type: ignore[attr-defined]
        if stored:  # the version's requested measures beside the defaults
            self.fields["measures"].choices = [(m, m) for m in stored]  # type: ignore[attr-defined]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if not data.get("measures") and not (data.get("more") or "").strip():
            self.add_error("measures", "name at least one measure")
        return data

    def clean_alpha(self) -> float:
        alpha = self.cleaned_data["alpha"]
        if not 0 < alpha < 1:
            raise forms.ValidationError("must lie strictly between 0 and 1")
        return alpha
