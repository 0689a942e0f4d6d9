"""A client for OpenAI-compatible chat-completion endpoints (vLLM, Ollama, llama.cpp server, TGI, hosted APIs).

``POST {base_url}/chat/completions`` (``/v1`` is added when the base URL lacks it) with the model, the messages and
the sampling parameters. A bounded number of attempts: a refused connection, a timeout, HTTP 429 (after its
``Retry-After`` when it sends one) and 5xx are retried with exponential backoff, and so is a malformed reply (not
JSON, no ``choices``, a choice without text), since a proxy in front of a model server sends those when it is
overloaded; any other HTTP error fails at once. The last failure is raised as :class:`EndpointError` with its
reason. Requests to one base URL from one process are limited by a semaphore to ``concurrency`` at a time.

The API key travels in the ``Authorization`` header only: it is never part of an error, a cache key or ``repr``.
Replies are cached through a caller's ``get``/``set`` pair keyed by a digest of (base URL, model, messages,
parameters), so this module stays plain Python (no Django).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol

import requests

from ecast.core.errors import DomainError

RETRY_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
MAX_RETRY_AFTER_S = 60.0  # a server asking for a longer pause fails the attempt budget sooner than it helps
_SEMAPHORES: dict[tuple[str, int], threading.BoundedSemaphore] = {}
_SEMAPHORES_LOCK = threading.Lock()


class EndpointError(DomainError, ValueError):
    """The endpoint failed every attempt (HTTP error, timeout, malformed reply) or is not configured."""


class ReplyCache(Protocol):
    def get(self, key: str) -> Any: ...

    def set(self, key: str, value: Any) -> None: ...


@dataclass(frozen=True)
class Endpoint:
    """Where and how to call: base URL, model, key (kept out of ``repr``), limits."""

    base_url: str
    model: str
    api_key: str = field(default="", repr=False)
    timeout: float = 60.0
    retries: int = 3
    concurrency: int = 4
    backoff: float = 1.0  # seconds before the first retry, doubled each further one

    def url(self) -> str:
        base = self.base_url.rstrip("/")
        if not base.endswith("/v1"):
            base += "/v1"
        return base + "/chat/completions"

    def check(self) -> None:
        """An EndpointError naming what is missing."""
        if not self.base_url.strip():
            raise EndpointError("the openai backend needs a base URL (ECAST_OPENAI_BASE_URL or per job)")
        if not self.base_url.startswith(("http://", "https://")):
            raise EndpointError(f"base URL {self.base_url!r} must start with http:// or https://")
        if not self.model.strip():
            raise EndpointError("the openai backend needs a model name (ECAST_OPENAI_MODEL or per job)")


def request_body(endpoint: Endpoint, messages: list[dict[str, str]], params: dict[str, Any]) -> dict[str, Any]:
    """The JSON body of one chat completion (only the parameters every compatible server knows)."""
    body: dict[str, Any] = {"model": endpoint.model, "messages": messages}
    for name in ("temperature", "top_p", "max_tokens", "n", "seed"):
        if params.get(name) is not None:
            body[name] = params[name]
    return body


def cache_key(endpoint: Endpoint, messages: list[dict[str, str]], params: dict[str, Any]) -> str:
    """A digest of what decides the reply: base URL, model, messages and parameters (never the key)."""
    payload = json.dumps(
        {"base_url": endpoint.base_url.rstrip("/"), **request_body(endpoint, messages, params)}, sort_keys=True
    )
    return "ecast:openai:" + hashlib.sha256(payload.encode()).hexdigest()


def semaphore(endpoint: Endpoint) -> threading.BoundedSemaphore:
    """The one semaphore of this process for a base URL and limit."""
    key = (endpoint.base_url.rstrip("/"), max(1, int(endpoint.concurrency)))
    with _SEMAPHORES_LOCK:
        if key not in _SEMAPHORES:
            _SEMAPHORES[key] = threading.BoundedSemaphore(key[1])
        return _SEMAPHORES[key]


def parse_reply(data: Any) -> list[str]:
    """The text of every choice, or an EndpointError saying what is wrong with the reply."""
    if not isinstance(data, dict):
        raise EndpointError("malformed reply: not a JSON object")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise EndpointError("malformed reply: no 'choices'")
    texts = []
    for i, choice in enumerate(choices):
        message = choice.get("message") if isinstance(choice, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, str):
            raise EndpointError(f"malformed reply: choice {i} has no message content")
        texts.append(content)
    return texts


def _retry_after(response: requests.Response) -> float | None:
    value = response.headers.get("Retry-After", "")
    try:
        return min(max(0.0, float(value)), MAX_RETRY_AFTER_S)
    except ValueError:
        return None


def _error_excerpt(response: requests.Response) -> str:
    try:
        data = response.json()
        message = data.get("error", data) if isinstance(data, dict) else data
        if isinstance(message, dict):
            message = message.get("message", message)
        text = str(message)
    except ValueError:
        text = response.text
    return " ".join(text.split())[:200]


def chat(
    endpoint: Endpoint,
    messages: list[dict[str, str]],
    params: dict[str, Any],
    *,
    cache: ReplyCache | None = None,
    sleep: Callable[[float], None] = time.sleep,
    session: requests.Session | None = None,
) -> list[str]:
    """The reply texts of one chat completion, from the cache when it holds them."""
    endpoint.check()
    key = cache_key(endpoint, messages, params)
    if cache is not None:
        hit = cache.get(key)
        if isinstance(hit, list):
            return [str(t) for t in hit]
    headers = {"Content-Type": "application/json"}
    if endpoint.api_key:
        headers["Authorization"] = f"Bearer {endpoint.api_key}"
    body = request_body(endpoint, messages, params)
    post = (session or requests).post
    attempts = max(0, int(endpoint.retries)) + 1
    reason = ""
    for attempt in range(attempts):
        wait = endpoint.backoff * (2**attempt)
        try:
            with semaphore(endpoint):
                response = post(endpoint.url(), json=body, headers=headers, timeout=endpoint.timeout)
        except requests.Timeout:
            reason = f"no reply within {endpoint.timeout:g} s"
        except requests.ConnectionError as exc:
            reason = f"cannot connect: {type(exc).__name__}"
        else:
            if response.status_code == 200:
                try:
                    texts = parse_reply(response.json())
                except ValueError as exc:  # a JSONDecodeError or our EndpointError (both ValueErrors)
                    reason = str(exc) if isinstance(exc, EndpointError) else "malformed reply: not JSON"
                else:
                    if cache is not None:
                        cache.set(key, texts)
                    return texts
            elif response.status_code in RETRY_STATUSES or response.status_code >= 500:
                reason = f"HTTP {response.status_code}: {_error_excerpt(response)}"
                after = _retry_after(response) if response.status_code == 429 else None
                wait = wait if after is None else after
            else:
                raise EndpointError(f"{endpoint.url()}: HTTP {response.status_code}: {_error_excerpt(response)}")
        if attempt + 1 < attempts:
            sleep(wait)
    raise EndpointError(f"{endpoint.url()} failed {attempts} attempt(s); last: {reason}")


def chat_many(
    endpoint: Endpoint,
    prompts: Sequence[list[dict[str, str]]],
    params: dict[str, Any],
    *,
    cache: ReplyCache | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> list[list[str]]:
    """:func:`chat` for every prompt, ``concurrency`` requests at a time, replies in prompt order."""
    if not prompts:
        return []
    workers = max(1, min(int(endpoint.concurrency), len(prompts)))
    with requests.Session() as session, ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(chat, endpoint, p, params, cache=cache, sleep=sleep, session=session) for p in prompts]
        return [f.result() for f in futures]
