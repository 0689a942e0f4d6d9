"""A real OpenAI-compatible HTTP server on 127.0.0.1 for the tests, in a thread.

``POST /v1/chat/completions`` answers from a script of failures first (HTTP errors, a reply that never comes, bad
JSON, a reply without choices), then from a ``reply`` function: the rule backends' outputs by default (grammatical
questions, no model), or the shipped SmolLM2 model (:func:`smollm_reply`). Every request is recorded with its headers,
and the most requests in flight at once is counted.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ecast.pipeline import anaphora, resolver, rules

Reply = Callable[[list[dict[str, str]], dict[str, Any]], list[str]]


def rule_reply(messages: list[dict[str, str]], body: dict[str, Any]) -> list[str]:
    """What the rule backends would answer to the few-shot prompts (CQR, paraphrase, context removal)."""
    query = messages[-1]["content"]
    n = int(body.get("n") or 1)
    if query.startswith("Rewrite: "):
        source = query.removeprefix("Rewrite: ")
        return (rules.template_paraphrases(source) or [source])[:n]
    if query.startswith("Conversation: "):
        conversation, _, last = query.partition("\nLast question: ")
        history = conversation.removeprefix("Conversation: ").split(" | ")
        return [resolver.resolve(history, last)] * n
    text = query.removeprefix("Question: ")
    return [anaphora.anaphora_cr(text, [text])] * n


def smollm_reply(messages: list[dict[str, str]], body: dict[str, Any]) -> list[str]:
    """The shipped SmolLM2-135M-Instruct's answer (slow: loads and runs the model)."""
    from ecast.pipeline import hf

    n = int(body.get("n") or 1)
    params = {"max_new_tokens": int(body.get("max_tokens") or 32), "num_return_sequences": n, "seed": 0}
    return hf.causal_chat_generate([messages], params, sample=n > 1)[0]


@dataclass
class Step:
    """One scripted answer: an HTTP status with a body, or (``hang``) no answer until the test ends."""

    status: int = 200
    body: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    hang: bool = False


@dataclass
class FakeEndpoint:
    url: str
    script: list[Step]
    requests: list[dict[str, Any]] = field(default_factory=list)
    max_in_flight: int = 0
    in_flight: int = 0
    hold: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def base_url(self) -> str:
        return self.url + "/v1"


def completion(texts: list[str], model: str) -> str:
    choices = [{"index": i, "message": {"role": "assistant", "content": t}} for i, t in enumerate(texts)]
    return json.dumps({"id": "x", "object": "chat.completion", "model": model, "choices": choices})


@contextmanager
def openai_server(reply: Reply = rule_reply, script: list[Step] | None = None) -> Iterator[FakeEndpoint]:
    """Serve until the block ends; ``script`` answers the first requests, ``reply`` the rest."""
    state = FakeEndpoint(url="", script=list(script or []))

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # quiet: pytest output is for failures
            pass

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body = json.loads(raw or b"{}")
            with state.lock:
                state.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                state.in_flight += 1
                state.max_in_flight = max(state.max_in_flight, state.in_flight)
                step = state.script.pop(0) if state.script else None
            try:
                if state.hold.is_set():  # concurrency tests: keep requests in flight together for a moment
                    state.release.wait(0.3)
                if self.path != "/v1/chat/completions":
                    self._send(404, json.dumps({"error": {"message": f"no route {self.path}"}}), {})
                elif step is not None and step.hang:
                    state.release.wait(10)  # longer than the client's timeout
                elif step is not None:
                    self._send(step.status, step.body, step.headers)
                else:
                    try:
                        texts = reply(body["messages"], body)
                    except Exception as exc:  # noqa: BLE001 - a reply function refuses: the server errs
                        self._send(500, json.dumps({"error": {"message": str(exc)}}), {})
                    else:
                        self._send(200, completion(texts, body.get("model", "")), {})
            finally:
                with state.lock:
                    state.in_flight -= 1

        def _send(self, status: int, text: str, headers: dict[str, str]) -> None:
            data = text.encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            try:
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
                pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state.release.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def endpoint_settings_reset(settings, *, retries: int, timeout: float):
    """No endpoint in the settings unless a test names one, and fast back-off (``settings``: pytest-django's)."""
    settings.ECAST_OPENAI_BASE_URL = ""
    settings.ECAST_OPENAI_MODEL = ""
    settings.ECAST_OPENAI_API_KEY = ""
    settings.ECAST_OPENAI_RETRIES = retries
    settings.ECAST_OPENAI_TIMEOUT = timeout
    settings.ECAST_OPENAI_BACKOFF = 0.01
    return settings
