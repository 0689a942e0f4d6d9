"""The OpenAI-compatible client against a real HTTP server: retries with backoff on 5xx, 429 (Retry-After) and
timeouts; malformed replies named; other HTTP errors at once; the concurrency limit; the reply cache; the key sent
as a bearer token and found in no error."""

from __future__ import annotations

import json

import pytest

from ecast.pipeline import backends, openai_compat
from tests.openai_helpers import Step, openai_server

MESSAGES = backends.paraphrase_prompts(["Why are so many bees dying?"])[0]
KEY = "sk-test-4b1d-secret"


def _endpoint(server, **kwargs):
    base = {"base_url": server.base_url, "model": "tiny", "api_key": KEY, "timeout": 2.0, "retries": 2, "backoff": 0.01}
    return openai_compat.Endpoint(**{**base, **kwargs})


class DictCache:
    def __init__(self):
        self.data = {}

    def get(self, key):
        return self.data.get(key)

    def set(self, key, value):
        self.data[key] = value


def test_a_500_is_retried_and_the_next_reply_is_used():
    waits: list[float] = []
    with openai_server(script=[Step(500, '{"error": {"message": "overloaded"}}')]) as server:
        replies = openai_compat.chat(_endpoint(server), MESSAGES, {"n": 2}, sleep=waits.append)
    assert len(server.requests) == 2 and len(replies) == 2 and all(replies)
    assert waits == [0.01]


def test_backoff_doubles_between_attempts_and_a_429_waits_its_retry_after():
    waits: list[float] = []
    script = [Step(503, "busy"), Step(429, "{}", {"Retry-After": "0.25"}), Step(502, "bad gateway")]
    with openai_server(script=script) as server:
        replies = openai_compat.chat(_endpoint(server, retries=3), MESSAGES, {"n": 1}, sleep=waits.append)
    assert replies and len(server.requests) == 4
    assert waits == [0.01, 0.25, 0.04]


def test_a_reply_that_never_comes_is_retried_then_fails_with_the_timeout():
    with openai_server(script=[Step(hang=True), Step(hang=True)]) as server:
        with pytest.raises(openai_compat.EndpointError, match=r"failed 2 attempt\(s\); last: no reply within 0.2 s"):
            openai_compat.chat(_endpoint(server, timeout=0.2, retries=1), MESSAGES, {}, sleep=lambda s: None)
    assert len(server.requests) == 2


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("<html>proxy error</html>", "malformed reply: not JSON"),
        (json.dumps({"object": "chat.completion"}), "malformed reply: no 'choices'"),
        (json.dumps({"choices": [{"message": {"role": "assistant"}}]}), "choice 0 has no message content"),
    ],
)
def test_malformed_replies_are_retried_then_named(body, reason):
    with openai_server(script=[Step(200, body)] * 3) as server:
        with pytest.raises(openai_compat.EndpointError, match=reason):
            openai_compat.chat(_endpoint(server), MESSAGES, {}, sleep=lambda s: None)
    assert len(server.requests) == 3


def test_an_error_a_retry_cannot_fix_fails_at_once_with_the_servers_message():
    with openai_server(script=[Step(401, '{"error": {"message": "invalid api key"}}')]) as server:
        with pytest.raises(openai_compat.EndpointError, match="HTTP 401: invalid api key") as raised:
            openai_compat.chat(_endpoint(server), MESSAGES, {}, sleep=lambda s: None)
    assert len(server.requests) == 1
    assert KEY not in str(raised.value) and KEY not in repr(_endpoint(server))


def test_the_request_carries_model_parameters_and_the_key_as_a_bearer_token():
    with openai_server() as server:
        openai_compat.chat(_endpoint(server), MESSAGES, {"n": 3, "temperature": 0.7, "max_tokens": 20, "seed": 4})
    request = server.requests[0]
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["Authorization"] == f"Bearer {KEY}"
    assert request["body"] == {
        "model": "tiny",
        "messages": MESSAGES,
        "n": 3,
        "temperature": 0.7,
        "max_tokens": 20,
        "seed": 4,
    }


def test_no_more_requests_than_the_concurrency_limit_are_in_flight_at_once():
    prompts = backends.paraphrase_prompts([f"What is topic number {i}?" for i in range(8)])
    with openai_server() as server:
        server.hold.set()
        replies = openai_compat.chat_many(_endpoint(server, concurrency=2), prompts, {"n": 1})
    assert len(replies) == 8 and len(server.requests) == 8
    assert server.max_in_flight <= 2


def test_a_cached_reply_is_not_requested_again_and_other_parameters_are():
    cache = DictCache()
    with openai_server() as server:
        first = openai_compat.chat(_endpoint(server), MESSAGES, {"n": 2}, cache=cache)
        again = openai_compat.chat(_endpoint(server, api_key="another"), MESSAGES, {"n": 2}, cache=cache)
        assert len(server.requests) == 1 and again == first
        openai_compat.chat(_endpoint(server), MESSAGES, {"n": 2, "temperature": 0.5}, cache=cache)
        openai_compat.chat(_endpoint(server, model="other"), MESSAGES, {"n": 2}, cache=cache)
    assert len(server.requests) == 3
    assert not any(KEY in k for k in cache.data)


def test_the_backend_asks_again_when_a_server_answers_fewer_choices_than_asked():
    def one_choice(messages, body):
        return [f"What is reason number {body.get('seed')} for bee deaths?"]

    with openai_server(reply=one_choice) as server:
        params = {"base_url": server.base_url, "model": "tiny", "num_return_sequences": 3, "seed": 10}
        out = backends.get("paraphrase", "openai").paraphrase(["Why are bees dying?"], params)
    assert len(out[0]) == 3 and len(set(out[0])) == 3
    assert [r["body"]["n"] for r in server.requests] == [3, 2, 1]


def test_a_missing_base_url_or_model_is_named_before_any_request():
    with pytest.raises(openai_compat.EndpointError, match="needs a base URL"):
        openai_compat.chat(openai_compat.Endpoint("", "m"), MESSAGES, {})
    with pytest.raises(openai_compat.EndpointError, match="needs a model name"):
        openai_compat.chat(openai_compat.Endpoint("http://127.0.0.1:9/v1", ""), MESSAGES, {})


def test_a_reply_keeps_its_first_line_without_quotes():
    with openai_server(reply=lambda m, b: ['"Is throat cancer curable?"\nExplanation: it asks the same.']) as server:
        params = {"base_url": server.base_url, "model": "tiny"}
        out = backends.get("cr", "openai").cr(["Is throat cancer treatable?"], [["What is throat cancer?"]], params)
    assert out == ["Is throat cancer curable?"]
