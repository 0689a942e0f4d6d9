"""Adjudication orders for a relevance pool: which pooled document is judged next (Django-free).

Used live by the assessor queue (``judging.relevance.ordering``) and replayed by the budget simulation
(``evaluation.analyses.budget``).

A strategy works on one *topic* in the pooling sense: one query with its own ranked lists, one per run. In CAsT
a conversation is judged as a whole, one turn after another, but every turn is a query with its own run lists,
so every turn is a topic here: the assessor queue walks a conversation's turns in turn order and, inside each turn,
hands out the documents in the order of that turn's strategy (see ``judging.relevance.ordering``).

Strategies (names as stored on a pool):

``depth_first``
    Today's order and the TREC default: every document in order of its best (smallest) rank over the runs,
    ties by document id. Judgments do not change it ("DocId"/depth-k pooling).

``mtf``
    Move-to-front, Cormack, Palmer & Clarke, "Efficient construction of large test collections", SIGIR 1998, §3;
    as restated by Losada, Parapar & Barreiro, IP&M 53(5) 2017, §2.2. Every run starts with the same (maximum)
    priority. Documents are taken from the top of the current run, skipping documents already judged; while they
    are relevant the run keeps the turn; a non-relevant document lowers the run's priority by one and the turn
    passes to the run of highest priority. A run with no unjudged document left is out.

``mm_ns``
    MaxMean with a discount on older evidence, after the non-stationary MaxMean ("MM-NS") bandit of Losada, Parapar
    & Barreiro (SAC 2016; IP&M 53(5) 2017; the variant NIST used to build the TREC 2017 Common Core qrels). What is
    taken from the papers (their abstracts and the restatements we could read): every run j is an arm whose
    chance of giving a relevant document has a Beta(1, 1) prior, updated to Beta(1 + rel_j, 1 + nrel_j) by the
    run's judged documents; the arm played is the one of maximum posterior mean
    E[θ_j] = (1 + rel_j) / (2 + rel_j + nrel_j) ("MaxMean", instead of drawing a sample as Thompson sampling
    does); playing an arm judges the run's highest-ranked unjudged document; a judgment is evidence for every run
    that retrieved the document; "non-stationary" because a run's chance of relevance falls as the judging goes
    deeper. **The exact non-stationary update is ours, not the papers'**: the papers' own definition (IP&M §3)
    could not be read here (a search of public pages, documentation and code on 2026-11-24 found only abstracts
    and citations), so we discount geometrically — with the run's judged documents in the order they were
    judged, r_1 … r_n (1 relevant, 0 not), rel_j = Σ_k γ^(n−k)·r_k and nrel_j = Σ_k γ^(n−k)·(1 − r_k) — and the
    constant γ = ``gamma`` (default 0.9) is our choice. Figures measured with ``mm_ns`` are figures of this
    reading; with γ = 1 it is exactly ``mm``.

``mm``
    The stationary MaxMean bandit of the same papers: ``mm_ns`` with γ = 1 (every judgment of a run counts alike).

Prior (bandits only; our addition, the papers define none): labels that exist before the judging — an earlier
qrels version, or LLM pre-judgments of the pool's own documents — can seed each arm. ``prior`` gives, per run, the
relevance the labels give its documents, in rank order; they are fed to the arm as if judged first (so with γ < 1
the deepest weighs most). Seeding changes only the arms' means: a pooled document the prior grades is still handed
out and judged (an earlier version's judged documents are usually not in the pool at all). Depth-first and
move-to-front ignore it.

Ties (documented rule, so that the order is a function of the judgments alone):
- runs are ordered by name in natural order (digit runs compare as numbers: exp2 before exp10, as people number
  runs; ``ecast.trees.natural_key``), unless the caller gives another run order (``order``: the budget simulation
  replays seeded shuffles to show how much the ties matter); ``depth_first`` breaks rank ties by document id;
- ``mtf``: among runs of equal highest priority, the first one in cyclic run order *after* the run that just
  lost the turn (so the run that missed comes last among equals); the first run in that order starts;
- ``mm_ns`` and ``mm``: among arms of equal posterior mean, the first in run order.

Determinism: :func:`next_document` replays a strategy from the start, feeding it the known grade whenever it picks
an already judged document, and returns the first pick that is not judged. The answer therefore depends only on
the set of judgments (and the runs), never on who judged what first, on timing, or on earlier requests.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from ecast.core.errors import DomainError
from ecast.trees import natural_key


class AdjudicationError(DomainError, ValueError):
    """An unknown judging order, or a parameter of one out of range."""


__all__ = [
    "BANDITS",
    "STRATEGIES",
    "DEFAULT_STRATEGY",
    "Strategy",
    "make_strategy",
    "next_document",
    "judging_order",
    "planned_order",
]

DEFAULT_STRATEGY = "depth_first"
STRATEGIES: dict[str, str] = {
    "depth_first": "Depth-first by run rank (DocId / depth-k)",
    "mtf": "Move-to-front (Cormack et al. 1998)",
    "mm_ns": "MM-NS bandit (Losada et al. 2016/2017)",
    "mm": "MM bandit, stationary (Losada et al. 2017)",
}
BANDITS = ("mm_ns", "mm")  # the strategies that take a prior
DEFAULT_GAMMA = 0.9  # our constant: the papers' non-stationary update could not be checked (see ``mm_ns`` above)

Runs = Mapping[str, Sequence[str]]
Prior = Mapping[str, Sequence[bool]]  # run → relevance of its documents judged before the pool, in rank order


class Strategy:
    """One topic's judging order: ``choose`` the next document, then ``observe`` its relevance."""

    def __init__(self, runs: Runs, *, order: Sequence[str] | None = None) -> None:
        if order is not None and sorted(order) != sorted(runs):
            raise AdjudicationError("the run order must name each of the runs once")
        self.names = list(order) if order is not None else sorted(runs, key=natural_key)
        # A run that lists a document twice keeps its first (best) rank.
        self.lists = [list(dict.fromkeys(runs[n])) for n in self.names]
        self.judged: dict[str, bool] = {}
        self._ptr = [0] * len(self.lists)

    def _top(self, i: int) -> str | None:
        """Run i's highest-ranked unjudged document (its pointer only moves forward)."""
        docs, p = self.lists[i], self._ptr[i]
        while p < len(docs) and docs[p] in self.judged:
            p += 1
        self._ptr[i] = p
        return docs[p] if p < len(docs) else None

    def choose(self) -> str | None:
        raise NotImplementedError

    def seed(self, prior: Prior) -> None:
        """Start from earlier judgments (bandits only; the other strategies define no prior)."""

    def observe(self, doc: str, relevant: bool) -> None:
        self.judged[doc] = bool(relevant)


class DepthFirst(Strategy):
    """Best rank over the runs, then document id."""

    def __init__(self, runs: Runs, *, order: Sequence[str] | None = None) -> None:
        super().__init__(runs, order=order)
        best: dict[str, int] = {}
        for docs in self.lists:
            for rank, d in enumerate(docs):
                best[d] = min(best.get(d, rank), rank)
        self.order = sorted(best, key=lambda d: (best[d], d))
        self._i = 0

    def choose(self) -> str | None:
        while self._i < len(self.order) and self.order[self._i] in self.judged:
            self._i += 1
        return self.order[self._i] if self._i < len(self.order) else None


class MoveToFront(Strategy):
    """Cormack, Palmer & Clarke (SIGIR 1998): stay on a run while it gives relevant documents."""

    def __init__(self, runs: Runs, *, order: Sequence[str] | None = None) -> None:
        super().__init__(runs, order=order)
        self.priority = [0] * len(self.lists)
        self.current = 0

    def _select(self, after: int) -> int | None:
        """Highest priority among runs with documents left; ties in cyclic order starting after ``after``."""
        n = len(self.lists)
        best: int | None = None
        for step in range(1, n + 1):
            i = (after + step) % n
            if self._top(i) is not None and (best is None or self.priority[i] > self.priority[best]):
                best = i
        return best

    def choose(self) -> str | None:
        if not self.lists:
            return None
        if self._top(self.current) is None:
            nxt = self._select(self.current)
            if nxt is None:
                return None
            self.current = nxt
        return self._top(self.current)

    def observe(self, doc: str, relevant: bool) -> None:
        # Only the document the current run offered moves the turn; a document judged out of order is just known.
        offered = bool(self.lists) and self._top(self.current) == doc
        super().observe(doc, relevant)
        if offered and not relevant:
            self.priority[self.current] -= 1
            nxt = self._select(self.current)
            if nxt is not None:
                self.current = nxt


class MaxMeanNonStationary(Strategy):
    """Maximum posterior mean (Losada, Parapar & Barreiro, SAC 2016, IP&M 2017) with our geometric discount γ."""

    def __init__(self, runs: Runs, *, gamma: float = DEFAULT_GAMMA, order: Sequence[str] | None = None) -> None:
        if not 0.0 < gamma <= 1.0:
            raise AdjudicationError(f"gamma must be in (0, 1], got {gamma!r}")
        super().__init__(runs, order=order)
        self.gamma = gamma
        self.rel = [0.0] * len(self.lists)
        self.nrel = [0.0] * len(self.lists)
        self._runs_of: dict[str, list[int]] = {}
        for i, docs in enumerate(self.lists):
            for d in docs:
                self._runs_of.setdefault(d, []).append(i)

    def seed(self, prior: Prior) -> None:
        for i, name in enumerate(self.names):
            for relevant in prior.get(name, ()):
                self.rel[i] = self.gamma * self.rel[i] + (1.0 if relevant else 0.0)
                self.nrel[i] = self.gamma * self.nrel[i] + (0.0 if relevant else 1.0)

    def mean(self, i: int) -> float:
        """Posterior mean of run i's Beta(1 + rel, 1 + nrel)."""
        return (1.0 + self.rel[i]) / (2.0 + self.rel[i] + self.nrel[i])

    def choose(self) -> str | None:
        best: int | None = None
        best_mean = -1.0
        for i in range(len(self.lists)):
            if self._top(i) is None:
                continue
            m = self.mean(i)
            if m > best_mean:
                best, best_mean = i, m
        return None if best is None else self._top(best)

    def observe(self, doc: str, relevant: bool) -> None:
        if doc in self.judged:
            return
        super().observe(doc, relevant)
        # Discounting every earlier observation by γ before adding the new one with weight 1 gives
        # Σ_k γ^(n−k)·r_k without keeping the sequence.
        for i in self._runs_of.get(doc, ()):
            self.rel[i] = self.gamma * self.rel[i] + (1.0 if relevant else 0.0)
            self.nrel[i] = self.gamma * self.nrel[i] + (0.0 if relevant else 1.0)


def make_strategy(
    name: str,
    runs: Runs,
    *,
    gamma: float = DEFAULT_GAMMA,
    prior: Prior | None = None,
    order: Sequence[str] | None = None,
) -> Strategy:
    """A fresh strategy of the given name over one topic's run lists, seeded with ``prior`` if given; ``order`` is
    the run order ties follow (default: the run names in natural order)."""
    strategy: Strategy
    if name == "depth_first":
        strategy = DepthFirst(runs, order=order)
    elif name == "mtf":
        strategy = MoveToFront(runs, order=order)
    elif name == "mm_ns":
        strategy = MaxMeanNonStationary(runs, gamma=gamma, order=order)
    elif name == "mm":
        strategy = MaxMeanNonStationary(runs, gamma=1.0, order=order)
    else:
        raise AdjudicationError(f"unknown judging strategy {name!r}; choose one of {', '.join(STRATEGIES)}")
    if prior:
        strategy.seed(prior)
    return strategy


def _replay(strategy: Strategy, judged: Mapping[str, bool]) -> str | None:
    """Feed the strategy every judged pick; return its first pick that is not judged (None: all done)."""
    while (doc := strategy.choose()) is not None:
        if doc not in judged:
            return doc
        strategy.observe(doc, judged[doc])
    return None


def next_document(
    name: str, runs: Runs, judged: Mapping[str, bool], *, gamma: float = DEFAULT_GAMMA, prior: Prior | None = None
) -> str | None:
    """The document to judge next given the judgments so far ({doc: relevant}); None when every one is judged."""
    return _replay(make_strategy(name, runs, gamma=gamma, prior=prior), judged)


def planned_order(
    name: str, runs: Runs, judged: Mapping[str, bool], *, gamma: float = DEFAULT_GAMMA, prior: Prior | None = None
) -> list[str]:
    """The unjudged documents in the order they would come if every one of them turned out non-relevant.

    The first is exactly :func:`next_document`; the rest is a forecast that the next judgment may change.
    """
    strategy = make_strategy(name, runs, gamma=gamma, prior=prior)
    out: list[str] = []
    doc = _replay(strategy, judged)
    while doc is not None:
        out.append(doc)
        strategy.observe(doc, False)
        doc = _replay(strategy, judged)
    return out


def judging_order(
    name: str,
    runs: Runs,
    relevant: Callable[[str], bool] | Mapping[str, bool] | Iterable[str],
    *,
    gamma: float = DEFAULT_GAMMA,
    prior: Prior | None = None,
    order: Sequence[str] | None = None,
) -> list[str]:
    """Every pooled document once, in the order the strategy asks for them when ``relevant`` answers truthfully.

    ``relevant`` is a predicate, a {doc: bool} mapping or a set of relevant documents (others non-relevant);
    ``order`` the run order ties follow (default: natural name order).
    """
    if callable(relevant):
        is_rel = relevant
    elif isinstance(relevant, Mapping):
        table = relevant
        is_rel = lambda d: bool(table.get(d, False))  # noqa: E731
    else:
        rel_set = set(relevant)
        is_rel = rel_set.__contains__
    strategy = make_strategy(name, runs, gamma=gamma, prior=prior, order=order)
    out: list[str] = []
    while (doc := strategy.choose()) is not None:
        out.append(doc)
        strategy.observe(doc, is_rel(doc))
    return out
