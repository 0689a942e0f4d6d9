"""Session (dynamic search) metrics and the simple metrics of the meta-evaluation, on plain data; no Django.

A *session* is a list of iterations, each a list of doc ids in rank order (TREC DD: 5 docs per iteration).
*Subtopic qrels* map doc id → {subtopic id: grade}. Grades are turned into probabilities/heights by dividing by
``max_grade``. Implemented from their papers (no library ships them):

* Cube Test, ACT, nCT — Luo, Wing, Yang & Hearst, CIKM 2013; ACT as in the TREC DD 2016 overview; nCT as a
  per-topic upper-bound normalisation (Tang & Yang, ICTIR 2017) with a greedy ideal session.
* sDCG / nsDCG — Järvelin et al., ECIR 2008 (bq = 4, log2(rank+1) within an iteration).
* Expected Utility / nEU — Yang & Lad, ICTIR 2009 (geometric stopping over iterations, novelty decay γ,
  reading cost a per word or per document), min–max normalised between an empty-gain and the ideal session.
* RBU — Amigó, Spina & Carrillo-de-Albornoz, SIGIR 2018: Σ_k p^k (Σ_t w_t r_kt Π_{j<k}(1 − r_jt) − e).
* Simple metrics of Albahem et al. (ECIR 2019): precision, subtopic recall, r-it, neg-it, tot-time.

α-nDCG and ERR-IA come from ir_measures (pyndeval provider) through :func:`diversity_measures`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

Session = Sequence[Sequence[str]]
SubtopicQrels = Mapping[str, Mapping[str, int]]


def _flat(session: Session) -> list[str]:
    return [d for it in session for d in it]


def _subtopics(qrels: SubtopicQrels) -> list[str]:
    return sorted({s for grades in qrels.values() for s, g in grades.items()})


def _weights(qrels: SubtopicQrels, weights: Mapping[str, float] | None) -> dict[str, float]:
    subs = _subtopics(qrels)
    if weights is not None:
        return {s: float(weights.get(s, 0.0)) for s in subs}
    return {s: 1.0 / len(subs) for s in subs} if subs else {}


def is_relevant(doc: str, qrels: SubtopicQrels) -> bool:
    """A document is relevant when any of its subtopic grades is positive."""
    return any(g > 0 for g in qrels.get(doc, {}).values())


# ---- simple metrics --------------------------------------------------------------------------------------------


def precision(session: Session, qrels: SubtopicQrels) -> float:
    """Share of returned documents that are relevant to any subtopic."""
    docs = _flat(session)
    return sum(is_relevant(d, qrels) for d in docs) / len(docs) if docs else 0.0


def subtopic_recall(session: Session, qrels: SubtopicQrels) -> float:
    """Share of the topic's subtopics covered by at least one returned relevant document."""
    subs = {s for grades in qrels.values() for s, g in grades.items() if g > 0}
    if not subs:
        return 0.0
    seen = {s for d in _flat(session) for s, g in qrels.get(d, {}).items() if g > 0}
    return len(seen & subs) / len(subs)


def reciprocal_iteration(session: Session) -> float:
    """r-it: 1 / number of iterations."""
    return 1.0 / len(session) if session else 0.0


def negative_iteration(session: Session) -> float:
    """neg-it: −(number of iterations)."""
    return -float(len(session))


def total_time(session: Session, qrels: SubtopicQrels, lengths: Mapping[str, int], *, default_length: int = 0) -> float:
    """tot-time = Σ_d 4.4 + r_d (0.018 l_d + 7.8), r_d = 0.64 if relevant else 0.39 (Smucker & Clarke TBG)."""
    total = 0.0
    for d in _flat(session):
        r = 0.64 if is_relevant(d, qrels) else 0.39
        total += 4.4 + r * (0.018 * lengths.get(d, default_length) + 7.8)
    return total


# ---- Cube Test ----------------------------------------------------------------------------------------------------


def _cube_gains(
    docs: Sequence[str], qrels: SubtopicQrels, weights: Mapping[str, float], *, gamma: float, max_grade: float
) -> list[float]:
    """Per-document Cube Test gain: Σ_c θ_c γ^{n_c} min(rel/max_grade, remaining height of c)."""
    height = dict.fromkeys(weights, 0.0)
    seen = dict.fromkeys(weights, 0)
    out = []
    for d in docs:
        g = 0.0
        for c, grade in qrels.get(d, {}).items():
            if grade <= 0 or c not in weights:
                continue
            fill = min(grade / max_grade, 1.0 - height[c])
            if fill > 0:
                g += weights[c] * gamma ** seen[c] * fill
                height[c] += fill
            seen[c] += 1
        out.append(g)
    return out


def _ideal_docs(qrels: SubtopicQrels, n: int, gain_fn) -> list[str]:
    """Greedy ideal list of length ≤ n: each position takes the judged doc with the largest marginal gain."""
    pool = [d for d in qrels if is_relevant(d, qrels)]
    chosen: list[str] = []
    base = 0.0
    for _ in range(min(n, len(pool))):
        best, best_gain = None, -1.0
        for d in pool:
            g = gain_fn(chosen + [d]) - base
            if g > best_gain + 1e-15:
                best, best_gain = d, g
        if best is None or best_gain <= 0:
            break
        chosen.append(best)
        pool.remove(best)
        base += best_gain
    return chosen


def cube_test(
    session: Session,
    qrels: SubtopicQrels,
    *,
    gamma: float = 0.5,
    max_grade: float = 4,
    weights: Mapping[str, float] | None = None,
) -> float:
    """CT = Gain(session) / Time, Time = number of iterations (the TREC DD convention)."""
    if not session:
        return 0.0
    w = _weights(qrels, weights)
    return sum(_cube_gains(_flat(session), qrels, w, gamma=gamma, max_grade=max_grade)) / len(session)


def average_cube_test(session: Session, qrels: SubtopicQrels, **kw) -> float:
    """ACT = mean over iterations i of CT computed on the first i iterations."""
    if not session:
        return 0.0
    return sum(cube_test(session[: i + 1], qrels, **kw) for i in range(len(session))) / len(session)


def normalized_cube_test(
    session: Session,
    qrels: SubtopicQrels,
    *,
    gamma: float = 0.5,
    max_grade: float = 4,
    weights: Mapping[str, float] | None = None,
) -> float:
    """nCT = CT / CT of the greedy ideal session with the same number of documents and iterations."""
    docs = _flat(session)
    w = _weights(qrels, weights)

    def total(ds: Sequence[str]) -> float:
        return sum(_cube_gains(ds, qrels, w, gamma=gamma, max_grade=max_grade))

    ideal = total(_ideal_docs(qrels, len(docs), total))
    return total(docs) / ideal if ideal > 0 else 0.0


# ---- sDCG ---------------------------------------------------------------------------------------------------------


def _doc_gain(doc: str, qrels: SubtopicQrels) -> float:
    # TREC DD doc-level relevance = sum of the doc's subtopic grades.
    return float(sum(g for g in qrels.get(doc, {}).values() if g > 0))


def _sdcg_from_gains(gains_by_iteration: Sequence[Sequence[float]], bq: float) -> float:
    total = 0.0
    for i, gains in enumerate(gains_by_iteration, start=1):
        session_discount = 1.0 + math.log(i, bq)
        total += sum(g / math.log2(j + 1) for j, g in enumerate(gains, start=1)) / session_discount
    return total


def session_dcg(session: Session, qrels: SubtopicQrels, *, bq: float = 4.0) -> float:
    """sDCG = Σ_i DCG_i / (1 + log_bq i), DCG_i = Σ_j gain_j / log2(j + 1)."""
    return _sdcg_from_gains([[_doc_gain(d, qrels) for d in it] for it in session], bq)


def normalized_session_dcg(session: Session, qrels: SubtopicQrels, *, bq: float = 4.0) -> float:
    """nsDCG: sDCG over the sDCG of the ideal session (all gains sorted, same iteration sizes)."""
    ideal = sorted((_doc_gain(d, qrels) for d in qrels), reverse=True)
    shaped, pos = [], 0
    for it in session:
        shaped.append(ideal[pos : pos + len(it)])
        pos += len(it)
    best = _sdcg_from_gains(shaped, bq)
    return session_dcg(session, qrels, bq=bq) / best if best > 0 else 0.0


# ---- Expected Utility ---------------------------------------------------------------------------------------------


def expected_utility(
    session: Session,
    qrels: SubtopicQrels,
    *,
    p: float = 0.5,
    gamma: float = 0.5,
    a: float = 0.001,
    max_grade: float = 4,
    lengths: Mapping[str, int] | None = None,
    weights: Mapping[str, float] | None = None,
) -> float:
    """EU = Σ_k P(stop after iteration k) · (gain of iterations 1..k − a · reading cost of their documents).

    P(stop after k) = p^{k−1}(1 − p) for k < n and p^{n−1} for the last iteration; gain per doc is
    Σ_c θ_c γ^{n_c} rel/max_grade (novelty decay over earlier docs of subtopic c); cost per doc = its length in
    words when ``lengths`` is given, else 1.
    """
    n = len(session)
    if n == 0:
        return 0.0
    w = _weights(qrels, weights)
    seen = dict.fromkeys(w, 0)
    cum_gain = cum_cost = eu = 0.0
    for k, it in enumerate(session, start=1):
        for d in it:
            for c, grade in qrels.get(d, {}).items():
                if grade > 0 and c in w:
                    cum_gain += w[c] * gamma ** seen[c] * grade / max_grade
                    seen[c] += 1
            cum_cost += lengths.get(d, 1) if lengths is not None else 1.0
        stop = p ** (k - 1) * (1 - p) if k < n else p ** (n - 1)
        eu += stop * (cum_gain - a * cum_cost)
    return eu


def normalized_expected_utility(session: Session, qrels: SubtopicQrels, **kw) -> float:
    """nEU = (EU − EU_min) / (EU_max − EU_min): EU_min gains nothing, EU_max reads the greedy ideal docs."""
    docs = _flat(session)
    shape = [len(it) for it in session]
    blank = [[f"\0blank{k}_{j}" for j in range(m)] for k, m in enumerate(shape)]
    lengths = kw.get("lengths")
    # The empty-gain bound reads documents of the same lengths as the session's own.
    if lengths is not None:
        lengths = dict(lengths)
        for k, it in enumerate(session):
            for j, d in enumerate(it):
                lengths[blank[k][j]] = lengths.get(d, 1)
    eu_min = expected_utility(blank, qrels, **{**kw, "lengths": lengths})

    def chunk(ds: list[str]) -> list[list[str]]:
        out, pos = [], 0
        for m in shape:
            out.append(ds[pos : pos + m])
            pos += m
        return out

    def total(ds: Sequence[str]) -> float:
        padded = list(ds) + [f"\0pad{j}" for j in range(len(docs) - len(ds))]
        return expected_utility(chunk(padded), qrels, **kw)

    ideal_docs = _ideal_docs(qrels, len(docs), total)
    eu_max = total(ideal_docs)
    eu = expected_utility(session, qrels, **kw)
    return (eu - eu_min) / (eu_max - eu_min) if eu_max > eu_min else 0.0


# ---- RBU ----------------------------------------------------------------------------------------------------------


def rank_biased_utility(
    session: Session,
    qrels: SubtopicQrels,
    *,
    p: float = 0.99,
    e: float = 0.001,
    max_grade: float = 4,
    weights: Mapping[str, float] | None = None,
) -> float:
    """RBU = Σ_{k≥1} p^k (Σ_t w_t r_{k,t} Π_{j<k}(1 − r_{j,t}) − e) over the session's concatenated docs."""
    w = _weights(qrels, weights)
    miss = dict.fromkeys(w, 1.0)  # Π_{j<k}(1 − r_{j,t})
    total = 0.0
    for k, d in enumerate(_flat(session), start=1):
        gain = 0.0
        grades = qrels.get(d, {})
        for t in w:
            r = min(max(grades.get(t, 0), 0) / max_grade, 1.0)
            gain += w[t] * r * miss[t]
            miss[t] *= 1.0 - r
        total += p**k * (gain - e)
    return total


# ---- α-nDCG / ERR-IA via ir_measures ------------------------------------------------------------------------------


def diversity_measures(
    sessions: Mapping[str, Session], qrels: Mapping[str, SubtopicQrels], measures: Sequence[str]
) -> dict[str, dict[str, float]]:
    """Per-topic α-nDCG / ERR-IA (ir_measures strings, e.g. ``alpha_nDCG@20``) over the concatenated sessions.

    Uses ir_measures' pyndeval provider; subtopics go in the qrels' ``iteration`` field.
    """
    import ir_measures
    from ir_measures import Qrel, ScoredDoc

    qrel_rows = [
        Qrel(str(q), str(d), int(g), str(s))
        for q, docs in qrels.items()
        for d, subs in docs.items()
        for s, g in subs.items()
    ]
    run_rows: list = []
    for q, session in sessions.items():
        docs = _flat(session)
        run_rows.extend(ScoredDoc(str(q), d, float(len(docs) - i)) for i, d in enumerate(docs))
    parsed = [ir_measures.parse_measure(m) for m in measures]
    out: dict[str, dict[str, float]] = {m: {} for m in measures}
    names = {str(pm): m for pm, m in zip(parsed, measures, strict=True)}
    for metric in ir_measures.iter_calc(parsed, qrel_rows, run_rows):
        out[names[str(metric.measure)]][metric.query_id] = float(metric.value)
    for m in measures:
        for q in qrels:
            out[m].setdefault(str(q), 0.0)
    return out


# ---- per-topic table for the meta-evaluation --------------------------------------------------------------------


def session_metric_table(
    sessions: Mapping[str, Mapping[str, Session]],
    qrels: Mapping[str, SubtopicQrels],
    *,
    lengths: Mapping[str, int] | None = None,
    max_grade: float = 4,
) -> list[dict]:
    """Rows (run, iteration, topic, metrics…) in the TREC DD table format, for every prefix of every session.

    ``sessions``: {run: {topic: session}}; ``qrels``: {topic: subtopic qrels}. Column names follow the shared
    TREC DD table: act, nct, nEU, nsDCG, rbu_0.990_0.001, p, strec, rtime (r-it), ntime (neg-it) and ttime
    (−tot-time, so that higher is better for every simple metric).
    """
    rows = []
    for run, by_topic in sessions.items():
        for topic, session in by_topic.items():
            q = qrels.get(topic, {})
            for it in range(1, len(session) + 1):
                prefix = session[:it]
                rows.append(
                    {
                        "run": run,
                        "iteration": it,
                        "topic": topic,
                        "act": average_cube_test(prefix, q, max_grade=max_grade),
                        "nct": normalized_cube_test(prefix, q, max_grade=max_grade),
                        "nEU": normalized_expected_utility(prefix, q, max_grade=max_grade, lengths=lengths),
                        "nsDCG": normalized_session_dcg(prefix, q),
                        "rbu_0.990_0.001": rank_biased_utility(prefix, q, p=0.99, e=0.001, max_grade=max_grade),
                        "p": precision(prefix, q),
                        "strec": subtopic_recall(prefix, q),
                        "rtime": reciprocal_iteration(prefix),
                        "ntime": negative_iteration(prefix),
                        "ttime": -total_time(prefix, q, lengths or {}),
                    }
                )
    return rows
