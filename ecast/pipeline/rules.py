"""Deterministic rule-based baselines: the ECAsT "Entity Removal" context-removal baseline (drop nouns and
proper nouns by POS tag, Table 9) and a pronoun-substitution CQR (replace pronouns with the last noun phrase
of the history).

The POS tagger is the averaged perceptron trained on UD English-EWT that ships in ``denckring-en-pos``
(installed with --no-deps). Its package ``__init__`` imports a framework we do not install, so the model
file and the plain-Python inference module are loaded from the package folder directly.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any


class TaggerMissing(RuntimeError):
    """Raised when the POS tagger package is not installed."""


def tagger_dir() -> Path:
    """Folder of the installed ``denckring_en_pos`` package (found without importing it)."""
    spec = importlib.util.find_spec("denckring_en_pos")
    if spec is None or not spec.submodule_search_locations:
        raise TaggerMissing("POS tagger package denckring-en-pos is not installed; run `make install`.")
    return Path(list(spec.submodule_search_locations)[0])


@lru_cache(maxsize=1)
def _tagger() -> Any:
    folder = tagger_dir()
    spec = importlib.util.spec_from_file_location("_ecast_pos_perceptron", folder / "perceptron.py")
    if spec is None or spec.loader is None:
        raise TaggerMissing(f"{folder / 'perceptron.py'} not found")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    raw = json.loads(gzip.decompress((folder / "data" / "tagger.json.gz").read_bytes()).decode("utf-8"))
    return module.Tagger(
        weights=raw["weights"], tagdict=raw["tagdict"], classes=raw["classes"], vocabulary=frozenset(raw["vocabulary"])
    )


_TOKEN = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z]+)*|[^\sA-Za-z0-9]")


def tokenize(text: str) -> list[str]:
    """Words (with internal apostrophes) and single punctuation marks."""
    return _TOKEN.findall(text)


def tag_words(words: list[str]) -> list[str]:
    """Universal POS tags for a list of words as given (clitics such as "n't" included), in order."""
    return [label.partition("|")[0] for label in _tagger().tag(words)] if words else []


def pos_tag(words: list[str]) -> list[str]:
    """Universal POS tags (NOUN, PROPN, PRON, ...) for word tokens; punctuation tokens get PUNCT."""
    word_idx = [i for i, w in enumerate(words) if w[0].isalnum()]
    tags = ["PUNCT"] * len(words)
    labels = _tagger().tag([words[i] for i in word_idx]) if word_idx else []
    for i, label in zip(word_idx, labels, strict=True):
        tags[i] = label.partition("|")[0]
    return tags


def _detokenize(tokens: list[str]) -> str:
    text = " ".join(tokens)
    text = re.sub(r"\s+([?.!,;:%)\]])", r"\1", text)
    text = re.sub(r"([(\[])\s+", r"\1", text)
    return text.strip()


def entity_removal(text: str) -> str:
    """ECAsT's Entity Removal baseline: remove every NOUN and PROPN token from a manual turn."""
    tokens = tokenize(text)
    tags = pos_tag(tokens)
    kept = [t for t, tag in zip(tokens, tags, strict=True) if tag not in ("NOUN", "PROPN")]
    out = _detokenize(kept)
    return out[:1].upper() + out[1:] if out else out


_PRONOUNS = {"it", "its", "they", "them", "their", "this", "that", "these", "those", "he", "she", "him", "her", "his"}
_POSSESSIVE = {"its", "their", "his"}


def last_noun_phrase(history: list[str]) -> str | None:
    """The last run of adjectives and nouns ending in a NOUN/PROPN, searching the most recent turn first."""
    for utterance in reversed(history):
        phrase = _last_noun_phrase_of(utterance)
        if phrase:
            return phrase
    return None


# Rewriting every permuted order of a conversation tags the same few utterances thousands of times; the phrase is a
# pure function of the text, so each utterance is tagged once per process.
@lru_cache(maxsize=8192)
def _last_noun_phrase_of(utterance: str) -> str | None:
    tokens = tokenize(utterance)
    tags = pos_tag(tokens)
    phrases: list[list[tuple[str, str]]] = []
    current: list[tuple[str, str]] = []
    for token, tag in zip(tokens, tags, strict=True):
        if tag in ("NOUN", "PROPN", "ADJ"):
            current.append((token if tag == "PROPN" or token.isupper() else token.lower(), tag))
        elif current:
            phrases.append(current)
            current = []
    if current:
        phrases.append(current)
    for phrase in reversed(phrases):
        while phrase and phrase[-1][1] == "ADJ":  # a noun phrase ends in a noun
            phrase = phrase[:-1]
        if phrase:
            return " ".join(token for token, _ in phrase)
    return None


def rule_cqr(history: list[str], utterance: str) -> str:
    """Replace third-person pronouns in the utterance with the last noun phrase of the history."""
    phrase = last_noun_phrase(history)
    return _pronoun_replaced(utterance, phrase) if phrase else utterance


# Permuted orders put the same utterance after the same phrase thousands of times (a permutation experiment rewrites
# 20,000 turns that hold under a thousand distinct pairs): the rewrite is a pure function of the two.
@lru_cache(maxsize=8192)
def _pronoun_replaced(utterance: str, phrase: str) -> str:
    tokens = tokenize(utterance)
    out = []
    replaced = False
    for token in tokens:
        low = token.lower()
        if low in _PRONOUNS and not replaced:
            out.append(phrase + "'s" if low in _POSSESSIVE else phrase)
            replaced = True
        else:
            out.append(token)
    text = _detokenize(out)
    return text[:1].upper() + text[1:] if text else text


_TEMPLATES = (
    "Can you tell me {q}?",
    "I would like to know {q}.",
    "Please explain {q}.",
    "Do you know {q}?",
    "I'm curious: {q}?",
)
_TOPIC_TEMPLATES = (
    "What can you tell me about {t}?",
    "I would like to learn about {t}.",
    "Give me some information about {t}.",
    "What should I know about {t}?",
    "Could you describe {t}?",
)
_TELL_ME = re.compile(
    r"^(?:can you |could you )?(?:please )?(?:tell me|describe|explain)(?: more)?(?: about)?\s+(.+)$", re.I
)


def template_paraphrases(question: str) -> list[str]:
    """Deterministic template rewordings of a question (a lexical baseline, not a model)."""
    core = question.strip().rstrip("?.! ")
    if not core:
        return []
    topic = _TELL_ME.match(core)
    if topic:
        return [t.format(t=topic.group(1)) for t in _TOPIC_TEMPLATES]
    core = core[0].lower() + core[1:] if not core[:2].isupper() else core
    return [t.format(q=core) for t in _TEMPLATES]
