"""A generation job's configuration: validated and completed when the job is created (what is stored, shown and
recorded in provenance), and completed again when it runs with what is never stored (an endpoint's key, limits,
reply cache)."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError

from ecast.core import openai_endpoint
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
            try:
                adapter = lora.stored(spec["params"].get("adapter"))
            except lora.AdapterError as exc:
                errors[stage] = str(exc)
                continue
            spec["params"]["adapter"] = adapter.adapter_id
            spec["params"]["adapter_sha256"] = adapter.sha256  # provenance names the exact weights
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
    out["clean"] = {"min_similarity": floor}
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
