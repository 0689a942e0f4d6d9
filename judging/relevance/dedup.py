"""Near-duplicate passage clustering for relevance pools (plain Python, no Django).

Two passages are near duplicates when their normalised texts are equal or the Jaccard similarity of their word
k-shingles reaches a threshold (Broder's resemblance). Clusters are the connected components of that relation
(single link, via union-find), so one judgment can stand for a whole cluster. Passages without text are never
clustered: without text there is no evidence that two ids carry the same content.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from ecast.core.errors import DomainError


class DedupError(DomainError, ValueError):
    """A near-duplicate clustering parameter out of range."""


_TOKEN = re.compile(r"\w+", re.UNICODE)


def normalise(text: str) -> str:
    """Lower-cased, accent-folded, punctuation-free text with single spaces."""
    folded = unicodedata.normalize("NFKD", text)
    folded = "".join(ch for ch in folded if not unicodedata.combining(ch))
    return " ".join(_TOKEN.findall(folded.lower()))


def shingles(text: str, k: int = 3) -> frozenset[tuple[str, ...]]:
    """The set of word k-grams of the normalised text; a text shorter than k words is one shingle."""
    words = normalise(text).split()
    if not words:
        return frozenset()
    if len(words) < k:
        return frozenset([tuple(words)])
    return frozenset(tuple(words[i : i + k]) for i in range(len(words) - k + 1))


def jaccard(a: frozenset, b: frozenset) -> float:
    """|a ∩ b| / |a ∪ b|, with two empty sets counted as dissimilar (no content, no evidence)."""
    if not a or not b:
        return 0.0
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter)


def cluster(items: Sequence[tuple[str, str | None]], *, threshold: float = 0.9, k: int = 3) -> list[list[str]]:
    """Group ``(id, text)`` items into near-duplicate clusters, keeping input order.

    Every id appears in exactly one cluster; the first id of a cluster is the earliest in ``items`` (callers pass
    best-ranked first, so the head is the passage assessors would have seen first). Items with empty or missing
    text are singletons.
    """
    if not 0.0 < threshold <= 1.0:
        raise DedupError(f"threshold must be in (0, 1], got {threshold}")
    ids = [pid for pid, _ in items]
    parent = list(range(len(ids)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def union(i: int, j: int) -> None:
        ri, rj = find(i), find(j)
        if ri != rj:
            # The earlier item stays root so heads keep input order.
            parent[max(ri, rj)] = min(ri, rj)

    normalised: list[str | None] = []
    sets: list[frozenset] = []
    for _, text in items:
        norm = normalise(text) if text else ""
        normalised.append(norm or None)
        sets.append(shingles(norm, k) if norm else frozenset())
    by_exact: dict[str, int] = {}
    for i, maybe in enumerate(normalised):
        if maybe is None:
            continue
        if maybe in by_exact:
            union(by_exact[maybe], i)
        else:
            by_exact[maybe] = i
    textual = [i for i, maybe in enumerate(normalised) if maybe is not None]
    for a_pos, i in enumerate(textual):
        for j in textual[a_pos + 1 :]:
            if find(i) != find(j) and jaccard(sets[i], sets[j]) >= threshold:
                union(i, j)
    groups: dict[int, list[str]] = {}
    for i, pid in enumerate(ids):
        groups.setdefault(find(i), []).append(pid)
    return [groups[root] for root in sorted(groups)]
