"""What a relevance pool is made of, read a chunk of turns at a time: the runs' rankings, the pairs a qrels version
judged, which passages have text; and the walk that picks a pool's pairs from them. Reads only (``pools`` writes).

A pool build or preview goes a chunk of turns at a time (``turn_chunks``), so it holds a chunk's rankings, never the
runs' (20 runs × 2,000 turns held 1.5 GB).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ecast.models import Passage, Turn
from evaluation.models import Qrel, QrelsVersion, Run, RunTurn

TEXT_CHUNK = 900  # below SQLite's bound-parameter limit on old builds
POOL_CHUNK = 2000  # rankings a pool build reads at a time (chunks are whole turns: ≥ one turn's rankings)


def passage_texts(passage_ids: Iterable[str]) -> dict[str, str]:
    ids = sorted(set(passage_ids))
    texts: dict[str, str] = {}
    for i in range(0, len(ids), TEXT_CHUNK):
        texts.update(
            Passage.objects.filter(passage_id__in=ids[i : i + TEXT_CHUNK])
            .exclude(text="")
            .values_list("passage_id", "text")
        )
    return texts


class TextIndex:
    """Which passage ids have text, looked up once each (a preview and a build ask about the same ids repeatedly).

    Asked about more ids than there are passages with text, it reads every id with text in one pass instead of
    many IN (...) queries."""

    def __init__(self) -> None:
        self.with_text: set[str] = set()
        self._checked: set[str] = set()
        self._total: int | None = None
        self._all_read = False

    def check(self, ids: Iterable[str]) -> None:
        if self._all_read:
            return
        new = sorted(set(ids) - self._checked)
        if not new:
            return
        if self._total is None:
            self._total = Passage.objects.exclude(text="").count()
        if self._total <= len(new):
            self.with_text = set(
                Passage.objects.exclude(text="").values_list("passage_id", flat=True).iterator(chunk_size=10000)
            )
            self._all_read = True
            return
        for i in range(0, len(new), TEXT_CHUNK):
            self.with_text.update(
                Passage.objects.filter(passage_id__in=new[i : i + TEXT_CHUNK])
                .exclude(text="")
                .values_list("passage_id", flat=True)
            )
        self._checked.update(new)

    def __contains__(self, passage_id: str) -> bool:
        return passage_id in self.with_text


Ranking = tuple[int, int, list[str]]  # (run pk, turn pk, ranked passage ids)


@dataclass
class Walk:
    """The pairs a pool would hold: (turn pk, passage) → {"runs": run pks, "rank": best rank}."""

    pairs: dict[tuple[int, str], dict[str, Any]] = field(default_factory=dict)
    skipped_judged: int = 0
    deepest_rank: int = 0  # the deepest rank taken (deeper than the depth when passages without text were passed)


def turn_chunks(runs: Sequence[Run], turns: list[Turn] | None) -> Iterator[list[int]]:
    """The pks of the turns the runs rank (of ``turns`` only, when given), ascending, in chunks of about
    ``POOL_CHUNK`` rankings: a build holds one chunk's rankings and pairs at a time, not the runs'."""
    qs = RunTurn.objects.filter(run__in=runs)
    if turns is not None:
        qs = qs.filter(turn__in=turns)
    pks = sorted(set(qs.values_list("turn_id", flat=True).iterator(chunk_size=10000)))
    size = max(1, POOL_CHUNK // max(len(runs), 1))
    for i in range(0, len(pks), size):
        yield pks[i : i + size]


def rankings_read(runs: Sequence[Run], turns: Sequence[Turn | int] | None, *, keep: int | None = None) -> list[Ranking]:
    """(run pk, turn pk, passage ids) of the runs' rankings (of ``turns`` only, when given); only the first ``keep``
    ids of each when given (a plain pool never looks deeper than its depth)."""
    qs = RunTurn.objects.filter(run__in=runs)
    if turns is not None:
        qs = qs.filter(turn__in=turns)
    rows = qs.values_list("run_id", "turn_id", "doc_ids").iterator(chunk_size=500)
    if keep is None:
        return list(rows)
    return [(run_id, turn_pk, doc_ids[:keep]) for run_id, turn_pk, doc_ids in rows]


def judged_pairs(qrels_version: QrelsVersion | None, turns: Sequence[Turn | int] | None) -> set[tuple[int, str]]:
    if qrels_version is None:  # a collection without qrels: nothing is judged yet
        return set()
    qs = Qrel.objects.filter(version=qrels_version)
    if turns is not None:
        qs = qs.filter(turn__in=turns)
    return set(qs.values_list("turn_id", "passage_id").iterator(chunk_size=5000))


def pairs_walk(
    rankings: list[Ranking], *, depth: int, judged: set[tuple[int, str]], text_only: bool, index: TextIndex
) -> Walk:
    """The top-``depth`` passages of every ranking that ``judged`` lacks; with ``text_only``, the top ``depth`` of
    each ranking restricted to passages with text (judged ones count toward the depth and are skipped, as in the
    plain pool). ``index`` then knows the text of every passage taken."""
    if text_only:
        # Widen a window over each ranking until it holds ``depth`` passages with text (or the ranking ends), so
        # only the ids that may be taken are looked up.
        window, pending = depth, list(range(len(rankings)))
        while pending:
            index.check(d for i in pending for d in rankings[i][2][:window])
            pending = [
                i
                for i in pending
                if window < len(rankings[i][2]) and sum(d in index for d in rankings[i][2][:window]) < depth
            ]
            window *= 4
    walk = Walk()
    for run_id, turn_pk, doc_ids in rankings:
        taken = 0
        for rank, doc in enumerate(doc_ids, start=1):
            if taken == depth:
                break
            if text_only and doc not in index:
                continue
            taken += 1
            walk.deepest_rank = max(walk.deepest_rank, rank)
            key = (turn_pk, doc)
            if key in judged:
                walk.skipped_judged += 1
                continue
            entry = walk.pairs.setdefault(key, {"runs": set(), "rank": rank})
            entry["runs"].add(run_id)
            entry["rank"] = min(entry["rank"], rank)
    if not text_only:
        index.check(doc for _, doc in walk.pairs)
    return walk
