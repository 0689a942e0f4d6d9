"""The two ways an LLM labels responses (plain Python; no Django): the local model through
:class:`judging.llm.judge.Judge` (next-token probabilities of the label digits) and an OpenAI-compatible endpoint
(labels parsed from replies, a malformed reply asked again). Prompts and reading: :mod:`judging.llm.response_prompts`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from ecast.core.errors import DomainError
from ecast.pipeline import hf, openai_compat
from evaluation.responses import answer_prompts as ap
from judging.llm import judge
from judging.llm import response_prompts as rp

DEFAULT_PARAMS: dict[str, Any] = {
    "batch_size": 8,
    "max_passage_tokens": 256,
    "max_answer_tokens": 384,
    "max_nuggets": 8,
    "max_passages": 5,
    "malformed_retries": 2,
}
CLASSIFY_REQUEST = {"temperature": 0.0, "max_tokens": 16, "n": 1}
CREATE_REQUEST = {"temperature": 0.0, "max_tokens": 512, "n": 1}


class MalformedReply(DomainError, ValueError):
    """The endpoint's reply gave no label (or no nugget) every time it was asked."""


@dataclass(frozen=True)
class Labelled:
    """One label: the label word, its distribution over the task's labels, the digit mass, the exact prompt."""

    label: str
    probabilities: list[float]
    mass: float
    prompt: str
    reply: str = ""


@dataclass(frozen=True)
class Written:
    """One baseline answer: the sentences read from the reply, the exact prompt and the reply itself."""

    answer: ap.ParsedAnswer
    prompt: str
    reply: str


@dataclass(frozen=True)
class Drafted:
    """The nuggets drafted for one turn, and the prompts that made them (one per nugget locally, one per turn on
    an endpoint)."""

    nuggets: list[rp.DraftNugget]
    prompts: list[str]
    probabilities: list[list[float]] = field(default_factory=list)


class LocalLabeller:
    """Labels with the local model; loads it once (through :class:`judge.Judge`, which caches it per process)."""

    backend = "local"

    def __init__(self, spec: judge.ModelSpec, params: dict[str, Any]) -> None:
        self.params = {**DEFAULT_PARAMS, **params}
        self.judge = judge.Judge(judge.ModelSpec(model=spec.model, revision=spec.revision, params={}))
        self.tok = self.judge.tok

    def cut(self, text: str, limit_name: str) -> str:
        limit = int(self.params[limit_name])
        ids = self.tok.encode(text, add_special_tokens=False)
        return text if len(ids) <= limit else self.tok.decode(ids[:limit]).strip() + " …"

    def classify(self, chats: Sequence[list[dict[str, str]]], task: str) -> list[Labelled]:
        size = max(1, int(self.params["batch_size"]))
        prompts = [
            self.tok.apply_chat_template(c, tokenize=False, add_generation_prompt=True) + rp.ANSWER_PREFIX
            for c in chats
        ]
        # The prompts of one answer share the instructions, the question and the answer: batched by their token
        # ids, that common part goes through the model once a batch (exact; see judging.llm.scoring).
        out: list[Labelled] = []
        for prompt, probs in zip(prompts, self.judge.digit_probabilities_cached(prompts, size), strict=True):
            label, dist, mass = rp.label_probabilities(probs, task)
            out.append(Labelled(label, dist, mass, prompt))
        return out

    def write(self, chats: Sequence[list[dict[str, str]]], passage_ids: Sequence[Sequence[str]]) -> list[Written]:
        """One answer per chat, generated greedily (``passage_ids``: each chat's passages, [n] → the n-th); a reply
        without a sentence raises :class:`MalformedReply` at once (greedy decoding would give it again)."""
        net, tok = self.judge.net, self.tok
        params = {
            "max_new_tokens": int(self.params.get("max_new_tokens", 160)),
            "batch_size": self.params["batch_size"],
        }
        replies = hf.causal_chat_generate(list(chats), params, sample=False, model=(net, tok), first_line=False)
        out = []
        for chat, ids, (reply,) in zip(chats, passage_ids, replies, strict=True):
            answer = ap.parse_answer(reply, ids, require_citation=bool(self.params.get("require_citation")))
            if answer is None:
                excerpt = " ".join(reply.split())[:200] or "(empty)"
                raise MalformedReply(f"the model's answer had no usable sentence: {excerpt!r}")
            prompt = tok.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
            out.append(Written(answer, prompt, reply))
        return out

    def draft(self, question: str, passages: Sequence[str]) -> Drafted:
        """Candidate sentences from the passages; the model gives each its importance."""
        candidates = rp.candidate_nuggets(question, passages, max_nuggets=int(self.params["max_nuggets"]))
        labelled = self.classify(
            [rp.importance_messages(question=question, nugget=c) for c in candidates], rp.IMPORTANCE
        )
        return Drafted(
            nuggets=[rp.DraftNugget(c, lab.label) for c, lab in zip(candidates, labelled, strict=True)],
            prompts=[lab.prompt for lab in labelled],
            probabilities=[lab.probabilities for lab in labelled],
        )


class EndpointLabeller:
    """Labels with the model an endpoint serves; a reply without a label is asked again (without the cache), and
    a reply that stays malformed raises :class:`MalformedReply`."""

    backend = "openai"

    def __init__(
        self,
        params: dict[str, Any],
        endpoint: openai_compat.Endpoint,
        *,
        cache: openai_compat.ReplyCache | None = None,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        self.params = {**DEFAULT_PARAMS, **{k: v for k, v in params.items() if k not in ("base_url", "served_model")}}
        self.endpoint = endpoint
        self.cache = cache
        self.sleep = sleep
        try:
            endpoint.check()
        except openai_compat.EndpointError as exc:
            raise judge.JudgeError(str(exc)) from exc

    def cut(self, text: str, limit_name: str) -> str:
        words = text.split()
        limit = int(self.params[limit_name])
        return text if len(words) <= limit else " ".join(words[:limit]) + " …"

    def ask(
        self,
        chats: Sequence[list[dict[str, str]]],
        request: dict[str, Any],
        reader: Callable[[str], Any] | Sequence[Callable[[str], Any]],
        what: str = "label",
    ) -> list[tuple[Any, str]]:
        """(read value, reply) for each chat (``reader``: one for all chats, or one per chat); only well-formed
        replies are cached, the rest asked again."""
        reads = [reader] * len(chats) if callable(reader) else list(reader)
        out: list[tuple[Any, str] | None] = [None] * len(chats)
        todo = list(range(len(chats)))
        if self.cache is not None:
            for i in list(todo):
                hit = self.cache.get(openai_compat.cache_key(self.endpoint, chats[i], request))
                if isinstance(hit, list) and hit and reads[i](str(hit[0])) is not None:
                    out[i] = (reads[i](str(hit[0])), str(hit[0]))
                    todo.remove(i)
        kwargs: dict[str, Any] = {} if self.sleep is None else {"sleep": self.sleep}
        last = ""
        for _ in range(int(self.params["malformed_retries"]) + 1):
            if not todo:
                break
            replies = openai_compat.chat_many(self.endpoint, [chats[i] for i in todo], request, **kwargs)
            still = []
            for i, reply in zip(todo, replies, strict=True):
                text = reply[0] if reply else ""
                value = reads[i](text)
                if value is None:
                    still.append(i)
                    last = text
                    continue
                out[i] = (value, text)
                if self.cache is not None:
                    self.cache.set(openai_compat.cache_key(self.endpoint, chats[i], request), [text])
            todo = still
        if todo:
            tries = int(self.params["malformed_retries"]) + 1
            excerpt = " ".join(last.split())[:200] or "(empty)"
            raise MalformedReply(f"{len(todo)} reply(ies) gave no usable {what} in {tries} tries; last: {excerpt!r}")
        return [o for o in out if o is not None]

    def classify(self, chats: Sequence[list[dict[str, str]]], task: str) -> list[Labelled]:
        labels = rp.LABELS[task]
        out = []
        for chat, (label, reply) in zip(
            chats, self.ask(chats, CLASSIFY_REQUEST, lambda r: rp.label_of(r, task)), strict=True
        ):
            out.append(
                Labelled(label, [1.0 if x == label else 0.0 for x in labels], 1.0, rp.prompt_record(chat), reply)
            )
        return out

    def write(self, chats: Sequence[list[dict[str, str]]], passage_ids: Sequence[Sequence[str]]) -> list[Written]:
        """One answer per chat; a malformed reply (no sentence, or with ``require_citation`` no usable citation)
        is asked again, and raises :class:`MalformedReply` when it stays so."""
        request = {"temperature": 0.0, "max_tokens": int(self.params.get("max_new_tokens", 160)), "n": 1}
        strict = bool(self.params.get("require_citation", True))
        # Each reply is read against its own chat's passages.
        reads = [partial(ap.parse_answer, passage_ids=ids, require_citation=strict) for ids in passage_ids]
        return [
            Written(answer, rp.prompt_record(chat), reply)
            for chat, (answer, reply) in zip(
                chats, self.ask(chats, request, reads, what="answer (a sentence citing a listed passage)"), strict=True
            )
        ]

    def draft(self, question: str, passages: Sequence[str]) -> Drafted:
        most = int(self.params["max_nuggets"])
        chat = rp.create_messages(question=question, passages=passages, max_nuggets=most)
        ((nuggets, _reply),) = self.ask([chat], CREATE_REQUEST, lambda r: rp.nuggets_of(r, max_nuggets=most))
        return Drafted(nuggets=nuggets, prompts=[rp.prompt_record(chat)] * len(nuggets))
