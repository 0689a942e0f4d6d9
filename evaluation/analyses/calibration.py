"""Calibration and risk-aware ranking of run scores (Penha & Hauff, "On the Calibration and Uncertainty of
Neural Learning to Rank Models for Conversational Search", EACL 2021). Plain numpy; no Django.

* ECE (§3.1): c = 10 equal-width buckets over scores read as probabilities of relevance;
  ECE = Σ_i |B_i|/n · |avg(B_i) − rel(B_i)/|B_i||. Reliability diagram = (avg confidence, fraction relevant)
  per bucket. Scores that are not probabilities can be normalised per turn first: min–max or softmax.
* Fig. 2: calibration as the candidate lists get more non-relevant documents: for k non-relevant per relevant,
  each turn keeps its relevant candidates and the first k·#relevant non-relevant ones (rank order).
* Stochastic runs (§3.2): S score samples per (turn, passage) from ensemble members or dropout passes → mean,
  variance, covariance; risk-aware ranking (§3.2.4, after Wang & Zhu's portfolio theory), greedy by position:
  E[R_d] − b·var[R_d] − 2b·Σ_{d_i ranked above} cov[R_d, R_{d_i}].
  The objective adds scores to squared scores, so it needs the paper's scale: probabilities of relevance in [0, 1]
  (its BERT samples). Raw scores (BM25 ≈ 10–25, dense dot products ≈ 100) give variances in the hundreds that
  swamp the mean at any b > 0, and samples on different scales differ by the scale, not by uncertainty:
  :func:`normalise_samples` maps each sample's scores per turn to [0, 1] first.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from ecast.core.errors import DomainError


class CalibrationError(DomainError, ValueError):
    """Scores or samples a calibration analysis cannot use as given."""


NORMALISATIONS = ("none", "minmax", "softmax")
RunDict = Mapping[str, Mapping[str, float]]
QrelsDict = Mapping[str, Mapping[str, int]]


def normalise(scores: Sequence[float], method: str) -> np.ndarray:
    """Map one turn's scores to [0, 1]: none (must already be probabilities), min–max, or softmax."""
    arr = np.asarray(scores, dtype=float)
    if method == "none":
        if arr.size and (arr.min() < 0 or arr.max() > 1):
            raise CalibrationError(
                f"scores outside [0, 1] (min {arr.min():.4g}, max {arr.max():.4g}); "
                "choose min-max or softmax normalisation"
            )
        return arr
    if method == "minmax":
        lo, hi = (arr.min(), arr.max()) if arr.size else (0.0, 0.0)
        return (arr - lo) / (hi - lo) if hi > lo else np.full_like(arr, 0.5)
    if method == "softmax":
        if not arr.size:
            return arr
        e = np.exp(arr - arr.max())
        return e / e.sum()
    raise CalibrationError(f"unknown normalisation {method!r}; use one of {', '.join(NORMALISATIONS)}")


def ece(probs: Sequence[float], labels: Sequence[int], *, n_buckets: int = 10) -> dict:
    """Expected calibration error over equal-width buckets, with the reliability diagram's points."""
    p = np.asarray(probs, dtype=float)
    y = np.asarray(labels, dtype=float)
    if p.shape != y.shape:
        raise CalibrationError("probabilities and labels differ in length")
    n = p.size
    # Bucket i holds (i/c, (i+1)/c]; 0 goes to the first bucket and 1 to the last.
    idx = np.clip(np.ceil(p * n_buckets).astype(int) - 1, 0, n_buckets - 1)
    counts = np.bincount(idx, minlength=n_buckets)
    conf_sum = np.bincount(idx, weights=p, minlength=n_buckets)
    rel_sum = np.bincount(idx, weights=y, minlength=n_buckets)
    buckets = []
    total = 0.0
    for i in range(n_buckets):
        c = int(counts[i])
        avg: float | None = None
        frac: float | None = None
        if c:
            avg, frac = float(conf_sum[i] / c), float(rel_sum[i] / c)
            total += c / n * abs(avg - frac)
        buckets.append(
            {"lower": i / n_buckets, "upper": (i + 1) / n_buckets, "count": c, "confidence": avg, "accuracy": frac}
        )
    return {"ece": float(total) if n else None, "n": int(n), "buckets": buckets, "n_buckets": n_buckets}


def run_probabilities(
    run: RunDict, qrels: QrelsDict, *, threshold: int, method: str = "none", depth: int | None = None
) -> dict[str, list[tuple[str, float, int]]]:
    """Per judged turn: [(doc, probability, binary label)] in rank order; unjudged docs count as non-relevant."""
    out: dict[str, list[tuple[str, float, int]]] = {}
    for qid, docs in run.items():
        if qid not in qrels:
            continue
        ranked = sorted(docs.items(), key=lambda kv: (-kv[1], kv[0]))
        if depth:
            ranked = ranked[:depth]
        probs = normalise([s for _, s in ranked], method)
        out[qid] = [
            (d, float(pr), int(qrels[qid].get(d, 0) >= threshold)) for (d, _), pr in zip(ranked, probs, strict=True)
        ]
    return out


def calibration_report(
    run: RunDict,
    qrels: QrelsDict,
    *,
    threshold: int,
    method: str = "none",
    depth: int | None = None,
    n_buckets: int = 10,
    nonrel_ratios: Sequence[int] = (1, 2, 5, 10),
) -> dict:
    """ECE + reliability points on all candidates, and per 'k non-relevant per relevant' condition (Fig. 2)."""
    per_turn = run_probabilities(run, qrels, threshold=threshold, method=method, depth=depth)
    all_p = [p for rows in per_turn.values() for _, p, _ in rows]
    all_y = [y for rows in per_turn.values() for _, _, y in rows]
    conditions = [{"label": "all candidates", "ratio": None, **ece(all_p, all_y, n_buckets=n_buckets)}]
    for k in nonrel_ratios:
        ps: list[float] = []
        ys: list[int] = []
        for rows in per_turn.values():
            n_rel = sum(y for _, _, y in rows)
            if not n_rel:
                continue
            budget = k * n_rel
            for _, p, y in rows:
                if y:
                    ps.append(p)
                    ys.append(1)
                elif budget > 0:
                    ps.append(p)
                    ys.append(0)
                    budget -= 1
        conditions.append({"label": f"{k} non-relevant per relevant", "ratio": k, **ece(ps, ys, n_buckets=n_buckets)})
    share = 1 - (sum(all_y) / len(all_y)) if all_y else None
    return {
        "normalisation": method,
        "threshold": threshold,
        "depth": depth,
        "turns": len(per_turn),
        "nonrelevant_share": share,
        "conditions": conditions,
    }


# ---- stochastic runs and risk-aware ranking ------------------------------------------------------------------------


def normalise_samples(samples: Sequence[RunDict], method: str) -> list[dict[str, dict[str, float]]]:
    """Each sample's scores mapped to [0, 1] per turn (:func:`normalise`), so mean, variance and covariance share
    the probability scale the risk-aware objective assumes; ``none`` checks the scores already are."""
    out = []
    for sample in samples:
        mapped: dict[str, dict[str, float]] = {}
        for qid, scores in sample.items():
            docs = list(scores)
            values = normalise([scores[d] for d in docs], method)
            mapped[qid] = {d: float(v) for d, v in zip(docs, values, strict=True)}
        out.append(mapped)
    return out


def sample_matrix(samples: Sequence[RunDict], qid: str) -> tuple[list[str], np.ndarray]:
    """Docs of one turn (union over samples) and their scores ``[S × docs]``.

    A sample that did not retrieve a doc gives it its own lowest score for that turn (it ranked it below its list).
    """
    docs = sorted({d for s in samples for d in s.get(qid, {})})
    mat = np.empty((len(samples), len(docs)))
    for i, s in enumerate(samples):
        scores = s.get(qid, {})
        floor = min(scores.values()) if scores else 0.0
        mat[i] = [scores.get(d, floor) for d in docs]
    return docs, mat


def risk_aware_order(mean: np.ndarray, cov: np.ndarray, b: float) -> list[int]:
    """Greedy order maximising E − b·var − 2b·Σ cov with the docs already placed above (paper §3.2.4)."""
    n = mean.size
    var = np.diag(cov)
    placed: list[int] = []
    remaining = np.ones(n, dtype=bool)
    cov_sum = np.zeros(n)
    for _ in range(n):
        obj = mean - b * var - 2 * b * cov_sum
        obj = np.where(remaining, obj, -np.inf)
        k = int(np.argmax(obj))
        placed.append(k)
        remaining[k] = False
        cov_sum += cov[:, k]
    return placed


def stochastic_summary(samples: Sequence[RunDict]) -> dict[str, dict[str, tuple[float, float]]]:
    """Per turn and doc: (mean, variance) over the samples (population variance, ddof=0)."""
    if len(samples) < 2:
        raise CalibrationError("a stochastic system needs at least 2 sample runs")
    qids = sorted({q for s in samples for q in s})
    out: dict[str, dict[str, tuple[float, float]]] = {}
    for q in qids:
        docs, mat = sample_matrix(samples, q)
        m, v = mat.mean(axis=0), mat.var(axis=0)
        out[q] = {d: (float(m[i]), float(v[i])) for i, d in enumerate(docs)}
    return out


def risk_aware_run(samples: Sequence[RunDict], b: float, *, depth: int | None = None) -> dict[str, dict[str, float]]:
    """A run (decreasing synthetic scores) from the risk-aware order of every turn; b = 0 is the mean run."""
    if len(samples) < 2:
        raise CalibrationError("a stochastic system needs at least 2 sample runs")
    out: dict[str, dict[str, float]] = {}
    for q in sorted({q for s in samples for q in s}):
        docs, mat = sample_matrix(samples, q)
        mean = mat.mean(axis=0)
        cov = np.atleast_2d(np.cov(mat, rowvar=False, ddof=0)) if len(docs) > 1 else np.atleast_2d(mat.var(axis=0))
        order = risk_aware_order(mean, cov, b)
        if depth:
            order = order[:depth]
        out[q] = {docs[k]: float(len(order) - r) for r, k in enumerate(order)}
    return out


def gain_curve(
    samples: Sequence[RunDict],
    b_values: Sequence[float],
    score_fn: Callable[[dict[str, dict[str, float]]], float],
    *,
    depth: int | None = None,
) -> list[dict]:
    """Headline metric of the risk-aware run for each b, and its gain relative to b = 0 (paper Fig. 3)."""
    base = score_fn(risk_aware_run(samples, 0.0, depth=depth))
    out = []
    for b in b_values:
        value = score_fn(risk_aware_run(samples, float(b), depth=depth))
        out.append(
            {
                "b": float(b),
                "value": value,
                "gain": value - base,
                "relative_gain": (value - base) / base if base else None,
            }
        )
    return out
