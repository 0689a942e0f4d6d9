"""Reads that assemble the ECAsT robustness reports (Tables 11, 13, 14) from stored scores, runs and qrels."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ecast.models import Collection, TestSet
from evaluation import metrics
from evaluation.models import QrelsVersion, Run
from evaluation.robustness import tables as robustness
from evaluation.selectors import collection_list, qrels_dict, rankings_top, score_means

TABLE_MEASURES = ["nDCG@3", "R@1000", "AP"]
KINDS = ("manual", "raw")


@dataclass
class RobustnessParams:
    """What a robustness report is computed from (all ids belong to one collection)."""

    collection: Collection
    base: QrelsVersion
    extended: QrelsVersion | None = None
    depth: int = 3
    baselines: dict[str, Run] = field(default_factory=dict)  # kind → baseline run
    measures: list[str] = field(default_factory=lambda: list(TABLE_MEASURES))
    # Other runs shown in Tables 13 and 14 (not in Table 11, which compares test sets with their baseline).
    extra_runs: list[Run] = field(default_factory=list)


def default_baseline(*, collection: Collection, kind: str) -> Run | None:
    """A run without a test set whose name says which kind of original turns it used (manual / raw)."""
    hints = {"manual": ("manual", "castm", "_m", "-m"), "raw": ("raw", "auto", "castr", "_r", "-r")}[kind]
    for run in Run.objects.filter(collection=collection, test_set__isnull=True).order_by("name"):
        low = run.name.lower()
        if any(h in low for h in hints):
            return run
    return None


def test_set_runs(*, collection: Collection) -> list[tuple[TestSet, Run, str]]:
    """(test set, run, label) for every run linked to a test set of the collection, R^m before R^r."""
    out = []
    sets = TestSet.objects.filter(collection=collection).order_by("kind", "index", "name")  # manual, then raw
    for ts in sets:
        runs = list(Run.objects.filter(test_set=ts).order_by("name"))
        for run in runs:
            out.append((ts, run, ts.name if len(runs) == 1 else f"{ts.name} · {run.name}"))
    return out


OTHER = "other"  # the kind of an extra run: in no test-set group


def labelled_runs(p: RobustnessParams) -> list[tuple[str, str, Run]]:
    """(label, kind, run) of every test-set run, then the baselines, then the extra runs (kind ``OTHER``)."""
    rows = [(label, ts.kind, run) for ts, run, label in test_set_runs(collection=p.collection)]
    for kind in KINDS:
        base = p.baselines.get(kind)
        if base is not None:
            rows.append((f"baseline {kind} ({base.name})", kind, base))
    shown = {run.pk for _, _, run in rows}
    rows += [(run.name, OTHER, run) for run in p.extra_runs if run.pk not in shown]
    return rows


def default_extra_runs(*, collection: Collection, baselines: dict[str, Run]) -> list[Run]:
    """Until a run is linked to a test set, Tables 13 and 14 show every run, so they are never empty for nothing."""
    if Run.objects.filter(collection=collection, test_set__isnull=False).exists():
        return []
    chosen = {r.pk for r in baselines.values()}
    return [r for r in Run.objects.filter(collection=collection).order_by("name") if r.pk not in chosen]


def table11(p: RobustnessParams) -> dict[str, Any]:
    """Test sets vs their baseline: means under the base version and the change in percent (ECAsT Table 11)."""
    test_set_run_ids = {run.pk for _, run, _ in test_set_runs(collection=p.collection)}
    labelled = [(label, kind, run) for label, kind, run in labelled_runs(p) if run.pk in test_set_run_ids]
    ids = [r.pk for _, _, r in labelled] + [r.pk for r in p.baselines.values()]
    means = score_means(version=p.base, measures=p.measures, run_ids=ids)
    rows = [{"label": label, "kind": kind, "means": means.get(run.pk, {})} for label, kind, run in labelled]
    baselines = {k: means.get(r.pk, {}) for k, r in p.baselines.items()}
    return {
        "rows": robustness.test_sets_vs_baseline(rows, baselines, p.measures),
        "baselines": {k: {"run": r.name, "means": baselines[k]} for k, r in p.baselines.items()},
        "measures": p.measures,
    }


def table13(p: RobustnessParams) -> dict[str, Any]:
    """Judged/unjudged share of each top-k, grades of the formerly unjudged, uniqueness (ECAsT Table 13)."""
    labelled = labelled_runs(p)
    rankings = {label: rankings_top(run=run, depth=p.depth) for label, _, run in labelled}
    test_set_run_ids = {run.pk for _, run, _ in test_set_runs(collection=p.collection)}
    groups = {label: kind for label, kind, run in labelled if run.pk in test_set_run_ids}
    base_qrels = qrels_dict(version=p.base)
    ext_qrels = qrels_dict(version=p.extended) if p.extended is not None else None
    result = robustness.unjudged_analysis(rankings, base_qrels, extended_qrels=ext_qrels, groups=groups, depth=p.depth)
    result["labels"] = [label for label, _, _ in labelled]
    result["run_ids"] = {label: run.pk for label, _, run in labelled}
    return result


def table14(p: RobustnessParams) -> dict[str, Any] | None:
    """Every metric under the original and the extended qrels, side by side (ECAsT Table 14)."""
    if p.extended is None:
        return None
    labelled = labelled_runs(p)
    ids = [r.pk for _, _, r in labelled]
    measures = list(dict.fromkeys([*p.measures, *metrics.DEFAULT_MEASURES]))  # Table 14's three, then the rest
    before = score_means(version=p.base, measures=measures, run_ids=ids)
    after = score_means(version=p.extended, measures=measures, run_ids=ids)
    rows = robustness.before_after(
        {label: before.get(run.pk, {}) for label, _, run in labelled},
        {label: after.get(run.pk, {}) for label, _, run in labelled},
        measures,
    )
    return {"rows": rows, "measures": measures}


def robustness_report(p: RobustnessParams) -> dict[str, Any]:
    """All three tables plus the parameters they were computed with (stated on pages and in downloads)."""
    return {
        "collection": p.collection.name,
        "base_version": p.base.name,
        "extended_version": p.extended.name if p.extended else None,
        "threshold": int(p.collection.relevance_threshold),
        "depth": p.depth,
        "measures": p.measures,
        "missing_turns": "judged turns a run did not rank score 0 (trec_eval -c)",
        "table11": table11(p),
        "table13": table13(p),
        "table14": table14(p),
    }


def robustness_page(p: RobustnessParams, report: dict[str, Any]) -> dict[str, Any]:
    """The report page's table rows (Tables 11, 13 and 14) and its choices (versions, runs, test sets without a run)."""
    t11, t13, t14 = report["table11"], report["table13"], report["table14"]
    labels13 = t13["labels"]
    r13 = t13["runs"]
    rows13 = [
        ("Top-k passages", [r13[x]["top_k"] for x in labels13], False),
        ("Judged", [r13[x]["judged_pct"] for x in labels13], True),
        ("Unjudged", [r13[x]["unjudged_pct"] for x in labels13], True),
        ("Unjudged (count)", [r13[x]["unjudged"] for x in labels13], False),
        ("Unique within its group", [r13[x]["unique_pct"] for x in labels13], True),
        ("Assessed since", [r13[x]["assessed"] for x in labels13], False),
        ("Still pending", [r13[x]["pending"] for x in labels13], False),
    ] + [(f"grade {g}", [r13[x]["grades_pct"][g] for x in labels13], True) for g in range(5)]
    return {
        "rows11": [(r, [r["values"][m] for m in p.measures]) for r in t11["rows"]],
        "rows13": rows13,
        "rows14": [(r["label"], m, r["values"][m]) for r in t14["rows"] for m in t14["measures"]] if t14 else [],
        "t11": t11,
        "t13": t13,
        "t14": t14,
        "labels13": labels13,
        "collections": collection_list(),
        "versions": QrelsVersion.objects.filter(collection=p.collection).order_by("created_at", "id"),
        "runs": Run.objects.filter(collection=p.collection).order_by("name"),
        "unjudged_count": len(t13["unjudged_pairs"]),
        "extra_ids": {r.pk for r in p.extra_runs},
        "sets_without_run": TestSet.objects.filter(collection=p.collection, runs__isnull=True).order_by(
            "kind", "index"
        ),
        "test_sets": TestSet.objects.filter(collection=p.collection).count(),
        "derived": QrelsVersion.objects.filter(collection=p.collection, parent=p.base).exists(),
    }
