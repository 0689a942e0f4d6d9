"""Forms for the generation pages."""

from __future__ import annotations

from typing import Any

from django import forms

from ecast.core.fields import IdChoiceField
from ecast.generation.selectors import collection_has_automatic_rewrites
from ecast.models import Adapter, Collection, TestSet
from ecast.pipeline import lora
from ecast.pipeline.backends import REGISTRY
from ecast.pipeline.run import DEFAULT_CONFIG


def _choices(stage: str) -> list[tuple[str, str]]:
    # The adapter backend is offered as its trained adapters, one choice each ("adapter:<id>").
    return [(name, name) for name in sorted(REGISTRY[stage]) if name != lora.BACKEND]


def _adapter_choices(stage: str) -> list[tuple[str, str]]:
    return [
        (f"{lora.BACKEND}:{a.pk}", a.label) for a in Adapter.objects.filter(stage=stage).select_related("collection")
    ]


def _ids(text: str) -> list[str]:
    return [t for t in text.replace(",", " ").split() if t]


class GenerationJobForm(forms.Form):
    collection = IdChoiceField(queryset=Collection.objects.all())
    name = forms.CharField(required=False, max_length=200)
    conversations = forms.CharField(
        required=False, help_text="Topic ids such as 81 82, comma or space separated; every turn of each is generated."
    )
    turns = forms.CharField(
        required=False,
        help_text=(
            "Single turns as <topic>_<turn>, e.g. 81_2 83_5, comma or space separated; added to the conversations. "
            "Both empty = every turn of the collection."
        ),
    )
    cqr_backend = forms.ChoiceField(
        choices=_choices("cqr"),
        initial="best",
        label="Backend",
        help_text=(
            "best: whichever of imported / rule / raw scores highest against this collection's manual rewrites "
            "(default); rule: pronoun → referent, left alone when unsure; imported: the topics file's automatic "
            "rewrites (listed when the collection has them); raw: the utterance as it is"
        ),
    )
    cqr_model = forms.CharField(
        required=False,
        label="Model",
        help_text="t5: local folder or hub id; openai: the served model name (empty: the settings')",
    )
    cqr_revision = forms.CharField(required=False, label="Revision")
    paraphrase_backend = forms.ChoiceField(choices=_choices("paraphrase"), initial="smollm", label="Backend")
    paraphrase_model = forms.CharField(required=False, label="Model")
    paraphrase_revision = forms.CharField(required=False, label="Revision")
    paraphrase_prefix = forms.CharField(required=False, help_text='t5 task prefix, e.g. "paraphrase: "', strip=False)
    cr_backend = forms.ChoiceField(
        choices=_choices("cr"),
        initial="anaphora",
        label="Backend",
        help_text="anaphora: the entity → it / they / its / there (default); entity_removal: ECAsT's baseline",
    )
    cr_model = forms.CharField(required=False, label="Model")
    cr_revision = forms.CharField(required=False, label="Revision")
    openai_base_url = forms.CharField(
        required=False,
        label="Base URL",
        help_text="e.g. http://localhost:8000/v1 (vLLM), http://localhost:11434/v1 (Ollama); empty: the settings'",
    )
    openai_api_key = forms.CharField(
        required=False,
        label="API key",
        widget=forms.PasswordInput(render_value=False),
        help_text="Only for this job; never shown again. Empty: the settings' key.",
    )
    source_r = forms.BooleanField(required=False, initial=True, label="Paraphrase r_i (CQR output)")
    source_m = forms.BooleanField(required=False, initial=True, label="Paraphrase m_i (manual rewrite)")
    num_return_sequences = forms.IntegerField(
        min_value=1, max_value=50, initial=DEFAULT_CONFIG["paraphrase"]["params"]["num_return_sequences"]
    )
    top_k = forms.IntegerField(min_value=0, max_value=1000, initial=50)
    top_p = forms.FloatField(min_value=0.01, max_value=1.0, initial=0.95)
    temperature = forms.FloatField(
        min_value=0.01, max_value=5.0, initial=DEFAULT_CONFIG["paraphrase"]["params"]["temperature"]
    )
    max_new_tokens = forms.IntegerField(min_value=4, max_value=256, initial=40)
    min_similarity = forms.FloatField(
        required=False,
        min_value=0.0,
        max_value=1.0,
        initial=0.6,
        help_text="MiniLM cosine floor to the source; empty = no floor",
    )
    seed = forms.IntegerField(initial=0)
    chunk_size = forms.IntegerField(min_value=1, max_value=500, initial=10)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # "imported" is listed only when the chosen collection's turns carry automatic rewrites (with no collection
        # chosen yet, when any collection's do); the job service refuses it for a collection without them.
        chosen = str((self.data.get("collection") if self.is_bound else self.initial.get("collection")) or "")
        collection = Collection.objects.filter(pk=chosen).first() if chosen.isdigit() else None
        if not collection_has_automatic_rewrites(collection=collection):
            field = self.fields["cqr_backend"]
            assert isinstance(field, forms.ChoiceField)
            field.choices = [(n, label) for n, label in _choices("cqr") if n != "imported"]
        for stage in lora.STAGES:
            adapters = _adapter_choices(stage)
            if adapters:
                field = self.fields[f"{stage}_backend"]
                assert isinstance(field, forms.ChoiceField)
                field.choices = [*_choices(stage), ("Fine-tuned adapters", adapters)]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if not (data.get("source_r") or data.get("source_m")):
            raise forms.ValidationError("Pick at least one paraphrase source (r_i or m_i).")
        return data

    def job_kwargs(self) -> dict[str, Any]:
        """Arguments for ``generation_job_create``."""
        d = self.cleaned_data

        def stage(name: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
            params: dict[str, Any] = {"max_new_tokens": d["max_new_tokens"], **(extra or {})}
            if d.get(f"{name}_model"):
                params["model"] = d[f"{name}_model"].strip()
            if d.get(f"{name}_revision"):
                params["revision"] = d[f"{name}_revision"].strip()
            if d[f"{name}_backend"] == "openai" and d.get("openai_base_url"):
                params["base_url"] = d["openai_base_url"].strip()
            backend = d[f"{name}_backend"]
            if backend.startswith(f"{lora.BACKEND}:"):
                backend, params["adapter"] = lora.BACKEND, int(backend.split(":", 1)[1])
            return {"backend": backend, "params": params}

        para_extra = {k: d[k] for k in ("num_return_sequences", "top_k", "top_p", "temperature")}
        if d.get("paraphrase_prefix"):
            para_extra["prefix"] = d["paraphrase_prefix"]
        paraphrase = stage("paraphrase", para_extra)
        paraphrase["sources"] = [s for s in ("r", "m") if d.get(f"source_{s}")]
        return {
            "collection": d["collection"],
            "name": d.get("name") or "",
            "selection": {"conversations": _ids(d.get("conversations") or ""), "turns": _ids(d.get("turns") or "")},
            "config": {
                "cqr": stage("cqr"),
                "paraphrase": paraphrase,
                "cr": stage("cr"),
                "clean": {"min_similarity": d.get("min_similarity")},
            },
            "seed": d["seed"],
            "chunk_size": d["chunk_size"],
            "api_key": (d.get("openai_api_key") or "").strip(),
        }


class TestSetForm(forms.Form):
    __test__ = False
    collection = IdChoiceField(queryset=Collection.objects.all())
    kind = forms.ChoiceField(choices=TestSet.Kind.choices)
    n_sets = forms.IntegerField(min_value=1, max_value=20, initial=3)
    seed = forms.IntegerField(initial=0)
    include_candidates = forms.BooleanField(
        required=False, help_text="Also draw from candidate (not yet approved) paraphrases."
    )
