"""The form that starts an LLM pre-judgment job."""

from __future__ import annotations

from typing import Any

from django import forms

from ecast.core.fields import IdChoiceField
from judging.llm import judge
from judging.llm import selectors as sel


class VersionChoiceField(IdChoiceField):
    def label_from_instance(self, obj: Any) -> str:
        return f"{obj.collection.name} / {obj.name}"


class LlmJudgeJobForm(forms.Form):
    source_version = VersionChoiceField(
        queryset=sel.human_versions(),
        help_text="The human qrels version whose judged pairs with passage text the model labels.",
    )
    model = forms.CharField(
        initial=judge.DEFAULT_MODEL,
        max_length=1000,
        help_text="'smollm' (SmolLM2-135M-Instruct, shipped), or a transformers model folder or a .gguf file on "
        "the worker machine (nothing is downloaded); or 'openai': the OpenAI-compatible endpoint below.",
    )
    base_url = forms.CharField(
        required=False,
        max_length=500,
        label="Endpoint base URL",
        help_text="'openai' only, e.g. http://localhost:8000/v1 (vLLM); empty: the settings'.",
    )
    served_model = forms.CharField(
        required=False, max_length=300, label="Served model", help_text="'openai' only; empty: the settings'."
    )
    api_key = forms.CharField(
        required=False,
        label="API key",
        widget=forms.PasswordInput(render_value=False),
        help_text="'openai' only, for this job; never shown again. Empty: the settings' key.",
    )
    revision = forms.CharField(required=False, max_length=300, help_text="Recorded with every label (optional).")
    batch_size = forms.IntegerField(initial=judge.DEFAULT_PARAMS["batch_size"], min_value=1, max_value=256)
    max_passage_tokens = forms.IntegerField(
        initial=judge.DEFAULT_PARAMS["max_passage_tokens"], min_value=16, max_value=4096
    )
    limit = forms.IntegerField(required=False, min_value=1, help_text="Label only the first N pairs (optional).")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["source_version"]
        assert isinstance(field, forms.ModelChoiceField)
        field.queryset = sel.human_versions()  # evaluated per request, not at import

    def job_kwargs(self) -> dict[str, Any]:
        d = self.cleaned_data
        version = d["source_version"]
        return {
            "collection": version.collection,
            "source_version": version,
            "model": d["model"],
            "revision": d["revision"] or "",
            "params": {
                "batch_size": d["batch_size"],
                "max_passage_tokens": d["max_passage_tokens"],
                **({"base_url": d["base_url"], "served_model": d["served_model"]} if d["model"] == "openai" else {}),
            },
            "limit": d["limit"],
            "api_key": (d.get("api_key") or "").strip(),
        }
