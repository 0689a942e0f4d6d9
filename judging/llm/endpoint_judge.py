"""LLM relevance pre-judgments through an OpenAI-compatible chat-completion endpoint (plain Python; no Django).

The prompt is the local judge's (:mod:`judging.llm.judge`: UMBRELA's structure, the CAsT 0–4 scale). A chat API
cannot begin the assistant's reply, and not every server returns token probabilities, so the grade is **read from
the reply**: the digit 0–4 after ``##final score:`` where the reply has that form, else the first lone digit 0–4 in
it. The distribution stored with the label puts all its mass on that grade (digit mass 1.0). A reply with no grade
at all gets the local judge's "nothing usable" label: grade 0, a uniform distribution, digit mass 0 (the pool treats
unjudged pairs as 0 too). Replies are asked for deterministically (temperature 0).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from ecast.pipeline import openai_compat
from judging.llm import judge

BACKEND = "openai"  # the job's ``model`` field value that selects an endpoint instead of a local model
DECISION = (
    "the grade 0-4 read from the reply: the digit after '##final score:', else the first lone digit 0-4; "
    "no grade in the reply: 0 with a uniform distribution and digit mass 0"
)
# A digit 0-4 standing alone: not part of a larger number or a decimal ("3.5", "10").
FINAL = re.compile(r"final\s*score\s*[:=]?\s*\**\s*([0-4])(?![0-9]|\.[0-9])", re.IGNORECASE)
LONE_DIGIT = re.compile(r"(?<![0-9.])([0-4])(?![0-9]|\.[0-9])")
STRING_PARAMS = ("base_url", "served_model")  # the endpoint and model a job names (integers are bounded elsewhere)


def grade_of(reply: str) -> int | None:
    """The grade a reply gives, or None when it gives none."""
    match = FINAL.search(reply) or LONE_DIGIT.search(reply)
    return int(match.group(1)) if match else None


def provenance(params: dict[str, Any]) -> dict[str, Any]:
    """What every label of an endpoint job stores about how it was made (never the key)."""
    return {
        "backend": BACKEND,
        "base_url": params.get("base_url", ""),
        "model": params.get("served_model", ""),
        "revision": "",
        "params": {k: v for k, v in params.items() if k not in ("base_url", "served_model")},
        "request": {"temperature": 0.0, "max_tokens": 16, "n": 1},
        "prompt_version": judge.PROMPT_VERSION,
        "prompt_structure": "UMBRELA qrel_zeroshot_bing (Upadhyay et al. 2024, arXiv:2406.06519)",
        "decision": DECISION,
    }


class EndpointJudge:
    """Labels pairs with the model an endpoint serves, ``concurrency`` requests at a time per batch."""

    def __init__(
        self,
        params: dict[str, Any],
        endpoint: openai_compat.Endpoint,
        *,
        cache: openai_compat.ReplyCache | None = None,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        self.params = {**judge.DEFAULT_PARAMS, **{k: v for k, v in params.items() if k not in STRING_PARAMS}}
        self.endpoint = endpoint
        self.cache = cache
        self.sleep = sleep
        try:
            endpoint.check()
        except openai_compat.EndpointError as exc:
            raise judge.JudgeError(str(exc)) from exc

    def messages(self, pair: judge.Pair) -> list[dict[str, str]]:
        """The chat messages for a pair; the passage cut to ``max_passage_tokens`` words (no tokenizer here)."""
        words = pair.passage.split()
        limit = int(self.params["max_passage_tokens"])
        passage = pair.passage if len(words) <= limit else " ".join(words[:limit]) + " …"
        return judge.messages(pair, passage=passage, max_history_turns=int(self.params["max_history_turns"]))

    def label(self, pairs: Sequence[judge.Pair]) -> list[judge.Label]:
        """One label per pair (an EndpointError when the endpoint fails a request every attempt)."""
        chats = [self.messages(p) for p in pairs]
        request = {"temperature": 0.0, "max_tokens": 16, "n": 1}
        kwargs: dict[str, Any] = {"cache": self.cache}
        if self.sleep is not None:
            kwargs["sleep"] = self.sleep
        replies = openai_compat.chat_many(self.endpoint, chats, request, **kwargs)
        out = []
        for pair, chat, reply in zip(pairs, chats, replies, strict=True):
            grade = grade_of(reply[0] if reply else "")
            if grade is None:
                dist, mass, grade = [1.0 / len(judge.GRADES)] * len(judge.GRADES), 0.0, 0
            else:
                dist, mass = [1.0 if g == grade else 0.0 for g in judge.GRADES], 1.0
            out.append(judge.Label(pair.turn_id, pair.passage_id, grade, dist, mass, json.dumps(chat)))
        return out
