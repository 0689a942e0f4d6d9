"""Agreement between two label sets of responses: nugget assignment or citation support (plain Python; no Django).

Two sets label the same items (a response × a nugget, or an answer sentence × a passage it cites): a human set
against an LLM's, or two assessors'. Over the items both labelled:

* **exact agreement** — the share of items with the same label;
* **Cohen's κ** (scikit-learn ``cohen_kappa_score``), *unweighted*: the labels are categories (support / partial /
  not; full / partial / none / needs no citation), as the TREC RAG 2024 agreement studies report them. Its 95%
  **interval is a percentile bootstrap over items**: ``BOOTSTRAP`` resamples of the items with replacement, drawn
  by NumPy's ``default_rng(SEED)`` (so a report is reproducible), κ of each from its confusion table, the 2.5th and
  97.5th percentiles of those that are defined (a resample whose labels all fall in one category has none). The
  bootstrap needs no independence-of-cells formula and treats the item as the unit resampled;
* the **confusion matrix** (labels of A as rows, of B as columns);
* the same **per topic** and **by condition**: blind against post-editing, as the human side recorded it (an LLM
  agrees with a person more when the person saw its label: Thakur et al. 2025 report 56% exact support agreement
  from scratch against 72% post-edited);
* **Kendall's τ** between the run rankings each set gives (``evaluation.agreement.algorithms.ranking_agreement``),
  per measure: V_strict, A_strict, V and A for nugget sets, citation-support precision and recall for citation sets,
  each computed by :mod:`evaluation.responses.scores` from that set's labels alone.

Item keys: ``(turn id, item id)``, the turn first so a topic is ``algorithms.topic_of`` of it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ecast.core.errors import DomainError
from ecast.trees import natural_key
from evaluation.agreement import algorithms
from evaluation.responses import scores

Key = tuple[str, str]
NUGGET_LABELS = scores.NUGGET_LABELS[::-1]  # not_support, partial_support, support: the scale read upwards
CITATION_LABELS = ("none", "partial", "full", "not_needed")
LABELS = {"nuggets": NUGGET_LABELS, "citations": CITATION_LABELS}
MEASURES = {"nuggets": scores.NUGGET_MEASURES, "citations": scores.CITATION_MEASURES}
BOOTSTRAP = 1000
SEED = 0
LEVEL = 0.95
CI_METHOD = (
    f"percentile bootstrap over items: {BOOTSTRAP} resamples with replacement (numpy default_rng({SEED})), "
    "κ of each from its confusion table, the 2.5th and 97.5th percentiles of the defined ones"
)


class LabelError(DomainError, ValueError):
    """A label set holds a label outside its kind's scale."""


def kappa_of_table(table: np.ndarray) -> float | None:
    """Unweighted Cohen's κ of a confusion table (None when chance agreement is certain: κ is 0/0)."""
    n = table.sum()
    if n == 0:
        return None
    observed = np.trace(table) / n
    expected = float((table.sum(axis=1) * table.sum(axis=0)).sum()) / (n * n)
    if expected >= 1.0:
        return None
    return float((observed - expected) / (1.0 - expected))


def bootstrap_interval(
    a: Sequence[int], b: Sequence[int], *, k: int, n: int = BOOTSTRAP, seed: int = SEED, level: float = LEVEL
) -> tuple[float | None, float | None]:
    """The percentile interval of κ over ``n`` resamples of the items (see the module docstring)."""
    if len(a) < algorithms.MIN_KAPPA_ITEMS:
        return None, None
    rng = np.random.default_rng(seed)
    cells = np.asarray(a, dtype=np.int64) * k + np.asarray(b, dtype=np.int64)
    values = []
    for _ in range(n):
        sample = cells[rng.integers(0, len(cells), len(cells))]
        value = kappa_of_table(np.bincount(sample, minlength=k * k).reshape(k, k).astype(float))
        if value is not None:
            values.append(value)
    if not values:
        return None, None
    tail = (1.0 - level) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail])
    return float(low), float(high)


def _block(a: Sequence[int], b: Sequence[int], labels: Sequence[str], *, interval: bool) -> dict[str, Any]:
    """Exact agreement and κ (with its interval when ``interval``) of two code lists over the labels' scale."""
    k = len(labels)
    scale = list(range(k))
    kap = algorithms.kappa(a, b, scale=scale, weighted=False, interval=False)
    low, high = bootstrap_interval(a, b, k=k) if interval and kap.value is not None else (None, None)
    # The reason names a code as a relevance "grade"; here each code is a label ("full", "not_support").
    why = re.sub(r"grade (\d+)", lambda m: f"the label {labels[int(m.group(1))]!r}", kap.why_undefined)
    return {
        "items": len(a),
        "exact": algorithms.exact(a, b),
        "kappa": kap.value,
        "why_undefined": why,
        "low": low,
        "high": high,
    }


def label_agreement(
    a: Mapping[Key, str],
    b: Mapping[Key, str],
    *,
    labels: Sequence[str],
    conditions: Mapping[Key, str] | None = None,
    topic: Callable[[str], str] = algorithms.topic_of,
) -> dict[str, Any]:
    """The item-level report of two label sets over the items both labelled (see the module docstring)."""
    code = {label: i for i, label in enumerate(labels)}
    for side, got in (("A", a), ("B", b)):
        unknown = sorted({v for v in got.values() if v not in code})
        if unknown:
            raise LabelError(f"{side}: labels {unknown} are not in {list(labels)}")
    shared = sorted(set(a) & set(b))
    ca = [code[a[key]] for key in shared]
    cb = [code[b[key]] for key in shared]
    k = len(labels)
    report = _block(ca, cb, labels, interval=True)
    report.update(
        labels=list(labels),
        only_a=len(set(a) - set(b)),
        only_b=len(set(b) - set(a)),
        confusion=algorithms.confusion(ca, cb, scale=list(range(k))),
        ci_method=CI_METHOD,
    )
    groups: dict[str, list[int]] = {}
    for i, key in enumerate(shared):
        groups.setdefault(topic(key[0]), []).append(i)
    report["topics"] = [
        {"topic": t, **_block([ca[i] for i in idx], [cb[i] for i in idx], labels, interval=False)}
        for t, idx in sorted(groups.items(), key=lambda kv: natural_key(kv[0]))
    ]
    by_condition: dict[str, list[int]] = {}
    for i, key in enumerate(shared):
        by_condition.setdefault((conditions or {}).get(key, ""), []).append(i)
    report["conditions"] = [
        {"condition": c, **_block([ca[i] for i in idx], [cb[i] for i in idx], labels, interval=True)}
        for c, idx in sorted(by_condition.items())
    ]
    return report


def ranking_taus(
    a: Mapping[str, Mapping[str, float]], b: Mapping[str, Mapping[str, float]], measures: Sequence[str]
) -> list[dict[str, Any]]:
    """Kendall's τ-b between the run rankings under A and under B, per measure."""
    out = []
    for m in measures:
        res = algorithms.ranking_agreement({r: v[m] for r, v in a.items()}, {r: v[m] for r, v in b.items()})
        tau = res["tau"]
        out.append(
            {
                "measure": m,
                "tau": tau,
                "n": res["n"],
                "swapped": len(res["swapped"]),
                "why_undefined": res["why_undefined"],
            }
        )
    return out
