"""Built-in conversational baselines: a bm25s index over passage texts and the query strategies of Faggioli et al.
(ECIR 2022, Sec. 4.1), applied to a conversation in a given (possibly permuted) order.

Strategies (each yields a weighted query [(text, weight), ...] per turn):
  current  – the current utterance only (non-contextual BM25)
  fu       – first utterance + current (FU)
  cu       – first + previous + current (CU); "previous" is the previous turn IN THE GIVEN ORDER
  lp       – λ·current + (1−λ)·previous (LP, λ = 0.6); BM25 is linear in query-term weights, so the weighted query
             is scored as λ·BM25(current) + (1−λ)·BM25(previous)
  rewrite  – the generation pipeline's rule-based CQR (``ecast.pipeline.cqr.cqr_rewrite``), given the history in
             the given order, then BM25

Plain Python: no Django imports (``ecast.pipeline`` is Django-free too). The index is built once per corpus and cached
on disk under ``cache_dir``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from ecast.core.errors import DomainError
from ecast.pipeline.cqr import cqr_rewrite


class RetrievalError(DomainError, ValueError):
    """An unknown built-in system, or a corpus the index cannot be built over."""


LP_LAMBDA = 0.6
K1, B = 1.2, 0.75  # Terrier's defaults, as in the paper
WeightedQuery = list[tuple[str, float]]
TOKEN_CACHE_SIZE = 50_000  # query texts whose tokens an index keeps (a worker serves many experiments)


@dataclass(frozen=True)
class SystemSpec:
    id: str
    label: str
    description: str
    order_sensitive: bool


SYSTEMS: dict[str, SystemSpec] = {
    s.id: s
    for s in [
        SystemSpec("current", "BM25", "Current utterance only (non-contextual).", False),
        SystemSpec("fu", "FU", "First utterance + current.", False),
        SystemSpec("cu", "CU", "First + previous (in the permuted order) + current.", True),
        SystemSpec("lp", "LP", f"λ-weighted previous + current (λ = {LP_LAMBDA}).", True),
        SystemSpec("rewrite", "CQR-rule", "Rule-based conversational query rewrite of the history, then BM25.", True),
    ]
}


def queries_for_order(system: str, order: Sequence[int], utterances: dict[int, str]) -> dict[int, WeightedQuery]:
    """Turn number → weighted query, for one system on one order of a conversation."""
    if system not in SYSTEMS:
        raise RetrievalError(f"unknown system {system!r}")
    out: dict[int, WeightedQuery] = {}
    first = utterances[order[0]]
    if system == "rewrite":
        histories = [[utterances[n] for n in order[:i]] for i in range(len(order))]
        rewritten = cqr_rewrite(histories, [utterances[n] for n in order], backend="rule")
        return {n: [(str(text), 1.0)] for n, text in zip(order, rewritten, strict=True)}
    for i, n in enumerate(order):
        cur = utterances[n]
        prev = utterances[order[i - 1]] if i > 0 else None
        if i == 0 or system == "current":
            out[n] = [(cur, 1.0)]
        elif system == "fu":
            out[n] = [(f"{first} {cur}", 1.0)]
        elif system == "cu":
            parts = [first] if i == 1 else [first, prev or ""]
            out[n] = [(" ".join([*parts, cur]), 1.0)]
        else:  # lp
            out[n] = [(cur, LP_LAMBDA), (prev or "", 1.0 - LP_LAMBDA)]
    return out


def query_key(query: WeightedQuery) -> str:
    """Stable identity of a weighted query (same query → same ranking)."""
    return _query_key(tuple(map(tuple, query)))


# An experiment names each of its queries once per order and system (100,000 times for 2,400 orders) but holds a few
# thousand distinct ones: the digest of each is computed once per process.
@lru_cache(maxsize=65_536)
def _query_key(query: tuple[tuple[str, float], ...]) -> str:
    return hashlib.sha1(json.dumps(query, ensure_ascii=False).encode(), usedforsecurity=False).hexdigest()


def _stemmer() -> tuple[str, Callable[[str], str] | None]:
    try:
        from nltk.stem import PorterStemmer
    except Exception:  # noqa: BLE001 - stemming is optional; recorded in the index key
        return "none", None
    return "porter", PorterStemmer().stem


def _bm25s() -> Any:
    """bm25s, imported on first use (it is heavy); it sets its logger to DEBUG on import and narrates every index
    build, so its messages are kept to warnings."""
    import bm25s

    logging.getLogger("bm25s").setLevel(logging.WARNING)
    return bm25s


def warm() -> None:
    """Import and load what the first retrieval in a process would (bm25s, NLTK's stemmer, the rule-based rewriter's
    tagger): about half a CPU second that otherwise lands on the first chunk each worker runs."""
    _bm25s()
    _stemmer()
    queries_for_order("rewrite", [1, 2], {1: "What is throat cancer?", 2: "Is it treatable?"})


class Bm25Index:
    """A bm25s index plus the passage ids of its rows."""

    def __init__(self, retriever: Any, doc_ids: list[str], stemmer_name: str) -> None:
        self.retriever = retriever
        self.doc_ids = doc_ids
        self.stemmer_name = stemmer_name
        self.key = ""
        _, self._stem = _stemmer() if stemmer_name != "none" else ("none", None)
        # Permuted orders repeat the same utterances in many queries; bm25s tokenising is most of a query's cost.
        self._token_cache: dict[str, list[str]] = {}

    @classmethod
    def build(cls, doc_ids: Sequence[str], texts: Sequence[str]) -> Bm25Index:
        """Tokenise (English stopwords, Porter stemming when available) and index."""
        bm25s = _bm25s()

        if not doc_ids:
            raise RetrievalError("cannot build an index over an empty corpus")
        name, stem = _stemmer()
        # bm25s calls a plain-callable stemmer on the whole list of unique tokens
        stem_list = (lambda words: [stem(w) for w in words]) if stem else None
        tokens = bm25s.tokenize(list(texts), stopwords="en", stemmer=stem_list, show_progress=False)
        retriever = bm25s.BM25(k1=K1, b=B)
        retriever.index(tokens, show_progress=False)
        return cls(retriever, list(doc_ids), name)

    def save(self, path: Path) -> None:
        """Write the index under ``path`` atomically. Workers sharing a cache each write into their own temporary
        directory; the first rename wins and a later writer of the same key (same corpus) drops its copy."""
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=f"{path.name}.tmp-"))
        try:
            self.retriever.save(str(tmp), show_progress=False)
            (tmp / "doc_ids.json").write_text(json.dumps({"doc_ids": self.doc_ids, "stemmer": self.stemmer_name}))
            try:
                tmp.rename(path)  # atomic: a reader never sees a half-written index
            except OSError:
                if not (path / "doc_ids.json").exists():
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    @classmethod
    def load(cls, path: Path) -> Bm25Index:
        bm25s = _bm25s()

        meta = json.loads((path / "doc_ids.json").read_text())
        retriever = bm25s.BM25.load(str(path), show_progress=False)
        return cls(retriever, meta["doc_ids"], meta["stemmer"])

    def _tokens(self, text: str) -> list[str]:
        cached = self._token_cache.get(text)
        if cached is not None:
            return cached
        bm25s = _bm25s()

        toks = bm25s.tokenize([text], stopwords="en", return_ids=False, show_progress=False)[0]
        out = [self._stem(t) for t in toks] if self._stem else list(toks)
        if len(self._token_cache) >= TOKEN_CACHE_SIZE:
            self._token_cache.clear()
        self._token_cache[text] = out
        return out

    def scores(self, query: WeightedQuery) -> np.ndarray:
        """BM25 scores of every passage for a weighted query (Σ weight · BM25(text))."""
        total = np.zeros(len(self.doc_ids), dtype=np.float64)
        for text, weight in query:
            toks = [t for t in self._tokens(text) if t in self.retriever.vocab_dict]
            if toks and weight:
                total += weight * self.retriever.get_scores(toks)
        return total

    def search(self, query: WeightedQuery, depth: int) -> tuple[list[str], list[float]]:
        """Top ``depth`` passage ids and scores (passages with score 0 are not retrieved)."""
        s = self.scores(query)
        k = min(depth, s.size)
        top = np.argpartition(-s, k - 1)[:k] if k < s.size else np.arange(s.size)
        top = top[np.lexsort((top, -s[top]))]  # score desc, row asc: deterministic ties
        top = top[s[top] > 0]
        return [self.doc_ids[i] for i in top], [float(s[i]) for i in top]


# The index this process holds, by (cache folder, corpus key): a process pointed at another cache folder reads or
# writes its index there instead of serving one whose files that folder lacks.
_LOADED: dict[tuple[str, str], Bm25Index] = {}
_LOCK = threading.Lock()


def corpus_key(doc_ids: Sequence[str], texts: Sequence[str]) -> str:
    """Identity of a corpus (ids and texts) and tokenisation: a changed passage gives a new index."""
    h = hashlib.sha1(usedforsecurity=False)
    h.update(f"k1={K1};b={B};stem={_stemmer()[0]}".encode())
    for d, t in zip(doc_ids, texts, strict=True):
        h.update(d.encode())
        h.update(b"\0")
        h.update(hashlib.sha1(t.encode(), usedforsecurity=False).digest())
    return h.hexdigest()


def index_for_corpus(cache_dir: Path, doc_ids: Sequence[str], texts: Sequence[str]) -> Bm25Index:
    """The index for this corpus: from this process's memory, else from disk, else built and saved."""
    key = corpus_key(doc_ids, texts)
    held = (str(cache_dir), key)
    with _LOCK:
        if held in _LOADED:
            return _LOADED[held]
        path = Path(cache_dir) / "bm25" / key
        if (path / "doc_ids.json").exists():
            index = Bm25Index.load(path)
        else:
            index = Bm25Index.build(doc_ids, texts)
            index.save(path)
        _LOADED.clear()  # keep one index per process: corpora can be large
        _LOADED[held] = index
        index.key = key
        return index


def index_by_key(cache_dir: Path, key: str) -> Bm25Index | None:
    """A previously built index by its corpus key (memory, then disk), or None when this machine lacks it."""
    held = (str(cache_dir), key)
    with _LOCK:
        if held in _LOADED:
            return _LOADED[held]
        path = Path(cache_dir) / "bm25" / key
        if not (path / "doc_ids.json").exists():
            return None
        index = Bm25Index.load(path)
        index.key = key
        _LOADED.clear()
        _LOADED[held] = index
        return index
