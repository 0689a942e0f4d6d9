"""The form that starts a response-LLM job (one form; the page shows each task's fields in a form of its own)."""

from __future__ import annotations

from typing import Any

from django import forms

from ecast.core.fields import IdChoiceField, IdMultipleChoiceField
from ecast.models import Collection
from evaluation.models import NuggetBank, QrelsVersion, ResponseRun
from evaluation.responses import baseline
from judging.llm import judge
from judging.models import ResponseLlmJob
from judging.relevance.pools import split_turn_ids

BASELINE_BACKENDS = [
    (baseline.BACKEND, "Extractive — no model: the best sentences of the top-k passages, each citing its passage"),
    (judge.DEFAULT_MODEL, "SmolLM2-135M-Instruct (shipped) writes the answer, citing passages [n]"),
    ("openai", "The OpenAI-compatible endpoint below writes the answer, citing passages [n]"),
]


class NamedChoiceField(IdChoiceField):
    def label_from_instance(self, obj: Any) -> str:
        return f"{obj.collection.name} / {obj.name}" if hasattr(obj, "collection") else str(obj)


class RunsField(IdMultipleChoiceField):
    def label_from_instance(self, obj: Any) -> str:
        return f"{obj.collection.name} / {obj.name}"


class ResponseJobForm(forms.Form):
    task = forms.ChoiceField(choices=ResponseLlmJob.Task.choices, widget=forms.HiddenInput)
    collection = IdChoiceField(queryset=Collection.objects.none(), required=False)
    qrels_version = NamedChoiceField(
        queryset=QrelsVersion.objects.none(),
        required=False,
        help_text="Nuggets are read from the passages it judged relevant.",
    )
    threshold = forms.IntegerField(
        required=False, min_value=0, max_value=4, help_text="Relevant: grade ≥ this (empty: the collection's)."
    )
    bank = NamedChoiceField(queryset=NuggetBank.objects.none(), required=False, help_text="The nuggets assigned.")
    runs = RunsField(queryset=ResponseRun.objects.none(), required=False, help_text="The response runs labelled.")
    backend = forms.ChoiceField(
        choices=BASELINE_BACKENDS,
        initial=baseline.BACKEND,
        required=False,
        label="Answers written by",
        widget=forms.RadioSelect,
        help_text="The model reads the question and the numbered top-k passages; its [n] marks become citations of "
        "those passages (numbers past k are dropped, sentences without a mark stay uncited). SmolLM2 is small: "
        "from half a minute to two a turn on two busy cores, and it often copies passage sentences without citing "
        "them; the extractive answers cite every sentence.",
    )
    model = forms.CharField(
        initial=judge.DEFAULT_MODEL,
        max_length=1000,
        required=False,
        help_text="'smollm' (shipped), a local model folder or .gguf, or 'openai' (the endpoint below).",
    )
    base_url = forms.CharField(required=False, max_length=500, label="Endpoint base URL")
    served_model = forms.CharField(required=False, max_length=300, label="Served model")
    api_key = forms.CharField(
        required=False, label="API key", widget=forms.PasswordInput(render_value=False), help_text="Never shown again."
    )
    revision = forms.CharField(required=False, max_length=300)
    batch_size = forms.IntegerField(required=False, min_value=1, max_value=256)
    k = forms.IntegerField(required=False, min_value=1, max_value=100, label="Top k passages")
    run_name = forms.CharField(required=False, max_length=200, label="Run name")
    turn_ids = forms.CharField(
        required=False,
        max_length=5000,
        label="Turns",
        help_text="Optional: only these turn ids (81_2) or topics (81), space or comma separated; empty: every turn.",
    )
    limit = forms.IntegerField(required=False, min_value=1, help_text="Only the first N items (optional).")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Evaluated per request, not at import.
        self.fields["collection"].queryset = Collection.objects.order_by("name")  # type: ignore[attr-defined]
        self.fields["qrels_version"].queryset = QrelsVersion.objects.select_related("collection")  # type: ignore[attr-defined]
        self.fields["bank"].queryset = NuggetBank.objects.select_related("collection")  # type: ignore[attr-defined]
        self.fields["runs"].queryset = ResponseRun.objects.select_related("collection")  # type: ignore[attr-defined]

    def clean(self) -> dict[str, Any]:
        d = super().clean() or {}
        source = d.get("qrels_version") or d.get("bank") or next(iter(d.get("runs") or []), None)
        collection = d.get("collection") or getattr(source, "collection", None)
        if collection is None:
            raise forms.ValidationError("Pick a collection (or what the task reads: a version, a bank or runs).")
        d["collection"] = collection
        return d

    def job_kwargs(self) -> dict[str, Any]:
        d = self.cleaned_data
        model = (d.get("model") or judge.DEFAULT_MODEL).strip()
        if d["task"] == ResponseLlmJob.Task.BASELINE:
            model = d.get("backend") or baseline.BACKEND
        params: dict[str, Any] = {}
        if d.get("batch_size"):
            params["batch_size"] = d["batch_size"]
        if d.get("k"):
            params["k"] = d["k"]
        if model == "openai":
            params.update(base_url=d.get("base_url") or "", served_model=d.get("served_model") or "")
        return {
            "task": d["task"],
            "collection": d["collection"],
            "model": model,
            "revision": d.get("revision") or "",
            "params": params,
            "qrels_version": d.get("qrels_version"),
            "threshold": d.get("threshold"),
            "bank": d.get("bank"),
            "runs": list(d.get("runs") or []),
            "run_name": d.get("run_name") or "",
            "limit": d.get("limit"),
            "turns": split_turn_ids(d.get("turn_ids") or "") or [],
            "api_key": (d.get("api_key") or "").strip(),
        }
