"""The OpenAI-compatible endpoint as the settings and a job configure it, for every feature that calls one
(generation stages, the LLM judge): defaults from the settings, the key added only at run time, replies cached in
the shared Django cache. The HTTP client itself is :mod:`ecast.pipeline.openai_compat` (plain Python)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.cache import cache

from ecast.pipeline import openai_compat

NOT_CONFIGURED = (
    "not configured: set ECAST_OPENAI_BASE_URL (e.g. http://localhost:8000/v1 for vLLM, "
    "http://localhost:11434/v1 for Ollama) and ECAST_OPENAI_MODEL, plus ECAST_OPENAI_API_KEY if the server needs "
    "one; or give a base URL and model per job"
)


class DjangoReplyCache:
    """openai_compat's get/set pair on the shared Django cache (every worker and the web process see one cache)."""

    def get(self, key: str) -> Any:
        return cache.get(key)

    def set(self, key: str, value: Any) -> None:
        cache.set(key, value, timeout=settings.ECAST_OPENAI_CACHE_SECONDS)


def endpoint_status() -> tuple[bool, str]:
    """Whether the settings name an endpoint, and which (never the key, only whether one is set)."""
    base, model = settings.ECAST_OPENAI_BASE_URL.strip(), settings.ECAST_OPENAI_MODEL.strip()
    if not base or not model:
        return False, NOT_CONFIGURED
    key = "an API key is set" if settings.ECAST_OPENAI_API_KEY else "no API key"
    return True, f"{base}, model {model}; {key}; per job: another base URL, model or key"


def with_defaults(params: dict[str, Any]) -> dict[str, Any]:
    """A stage's stored parameters with the settings' base URL and model where the job names none (so the job and
    every output's provenance record which endpoint and model made it)."""
    out = dict(params)
    out["base_url"] = str(out.get("base_url") or settings.ECAST_OPENAI_BASE_URL).strip()
    out["model"] = str(out.get("model") or settings.ECAST_OPENAI_MODEL).strip()
    return out


def check(params: dict[str, Any]) -> None:
    """An EndpointError when the stored parameters name no usable base URL or model."""
    openai_compat.Endpoint(base_url=str(params.get("base_url") or ""), model=str(params.get("model") or "")).check()


def runtime_params(params: dict[str, Any], *, api_key: str = "") -> dict[str, Any]:
    """Stored parameters plus what is added only when the job runs: the key (the job's, else the settings'), limits,
    and the reply cache."""
    return {
        **params,
        "api_key": api_key or settings.ECAST_OPENAI_API_KEY,
        "timeout": settings.ECAST_OPENAI_TIMEOUT,
        "retries": settings.ECAST_OPENAI_RETRIES,
        "concurrency": settings.ECAST_OPENAI_CONCURRENCY,
        "backoff": settings.ECAST_OPENAI_BACKOFF,
        "reply_cache": DjangoReplyCache(),
    }


def endpoint(*, base_url: str, model: str, api_key: str = "") -> openai_compat.Endpoint:
    """The endpoint a job calls: its base URL and model, its key (else the settings'), the settings' limits."""
    return openai_compat.Endpoint(
        base_url=base_url,
        model=model,
        api_key=api_key or settings.ECAST_OPENAI_API_KEY,
        timeout=settings.ECAST_OPENAI_TIMEOUT,
        retries=settings.ECAST_OPENAI_RETRIES,
        concurrency=settings.ECAST_OPENAI_CONCURRENCY,
        backoff=settings.ECAST_OPENAI_BACKOFF,
    )
