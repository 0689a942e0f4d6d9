"""Prompts and reply reading for LLM judging of responses (plain Python; no Django).

Three tasks, each labelling into a label set (or nugget bank) of its own, every label keeping its prompt:

- **Nugget creation** (after AutoNuggetizer's nugget creation, Pradeep et al., "Initial Nugget Evaluation Results for
  the TREC 2024 RAG Track with the AutoNuggetizer Framework", 2024, and castorini/nuggetizer's ``creator`` and
  ``scorer`` prompts): from a turn's judged-relevant passages, the atomic facts a good answer contains, each
  *vital* or *okay*. An endpoint is asked for the list, one nugget a line ``vital: <fact>`` / ``okay: <fact>``. A
  135M local model cannot write such a list, so locally the candidate nuggets are the relevant passages' sentences
  that share the most content words with the question (``evaluation.responses.baseline``), and the model decides
  only each candidate's importance (``1`` vital, ``0`` okay), read as next-token probabilities.
- **Nugget assignment** (nuggetizer's ``assigner``: support / partial_support / not_support): one response and one
  nugget a prompt; the answer digit ``2`` support, ``1`` partial support, ``0`` not supported.
- **Citation support** (TREC 2024 RAG support evaluation, Thakur et al. 2025: full 2 / partial 1 / none 0): one
  answer sentence and the text of one passage it cites; the answer digit is that scale as the track writes it.

**Reading the label.** With the shipped local model (as :mod:`judging.llm.judge` does for relevance grades): the
reply is begun as ``##label: ``, one forward pass gives the next-token distribution, each label's probability is the
probability of its digit (``judge.digit_token_ids``: with and without a leading space), renormalised over the
task's labels; the most probable label wins, ties to the lower digit (the cautious label). The distribution and the
digit mass are stored with the label. With an OpenAI-compatible endpoint the label is **parsed from the reply**
(:func:`label_of`): the digit after ``##label:``, else a lone allowed digit, else a label word
(``support``/``partial``/``not``; ``full``/``partial``/``none``). A reply with none of these is *malformed*: the job
asks again, and fails with the reply in its reason when it stays malformed (nothing of that batch is written).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ecast.core.errors import DomainError
from evaluation.responses import baseline

PROMPT_VERSION = "ecast-response-judge/v1"
ANSWER_PREFIX = "##label: "
SYSTEM = "You are a careful assessor who judges the answers of a search assistant against facts and sources."

CREATE, ASSIGN, CITE, IMPORTANCE = "create_nuggets", "assign_nuggets", "citation_support", "importance"

# The digit of each label, per task (index = digit).
ASSIGN_LABELS = ("not_support", "partial_support", "support")
CITE_LABELS = ("none", "partial", "full")
IMPORTANCE_LABELS = ("okay", "vital")
LABELS = {ASSIGN: ASSIGN_LABELS, CITE: CITE_LABELS, IMPORTANCE: IMPORTANCE_LABELS}
# Words a reply may give instead of a digit: the one earliest in the reply wins ("not supported" is read at "not
# support", before its "support"); a bare "not" is no label ("I am not sure").
WORDS = {
    ASSIGN: (
        ("partial", 1),
        ("not support", 0),
        ("not_support", 0),
        ("no support", 0),
        ("unsupported", 0),
        ("support", 2),
    ),
    CITE: (
        ("partial", 1),
        ("no support", 0),
        ("not support", 0),
        ("unsupported", 0),
        ("none", 0),
        ("full", 2),
        ("support", 2),
    ),
    IMPORTANCE: (("vital", 1), ("okay", 0)),
}

ASSIGN_TEMPLATE = """Decide whether the answer below supports the fact (a "nugget") a good answer to the question \
contains. Reply with one digit:
2 = support: the answer states the fact,
1 = partial support: the answer states part of the fact, or implies it,
0 = not supported: the answer does not state the fact.

Question: {question}
Answer: {answer}
Nugget: {nugget}

Reply in the format ##label: digit, without any reasoning."""

CITE_TEMPLATE = """Decide whether the cited passage supports the sentence of an answer that cites it. Reply with one \
digit:
2 = full support: everything the sentence states is in the passage,
1 = partial support: some of what the sentence states is in the passage,
0 = no support: the passage does not back the sentence.

Sentence: {sentence}
Cited passage: {passage}

Reply in the format ##label: digit, without any reasoning."""

IMPORTANCE_TEMPLATE = """Decide how important a fact is for a good answer to the question. Reply with one digit:
1 = vital: a good answer must contain it,
0 = okay: worth mentioning, but a good answer may leave it out.

Question: {question}
Fact: {nugget}

Reply in the format ##label: digit, without any reasoning."""

CREATE_TEMPLATE = """Write the atomic facts (nuggets) that a good answer to the question must or may contain, read \
from the passages below. A nugget is one short self-contained fact, at most 15 words. Mark each as vital (a good \
answer must contain it) or okay (worth mentioning). Write at most {max_nuggets} nuggets, one a line, in the format
vital: <fact>
okay: <fact>

Question: {question}
{passages}

Nuggets:"""


class PromptError(DomainError, ValueError):
    """Probabilities that do not fit the task's labels."""


def question_text(utterance: str, rewrite: str = "") -> str:
    """The question as asked, with its manual rewrite when it differs (what assessors are shown)."""
    if rewrite and rewrite.strip() != utterance.strip():
        return f"{utterance} (meaning: {rewrite})"
    return utterance


def chat(user: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def assign_messages(*, question: str, answer: str, nugget: str) -> list[dict[str, str]]:
    return chat(ASSIGN_TEMPLATE.format(question=question, answer=answer, nugget=nugget))


def cite_messages(*, sentence: str, passage: str) -> list[dict[str, str]]:
    return chat(CITE_TEMPLATE.format(sentence=sentence, passage=passage))


def importance_messages(*, question: str, nugget: str) -> list[dict[str, str]]:
    return chat(IMPORTANCE_TEMPLATE.format(question=question, nugget=nugget))


def create_messages(*, question: str, passages: Sequence[str], max_nuggets: int) -> list[dict[str, str]]:
    shown = "\n".join(f"Passage {i}: {p}" for i, p in enumerate(passages, start=1))
    return chat(CREATE_TEMPLATE.format(question=question, passages=shown, max_nuggets=max_nuggets))


# --- reading a label ------------------------------------------------------------------------------------------


def label_probabilities(digit_probs: Sequence[float], task: str) -> tuple[str, list[float], float]:
    """(label, distribution over the task's labels, digit mass) from each label digit's next-token probability.

    The most probable label wins, the lower digit on ties; with no mass at all the distribution is uniform and the
    label is digit 0 (not supported / no support / okay: the cautious label)."""
    labels = LABELS[task]
    probs = [float(p) for p in digit_probs[: len(labels)]]
    if len(probs) != len(labels):
        raise PromptError(f"{task}: expected {len(labels)} probabilities, got {len(probs)}")
    mass = sum(probs)
    if mass <= 0:
        return labels[0], [1.0 / len(labels)] * len(labels), 0.0
    dist = [p / mass for p in probs]
    best = max(range(len(labels)), key=lambda i: (dist[i], -i))
    return labels[best], dist, mass


def _digit_pattern(n: int) -> tuple[re.Pattern[str], re.Pattern[str]]:
    top = n - 1
    final = re.compile(rf"label\s*[:=]?\s*\**\s*([0-{top}])(?![0-9]|\.[0-9])", re.IGNORECASE)
    lone = re.compile(rf"(?<![0-9.])([0-{top}])(?![0-9]|\.[0-9])")
    return final, lone


def label_of(reply: str, task: str) -> str | None:
    """The label a reply gives, or None when it is malformed (no label digit and no label word)."""
    labels = LABELS[task]
    final, lone = _digit_pattern(len(labels))
    match = final.search(reply) or lone.search(reply)
    if match:
        return labels[int(match.group(1))]
    low = reply.lower()
    # A word at a word start only ("cannot" is no "not"; "supported" is "support").
    hits = [(m.start(), digit) for word, digit in WORDS[task] if (m := re.search(rf"\b{word}", low))]
    if not hits:
        return None
    return labels[min(hits)[1]]


@dataclass(frozen=True)
class DraftNugget:
    text: str
    importance: str


LINE = re.compile(r"^\s*(?:[-*•]|\d+[.)])?\s*\**\s*(vital|okay|ok)\s*\**\s*[:\-–)\]]\s*(.+?)\s*$", re.IGNORECASE)
BRACKET = re.compile(r"^\s*(?:[-*•]|\d+[.)])?\s*(.+?)\s*[(\[](vital|okay|ok)[)\]]\s*\.?\s*$", re.IGNORECASE)


def nuggets_of(reply: str, *, max_nuggets: int) -> list[DraftNugget] | None:
    """The nuggets a creation reply lists, or None when it lists none (malformed).

    Read: lines ``vital: fact`` / ``okay: fact`` (with list marks or bold), lines ``fact (vital)``, or a JSON list
    of ``{"text", "importance"}`` objects (nuggetizer's output). Duplicates (same text, any case) are kept once."""
    found: list[DraftNugget] = []
    start = reply.find("[")
    if start >= 0:
        try:
            data = json.loads(reply[start : reply.rindex("]") + 1])
        except ValueError:
            data = None
        if isinstance(data, list):
            for item in data:
                if isinstance(item, dict) and str(item.get("text", "")).strip():
                    found.append(DraftNugget(str(item["text"]).strip(), _importance(str(item.get("importance")))))
    if not found:
        for line in reply.splitlines():
            if m := LINE.match(line):
                found.append(DraftNugget(m.group(2).strip(), _importance(m.group(1))))
            elif m := BRACKET.match(line):
                found.append(DraftNugget(m.group(1).strip(), _importance(m.group(2))))
    seen: set[str] = set()
    out = []
    for n in found:
        key = " ".join(n.text.lower().split())
        if key and key not in seen:
            seen.add(key)
            out.append(n)
    return out[:max_nuggets] or None


def _importance(word: str) -> str:
    return "vital" if word.strip().lower() == "vital" else "okay"


def candidate_nuggets(question: str, passages: Sequence[str], *, max_nuggets: int, max_chars: int = 300) -> list[str]:
    """The local model's candidate nuggets: the passages' sentences sharing the most content words with the
    question (ties: earlier passage, earlier sentence), each at most ``max_chars``, duplicates kept once."""
    want = baseline.content_words(question)
    scored = []
    for p, text in enumerate(passages):
        for s, sentence in enumerate(baseline.sentences_of(text)):
            if len(sentence) < 20:
                continue  # a heading or a fragment is no fact
            overlap = len(want & baseline.content_words(sentence))
            scored.append((-overlap, p, s, sentence if len(sentence) <= max_chars else sentence[:max_chars] + " …"))
    scored.sort()
    out: list[str] = []
    for _, _, _, sentence in scored:
        if sentence.lower() not in {o.lower() for o in out}:
            out.append(sentence)
        if len(out) >= max_nuggets:
            break
    return out


def prompt_record(messages: list[dict[str, str]]) -> str:
    """The prompt as a label stores it (the chat, JSON)."""
    return json.dumps(messages, ensure_ascii=False)


def provenance(*, task: str, model: str, revision: str, params: dict[str, Any], backend: str) -> dict[str, Any]:
    """What every label of a job stores about how it was made (never an API key)."""
    return {
        "task": task,
        "backend": backend,
        "model": model,
        "revision": revision,
        "params": params,
        "prompt_version": PROMPT_VERSION,
        "decision": (
            "next-token probability of each label digit after '##label: ', argmax (ties to the lower digit)"
            if backend == "local"
            else "label parsed from the reply (##label: digit, a lone digit, or a label word); malformed: asked again"
        ),
    }
