"""ECAsT robustness analyses (Alhamed/… ECAsT, RQ4): Tables 11, 13 and 14 as plain computations.

No Django: callers pass rankings ({qid: [doc ids in rank order]}), qrels ({qid: {doc: grade}}) and means
({measure: value}); the views turn the results into pages, plots and downloads.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

GRADES = (0, 1, 2, 3, 4)


def drop_percent(value: float | None, baseline: float | None) -> float | None:
    """Relative change of a test set vs its baseline in percent ((value − baseline) / baseline · 100).

    Negative = a drop (ECAsT Table 11 reports NDCG@3 of R^m_1 0.490 vs CAsT^m 0.600 as a 18% drop).
    """
    if value is None or baseline is None or baseline == 0:
        return None
    return (value - baseline) / baseline * 100.0


def test_sets_vs_baseline(
    rows: Sequence[Mapping[str, Any]], baselines: Mapping[str, Mapping[str, float]], measures: Sequence[str]
) -> list[dict[str, Any]]:
    """Table 11: each row {label, kind, means{measure: v}} against ``baselines[kind]`` means, with drop %.

    Returns rows with ``values[measure] = {"value", "baseline", "change_pct"}`` plus, per kind, an "average"
    row over the test sets (the paper's "dropped on average 12%").
    """
    out: list[dict[str, Any]] = []
    by_kind: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        base = baselines.get(row["kind"], {})
        values = {
            m: {
                "value": row["means"].get(m),
                "baseline": base.get(m),
                "change_pct": drop_percent(row["means"].get(m), base.get(m)),
            }
            for m in measures
        }
        entry = {"label": row["label"], "kind": row["kind"], "values": values, "average": False}
        out.append(entry)
        by_kind[row["kind"]].append(entry)
    for kind, entries in sorted(by_kind.items()):
        avg: dict[str, dict[str, float | None]] = {}
        for m in measures:
            vals = [e["values"][m]["value"] for e in entries if e["values"][m]["value"] is not None]
            chg = [e["values"][m]["change_pct"] for e in entries if e["values"][m]["change_pct"] is not None]
            avg[m] = {
                "value": sum(vals) / len(vals) if vals else None,
                "baseline": baselines.get(kind, {}).get(m),
                "change_pct": sum(chg) / len(chg) if chg else None,
            }
        out.append({"label": f"average {kind}", "kind": kind, "values": avg, "average": True})
    return out


def top_k_pairs(ranking: Mapping[str, Sequence[str]], depth: int, qids: Iterable[str] | None = None) -> set[tuple]:
    """The (qid, doc) pairs in the top ``depth`` of each ranked query (optionally only ``qids``)."""
    keep = set(qids) if qids is not None else None
    return {(q, d) for q, docs in ranking.items() if keep is None or q in keep for d in list(docs)[:depth]}


def unjudged_analysis(
    rankings: Mapping[str, Mapping[str, Sequence[str]]],
    base_qrels: Mapping[str, Mapping[str, int]],
    *,
    extended_qrels: Mapping[str, Mapping[str, int]] | None = None,
    groups: Mapping[str, str] | None = None,
    depth: int = 3,
    judged_turns_only: bool = True,
) -> dict[str, Any]:
    """Table 13: judged/unjudged share of each run's top-k, grades of the formerly unjudged, uniqueness.

    - ``rankings``: {label: {qid: [doc ids best first]}} (one entry per test-set run and baseline).
    - ``base_qrels`` decides what is judged; ``extended_qrels`` (e.g. "original + new") supplies grades of the
      formerly unjudged passages once assessed; passages still missing there are counted as "pending".
    - ``groups``: {label: "raw"/"manual"/…}; uniqueness is measured within a group (the paper compares the three
      R^m sets with each other, and the three R^r sets): a label's unjudged pair is *unique* when no other label
      of its group has it in its top-k. Group-level: share of distinct unjudged pairs seen by exactly one label.
    - ``judged_turns_only``: consider only turns that have judgments in ``base_qrels`` (the paper's 208 of 216).
    """
    groups = dict(groups or {})
    qids = set(base_qrels) if judged_turns_only else None
    pairs = {label: top_k_pairs(r, depth, qids) for label, r in rankings.items()}
    unjudged = {label: {(q, d) for q, d in ps if d not in base_qrels.get(q, {})} for label, ps in pairs.items()}
    ext = extended_qrels or {}
    per_run: dict[str, dict[str, Any]] = {}
    for label, ps in pairs.items():
        total = len(ps)
        un = unjudged[label]
        grades = Counter(ext[q][d] for q, d in un if d in ext.get(q, {}))
        assessed = sum(grades.values())
        peers = [o for o in pairs if o != label and groups.get(o) is not None and groups.get(o) == groups.get(label)]
        other_pairs: set = set().union(*(unjudged[o] for o in peers)) if peers else set()
        unique = len(un - other_pairs) if peers else None
        per_run[label] = {
            "label": label,
            "group": groups.get(label, ""),
            "top_k": total,
            "judged": total - len(un),
            "unjudged": len(un),
            "judged_pct": 100.0 * (total - len(un)) / total if total else None,
            "unjudged_pct": 100.0 * len(un) / total if total else None,
            "assessed": assessed,
            "pending": len(un) - assessed,
            "grades": {g: grades.get(g, 0) for g in GRADES},
            "grades_pct": {g: (100.0 * grades.get(g, 0) / assessed if assessed else None) for g in GRADES},
            "unique": unique,
            "unique_pct": (100.0 * unique / len(un)) if unique is not None and un else None,
        }
    per_group: dict[str, dict[str, Any]] = {}
    for group in sorted({g for g in groups.values() if g}):
        members = [label for label in pairs if groups.get(label) == group]
        seen = Counter(p for label in members for p in unjudged[label])
        distinct = len(seen)
        once = sum(1 for c in seen.values() if c == 1)
        per_group[group] = {
            "members": members,
            "distinct_unjudged": distinct,
            "unique": once,
            "unique_pct": 100.0 * once / distinct if distinct else None,
        }
    all_unjudged = sorted(set().union(*unjudged.values())) if unjudged else []
    return {"depth": depth, "runs": per_run, "groups": per_group, "unjudged_pairs": all_unjudged}


def before_after(
    before: Mapping[str, Mapping[str, float]], after: Mapping[str, Mapping[str, float]], measures: Sequence[str]
) -> list[dict[str, Any]]:
    """Table 14: for each label and measure, the mean under the original and the extended qrels, and the change."""
    rows = []
    for label in before:
        values = {}
        for m in measures:
            b = before[label].get(m)
            a = after.get(label, {}).get(m)
            values[m] = {
                "before": b,
                "after": a,
                "delta": (a - b) if a is not None and b is not None else None,
                "change_pct": drop_percent(a, b),
            }
        rows.append({"label": label, "values": values})
    return rows
