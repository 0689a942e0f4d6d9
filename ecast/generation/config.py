"""A generation job's configuration: validated and completed when the job is created (what is stored, shown and
recorded in provenance), and completed again when it runs with what is never stored (an endpoint's key, limits,
reply cache)."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError

from ecast.core import openai_endpoint
from ecast.models import Adapter
from ecast.pipeline import backends, lora, openai_compat
from ecast.pipeline.run import DEFAULT_CONFIG


def config_normalise(config: dict[str, Any] | None) -> dict[str, Any]:
    """Merge with defaults and validate every stage's backend name (clear error naming the stage)."""
    config = dict(config or {})
    out: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for stage in backends.STAGES:
        spec = {**DEFAULT_CONFIG[stage], **(config.get(stage) or {})}
        spec["params"] = dict(spec.get("params") or {})
        try:
            backend = backends.get(stage, spec["backend"])
        except backends.BackendError as exc:
            errors[stage] = str(exc)
            continue
        if backend.name == "t5" and not str(spec["params"].get("model") or "").strip():
            errors[stage] = "the t5 backend needs params.model (a local folder or a hub id)"
        if backend.name == lora.BACKEND:
            error = _adapter_check(spec["params"], stage)
            if error:
                errors[stage] = error
                continue
        if backend.name == "openai":
            spec["params"].pop("api_key", None)  # the caller moved it to the job's key; never stored in config
            spec["params"] = openai_endpoint.with_defaults(spec["params"])
            try:
                openai_endpoint.check(spec["params"])
            except openai_compat.EndpointError as exc:
                errors[stage] = str(exc)
        out[stage] = spec
    if "sources" in (config.get("paraphrase") or {}):
        srcs = config["paraphrase"]["sources"]
        if not srcs or any(s not in ("r", "m") for s in srcs):
            errors["paraphrase"] = "sources must be a non-empty subset of ['r', 'm']"
    # No "clean" section: the default floor; an explicit null (or "") turns the floor off.
    clean_spec = config["clean"] if "clean" in config else DEFAULT_CONFIG["clean"]
    floor = (clean_spec or {}).get("min_similarity")
    if floor is not None and floor != "":
        try:
            floor = float(floor)
        except (TypeError, ValueError):
            errors["clean"] = "min_similarity must be a number"
            floor = None
        else:
            if not 0.0 <= floor <= 1.0:
                errors["clean"] = "min_similarity must be between 0 and 1"
    else:
        floor = None
    # keep: how many paraphrases of a turn the ranking keeps; absent → the default, null (or "") → all of them.
    keep = (clean_spec or {}).get("keep", DEFAULT_CONFIG["clean"]["keep"]) if clean_spec is not None else None
    if keep is not None and keep != "":
        try:
            keep = int(keep)
        except (TypeError, ValueError):
            errors["clean"] = "keep must be a whole number"
            keep = None
        else:
            if keep < 1:
                errors["clean"] = "keep must be at least 1 (or null to keep every paraphrase)"
    else:
        keep = None
    checks = (clean_spec or {}).get("meaning_checks", True) if clean_spec is not None else True
    if not isinstance(checks, bool):
        errors["clean"] = "meaning_checks must be true or false"
    meaning = (clean_spec or {}).get("meaning_floor", DEFAULT_CONFIG["clean"]["meaning_floor"])
    if clean_spec is None or meaning == "":
        meaning = None
    if meaning is not None:
        try:
            meaning = float(meaning)
        except (TypeError, ValueError):
            errors["clean"] = "meaning_floor must be a number"
            meaning = None
        else:
            if not 0.0 <= meaning <= 1.0:
                errors["clean"] = "meaning_floor must be between 0 and 1"
    out["clean"] = {"min_similarity": floor, "keep": keep, "meaning_checks": bool(checks), "meaning_floor": meaning}
    if errors:
        raise ValidationError(errors)
    return out


def config_runtime(stored: dict[str, Any], *, api_key: str = "") -> dict[str, Any]:
    """A job's stored config with what openai stages need only while running (key, limits, reply cache) added."""
    config = dict(stored)
    for stage in backends.STAGES:
        spec = config.get(stage) or {}
        if spec.get("backend") == "openai":
            params = openai_endpoint.runtime_params(dict(spec.get("params") or {}), api_key=api_key)
            config[stage] = {**spec, "params": params}
    return config


def _adapter_check(params: dict[str, Any], stage: str) -> str:
    """Name the adapter's weights in ``params`` (provenance then says which weights made an output), or say what is
    wrong; reads the adapter's row without its weights (a request never loads them)."""
    value = str(params.get("adapter") or "")
    if not value.isdigit():
        return f"params.adapter: {params.get('adapter')!r} is not an adapter id"
    row = Adapter.objects.filter(pk=int(value)).values_list("sha256", "stage").first()
    if row is None:
        return f"params.adapter: no adapter #{value}"
    if row[1] != stage:
        return f"params.adapter: adapter #{value} was trained for the {row[1]} stage, not {stage}"
    params["adapter"], params["adapter_sha256"] = int(value), row[0]
    return ""
