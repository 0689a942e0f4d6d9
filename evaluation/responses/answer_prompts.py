"""The generative built-in baseline's prompt and the reading of its reply (plain Python; no Django).

Retrieval-augmented generation as the TREC 2024 RAG track's organiser baselines do it (Pradeep et al., "Ragnarök: a
reusable RAG framework and baselines for TREC 2024 retrieval-augmented generation track", 2024): the question and the
BM25 top-k passages, numbered ``[1]``..``[k]``, go to a chat model, which writes a short answer citing the passages it
uses by number. One worked example (a user turn and the assistant's cited answer) comes before the question: the
shipped 135M-parameter model cites hardly at all from the instruction alone, and a little more often after seeing it
done once.

**Reading the reply** (:func:`parse_answer`):

- the reply is split into sentences by Punkt (:func:`ecast.pipeline.preprocess.split_sentences`, as everywhere in
  ecast);
- citation marks are ``[n]``, ``[n, m]`` / ``[n; m]`` and ``[Passage n]``; each ``n`` in 1..k becomes the id of the
  n-th passage; the marks are taken out of the sentence's text (``crops [1].`` → ``crops.``), as TREC RAG answers
  keep the sentence and its citations apart;
- marks that open a sentence (``… crops. [1] Bees …``: Punkt ends the sentence at the full stop) belong to the
  sentence before; a sentence that is only marks adds them to the sentence before;
- a number outside 1..k cites nothing (there is no such passage): it is dropped, and counted in ``dropped``;
- a sentence with no usable mark keeps no citation: citation-support scoring counts it in recall with weight 0, which
  is what an uncited claim is worth; nothing is attributed to a passage the model did not name;
- a cited passage is cited once per sentence, in the order the marks give;
- a sentence the reply repeats word for word is kept once, with the citations of all its copies (a small model
  decoding greedily falls into loops that repeat a passage's sentences);
- a last piece without a closing ``.``, ``!`` or ``?`` after complete sentences is dropped: the reply was cut off by
  ``max_new_tokens`` in mid-sentence (a reply of that one piece alone is kept).

A reply is **malformed** when it has no sentence, or, with ``require_citation``, when it cites no listed passage at
all (an endpoint's model is asked to cite, and one that never does ignored the format). The job asks an endpoint
again and fails when the reply stays malformed, nothing of that batch written; the local model decodes greedily, so
asking again would give the same reply: there a malformed reply fails the job at once.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from ecast.pipeline.preprocess import split_sentences

PROMPT_VERSION = "ecast-baseline-rag/v1"
SYSTEM = (
    "You are a search assistant. You answer questions only from the numbered passages you are given, and you cite "
    "the passage each sentence comes from with its number in square brackets, like [1]."
)
USER_TEMPLATE = """Passages:
{passages}

Question: {question}
Write a short answer (at most {sentences} sentences) from the passages. End each sentence with the number of the \
passage it comes from, like [1]."""
# The worked example (our own text) shown before the question.
EXAMPLE_QUESTION = "Where is the Eiffel Tower, and why was it built?"
EXAMPLE_PASSAGES = (
    "The Eiffel Tower is a wrought-iron tower in Paris. It was built for the 1889 World's Fair.",
    "Paris is the capital and largest city of France.",
    "Mount Fuji is the highest mountain in Japan.",
)
EXAMPLE_ANSWER = (
    "The Eiffel Tower is a wrought-iron tower in Paris [1]. Paris is the capital of France [2]. "
    "It was built for the 1889 World's Fair [1]."
)
DECISION = (
    "generative: the question and the BM25 top-k passages numbered [1]..[k] (after one worked example) to a chat "
    "model, greedy (temperature 0); the reply split into sentences by Punkt, each [n] mapped to the n-th passage, "
    "numbers outside 1..k dropped, uncited sentences kept without citation"
)
# [1]  [1, 2]  [1;3]  [Passage 2]  [passages 1, 2]
MARK = re.compile(r"\s*\[\s*((?:passages?\s*)?\d+(?:\s*[,;]\s*(?:passages?\s*)?\d+)*)\s*\]", re.IGNORECASE)
LEADING_MARKS = re.compile(rf"^(?:{MARK.pattern})+", re.IGNORECASE)
NUMBER = re.compile(r"\d+")


@dataclass(frozen=True)
class CitedSentence:
    text: str
    citations: tuple[str, ...]


@dataclass(frozen=True)
class ParsedAnswer:
    """The answer read from a reply: its sentences with passage ids, and what could not be used."""

    sentences: list[CitedSentence]
    dropped: list[int] = field(default_factory=list)  # numbers outside 1..k

    @property
    def text(self) -> str:
        return " ".join(s.text for s in self.sentences)

    @property
    def uncited(self) -> int:
        return sum(1 for s in self.sentences if not s.citations)


def numbered(passages: Sequence[str]) -> str:
    return "\n".join(f"[{i}] {' '.join(p.split())}" for i, p in enumerate(passages, start=1))


def messages(*, question: str, passages: Sequence[str], sentences: int = 3) -> list[dict[str, str]]:
    """The chat for one turn: system, the worked example, then the question with its numbered passages."""
    example = USER_TEMPLATE.format(passages=numbered(EXAMPLE_PASSAGES), question=EXAMPLE_QUESTION, sentences=3)
    user = USER_TEMPLATE.format(passages=numbered(passages), question=question, sentences=sentences)
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": example},
        {"role": "assistant", "content": EXAMPLE_ANSWER},
        {"role": "user", "content": user},
    ]


def template() -> str:
    """The prompt as provenance records it (the chat with placeholders)."""
    return json.dumps(messages(question="{question}", passages=["{passage 1}", "…", "{passage k}"]), ensure_ascii=False)


def _numbers(marks: Sequence[str]) -> list[int]:
    return [int(n) for m in marks for n in NUMBER.findall(m)]


def parse_answer(reply: str, passage_ids: Sequence[str], *, require_citation: bool = False) -> ParsedAnswer | None:
    """The cited sentences of ``reply`` (passage ``[n]`` is ``passage_ids[n - 1]``); None when malformed."""
    pieces: list[tuple[str, list[int]]] = []  # (text without marks, cited numbers)
    for sentence in split_sentences(" ".join(reply.split())):
        lead = LEADING_MARKS.match(sentence)
        if lead:
            numbers = _numbers(MARK.findall(lead.group(0)))
            if pieces:
                pieces[-1][1].extend(numbers)
            else:
                pieces.append(("", numbers))  # marks before any text: kept for the first sentence
            sentence = sentence[lead.end() :]
        numbers = _numbers(MARK.findall(sentence))
        text = MARK.sub("", sentence)
        text = re.sub(r"\s+([.,;:!?])", r"\1", text).strip()
        if not re.search(r"\w", text):
            if pieces:
                pieces[-1][1].extend(numbers)
            continue
        if pieces and not pieces[0][0]:  # the leading marks found their sentence
            numbers = pieces.pop()[1] + numbers
        pieces.append((text, numbers))
    pieces = [p for p in pieces if p[0]]
    if len(pieces) > 1 and not re.search(r"[.!?][\"')\]]*$", pieces[-1][0]):
        pieces.pop()
    merged: dict[str, list[int]] = {}
    for text, numbers in pieces:
        merged.setdefault(text, []).extend(numbers)
    pieces = list(merged.items())
    if not pieces:
        return None
    k = len(passage_ids)
    dropped: list[int] = []
    out = []
    for text, numbers in pieces:
        cited: dict[str, None] = {}
        for n in numbers:
            if 1 <= n <= k:
                cited[passage_ids[n - 1]] = None
            else:
                dropped.append(n)
        out.append(CitedSentence(text=text, citations=tuple(cited)))
    answer = ParsedAnswer(sentences=out, dropped=dropped)
    if require_citation and answer.uncited == len(out):
        return None
    return answer
