"""Forms of the analysis pages (runs and qrels versions limited to the chosen collection)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from ecast.core.fields import IdChoiceField, IdMultipleChoiceField
from ecast.forms import preselect_single_choices
from ecast.models import Collection
from evaluation import adjudication
from evaluation.analyses import budget, metaeval, pivots
from evaluation.analyses.selectors import (
    qrels_versions_for_collection,
    runs_for_collection,
)
from evaluation.analyses.services import calibration as calibration_services
from evaluation.models import MetaEvaluation


def split_list(text: str) -> list[str]:
    """Comma- or newline-separated values, stripped, empties dropped."""
    return [t.strip() for t in text.replace("\n", ",").split(",") if t.strip()]


class _RunsMixin(forms.Form):
    def __init__(self, *args: Any, collection: Collection | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._limit_to(collection)
        preselect_single_choices(self)

    def _limit_to(self, collection: Collection | None) -> None:
        if "runs" in self.fields:
            self.fields["runs"].queryset = runs_for_collection(collection=collection) if collection else None  # type: ignore[attr-defined]
        if "qrels_version" in self.fields:
            self.fields["qrels_version"].queryset = (  # type: ignore[attr-defined]
                qrels_versions_for_collection(collection=collection) if collection else None
            )
        if "prior_version" in self.fields:
            self.fields["prior_version"].queryset = (  # type: ignore[attr-defined]
                qrels_versions_for_collection(collection=collection) if collection else None
            )
        if "qrels_versions" in self.fields:
            self.fields["qrels_versions"].queryset = (  # type: ignore[attr-defined]
                qrels_versions_for_collection(collection=collection) if collection else None
            )


class PivotForm(_RunsMixin):
    name = forms.CharField(required=False)
    runs: Any = IdMultipleChoiceField(
        queryset=None,
        widget=forms.SelectMultiple(attrs={"size": 10}),
        help_text=f"At least {pivots.MIN_RUNS}: {pivots.MIN_RUNS_REASON}.",
    )
    qrels_version: Any = IdChoiceField(
        queryset=None, required=False, empty_label="(with qrels versions as EEs: the first one chosen)"
    )
    ee_kind = forms.ChoiceField(
        label="Evaluation environments (EEs)",
        choices=[
            ("splits", "Random 50/50 topic splits"),
            ("qrels_versions", "Qrels versions"),
            ("test_sets", "Paraphrase test sets (Run.test_set)"),
        ],
    )
    qrels_versions: Any = IdMultipleChoiceField(
        queryset=None, required=False, label="Qrels versions as EEs", help_text="With qrels versions as EEs: 2 or more"
    )
    metrics = forms.CharField(initial=", ".join(pivots.DEFAULT_METRICS))
    n_splits = forms.IntegerField(label="Topic splits", initial=pivots.DEFAULT_SPLITS, min_value=1, max_value=1000)
    seed = forms.IntegerField(initial=0)
    auto_recompute = forms.BooleanField(required=False, initial=True, label="Recompute on new judgments")

    def __init__(self, *args: Any, collection: Collection | None = None, **kwargs: Any) -> None:
        super().__init__(*args, collection=collection, **kwargs)
        # Splits need one version: start on the collection's first (the imported "original").
        first = qrels_versions_for_collection(collection=collection).first() if collection else None
        if first is not None:
            self.initial.setdefault("qrels_version", first.pk)


class MetaEvalForm(_RunsMixin):
    name = forms.CharField(required=False)
    source = forms.ChoiceField(choices=MetaEvaluation.Source.choices)
    upload = forms.FileField(required=False, help_text="CSV (optionally .gz): run, [iteration,] topic, metrics…")
    runs: Any = IdMultipleChoiceField(queryset=None, required=False, widget=forms.SelectMultiple(attrs={"size": 8}))
    qrels_version: Any = IdChoiceField(queryset=None, required=False)
    complex_metrics = forms.CharField(initial=", ".join(metaeval.DD_COMPLEX))
    dimensions = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 5}),
        initial="\n".join(f"{k}: {', '.join(v)}" for k, v in metaeval.DEFAULT_DIMENSIONS.items()),
        help_text="One dimension per line: name: simple metric, simple metric",
    )
    depth = forms.IntegerField(
        initial=10, min_value=1, max_value=1000, help_text="App scores: precision/tot-time depth"
    )
    lengths = forms.FileField(
        required=False, help_text="App scores, optional: TSV passage_id<TAB>length in words (else the passage store)"
    )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("source") == MetaEvaluation.Source.UPLOAD and not data.get("upload"):
            self.add_error("upload", "choose a per-topic CSV table to upload")
        return data


class CalibrationForm(_RunsMixin):
    run: Any = IdChoiceField(queryset=None)
    qrels_version: Any = IdChoiceField(queryset=None)
    normalisation = forms.ChoiceField(
        choices=[
            ("none", "none (scores are probabilities)"),
            ("minmax", "min-max per turn"),
            ("softmax", "softmax per turn"),
        ]
    )
    depth = forms.IntegerField(required=False, min_value=1, help_text="Only the top k of each turn (blank: all)")
    n_buckets = forms.IntegerField(label="Buckets (c)", initial=10, min_value=2, max_value=100)

    def _limit_to(self, collection: Collection | None) -> None:
        super()._limit_to(collection)
        self.fields["run"].queryset = runs_for_collection(collection=collection) if collection else None  # type: ignore[attr-defined]


class StochasticForm(_RunsMixin):
    name = forms.CharField(required=False)
    runs: Any = IdMultipleChoiceField(
        queryset=None, widget=forms.SelectMultiple(attrs={"size": 8}), help_text="Sample runs of one system"
    )
    qrels_version: Any = IdChoiceField(queryset=None)
    measure = forms.CharField(initial="nDCG@3")
    b_values = forms.CharField(
        label="Risk aversion b values", initial=", ".join(str(b) for b in calibration_services.DEFAULT_B_VALUES)
    )
    depth = forms.IntegerField(initial=100, min_value=1)
    normalisation = forms.ChoiceField(
        label="Score scale",
        choices=[
            ("minmax", "min-max per turn and sample"),
            ("softmax", "softmax per turn and sample"),
            ("none", "none (scores are probabilities)"),
        ],
        initial=calibration_services.DEFAULT_SAMPLE_NORMALISATION,
        help_text="E − b·var − 2b·Σcov adds scores to squared scores: they must be on the [0, 1] scale.",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Shares a page with the calibration form: its own element ids, so each label points at its own field.
        kwargs.setdefault("auto_id", "id_stochastic_%s")
        super().__init__(*args, **kwargs)

    def clean_b_values(self) -> list[float]:
        try:
            return [float(b) for b in split_list(self.cleaned_data["b_values"])]
        except ValueError as exc:
            raise ValidationError("comma-separated numbers") from exc


class BudgetForm(_RunsMixin):
    name = forms.CharField(required=False)
    runs: Any = IdMultipleChoiceField(
        queryset=None, widget=forms.SelectMultiple(attrs={"size": 8}), help_text="The systems to rank (two or more)"
    )
    qrels_version: Any = IdChoiceField(queryset=None, help_text="Complete judgments the orders are replayed on")
    depth = forms.IntegerField(initial=10, min_value=1, max_value=100, help_text="Pool depth per run and turn")
    strategies = forms.MultipleChoiceField(
        choices=list(adjudication.STRATEGIES.items()),
        initial=list(budget.DEFAULT_STRATEGIES),
        widget=forms.CheckboxSelectMultiple,
    )
    prior_version: Any = IdChoiceField(
        queryset=None, required=False, help_text="Optional: grades that seed the bandit orders (MM, MM-NS)"
    )
    measures = forms.CharField(initial=", ".join(budget.DEFAULT_MEASURES), help_text="ir_measures names")
    fractions = forms.CharField(
        label="Pool fractions for τ", initial=", ".join(f"{f:g}" for f in budget.DEFAULT_FRACTIONS)
    )

    def clean_fractions(self) -> list[float]:
        try:
            return [float(f) for f in split_list(self.cleaned_data["fractions"])]
        except ValueError as exc:
            raise ValidationError("comma-separated numbers in (0, 1]") from exc


def parse_dimensions_text(text: str) -> dict[str, list[str]]:
    """Lines 'name: metric, metric' → {name: [metrics]}; a line without ':' is a ValidationError naming it."""
    dims: dict[str, list[str]] = {}
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        if ":" not in line:
            raise ValidationError({"dimensions": f"line {n}: expected 'name: metric, metric'"})
        name, rest = line.split(":", 1)
        dims[name.strip()] = split_list(rest)
    return dims
