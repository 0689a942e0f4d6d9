"""Deterministic rule-based baselines: the ECAsT "Entity Removal" context-removal baseline (drop nouns and
proper nouns by POS tag, Table 9) and template paraphrases; the POS tagger they and the CQR resolver
(:mod:`ecast.pipeline.resolver`) share.

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


_LEARN_ABOUT = re.compile(r"^i(?:'d| would) like to (?:know|learn)(?: more)? about\s+(.+)$", re.I)
_WH = frozenset({"what", "which", "who", "whom", "whose", "why", "how", "where", "when"})


def template_paraphrases(question: str) -> list[str]:
    """Deterministic template rewordings of a question's last sentence (a lexical baseline, not a model): a request
    about a topic gets the topic templates, a wh-question the embedding ones, a yes/no question only "I'm curious:
    …?" ("Can you tell me is it treatable?" is no English), anything else none ("Now my garage door opener stopped
    working. Why?" would become "Can you tell me now my … Why?")."""
    sentences = re.split(r"(?<=[.?!])\s+", question.strip())
    core = sentences[-1].strip().rstrip("?.! ") if sentences else ""
    if not core:
        return []
    topic = _TELL_ME.match(core) or _LEARN_ABOUT.match(core)
    if topic:
        return [t.format(t=topic.group(1)) for t in _TOPIC_TEMPLATES]
    first = core.split()[0].lower()
    core = core[0].lower() + core[1:] if not core[:2].isupper() else core
    if first in _WH and len(core.split()) > 1:
        return [t.format(q=core) for t in _TEMPLATES]
    if (
        len(core.split()) > 2
        and re.fullmatch(r"[a-z']+", first)
        and first not in _WH
        and question.rstrip().endswith("?")
    ):
        return [f"I'm curious: {core}?"]
    return []
