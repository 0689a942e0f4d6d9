"""Pivot analyses (González Sáez et al. 2021): create, compute, and the cross-EE comparison tool."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from django.core.exceptions import ValidationError
from django.db import transaction

from ecast.models import Collection
from evaluation.analyses import pivots
from evaluation.analyses.selectors import (
    qrels_for_version,
    run_as_dict,
    system_key,
)
from evaluation.analyses.services.toolkit import (
    analysis_queue,
    check_measures,
    check_runs,
    check_version,
    evaluator_for,
    mean_over,
    progress_set,
)
from evaluation.models import (
    PivotAnalysis,
    QrelsVersion,
    Run,
)

EE_KINDS = ("splits", "qrels_versions", "test_sets")


# ---- pivots --------------------------------------------------------------------------------------------------------


@transaction.atomic
def pivot_analysis_create(
    *,
    collection: Collection,
    runs: Sequence[Run],
    qrels_version: QrelsVersion | None,
    metrics: Sequence[str] = tuple(pivots.DEFAULT_METRICS),
    n_splits: int = pivots.DEFAULT_SPLITS,
    seed: int = 0,
    ee_kind: str = "splits",
    qrels_versions: Sequence[QrelsVersion] = (),
    name: str = "",
    auto_recompute: bool = True,
    created_by=None,
) -> PivotAnalysis:
    """Store a pivot analysis and queue its computation."""
    if ee_kind not in EE_KINDS:
        raise ValidationError({"ee_kind": f"unknown evaluation-environment kind {ee_kind!r}"})
    runs = check_runs(collection, runs, pivots.MIN_RUNS, why=pivots.MIN_RUNS_REASON)
    metrics = check_measures(metrics)
    if not 1 <= int(n_splits) <= 1000:
        raise ValidationError({"n_splits": "between 1 and 1000 splits"})
    version_ids: list[int] = []
    if ee_kind == "qrels_versions":
        if len(qrels_versions) < 2:
            raise ValidationError({"qrels_versions": "choose at least 2 qrels versions as environments"})
        for v in qrels_versions:
            check_version(collection, v)
        version_ids = [v.id for v in qrels_versions]
        qrels_version = qrels_version or qrels_versions[0]
    check_version(collection, qrels_version)
    if ee_kind == "test_sets":
        sets = {r.test_set_id for r in runs if r.test_set_id}
        if len(sets) < 2:
            raise ValidationError({"runs": "choose runs linked to at least 2 paraphrase test sets"})
    obj = PivotAnalysis(
        collection=collection,
        name=name or f"Pivots · {ee_kind} · {len(runs)} runs",
        qrels_version=qrels_version,
        parameters={
            "metrics": metrics,
            "n_splits": int(n_splits),
            "seed": int(seed),
            "ee_kind": ee_kind,
            "qrels_version_ids": version_ids,
            "threshold": collection.relevance_threshold,
        },
        auto_recompute=auto_recompute,
        created_by=created_by,
    )
    obj.full_clean()
    obj.save()
    obj.runs.set(runs)
    analysis_queue(kind="pivots", analysis_id=obj.id)
    return obj


def pivot_analysis_compute(obj: PivotAnalysis) -> dict:
    """Scores per run × topic, then consistency/correctness per metric × pivot (results JSON)."""
    p = obj.parameters
    metrics, threshold = p["metrics"], int(p.get("threshold", obj.collection.relevance_threshold))
    runs = list(obj.runs.select_related("test_set").order_by("name"))
    kind = p.get("ee_kind", "splits")
    if kind == "splits":
        qrels = qrels_for_version(version=obj.qrels_version)
        topics = sorted(qrels)
        mats = {m: np.zeros((len(runs), len(topics))) for m in metrics}
        evaluator = evaluator_for(qrels, metrics, threshold)
        for i, run in enumerate(runs):
            per = evaluator(run_as_dict(run=run))
            for m in metrics:
                mats[m][i] = [per[m].get(t, 0.0) for t in topics]
            progress_set(obj, i + 1, len(runs) + 1)
        res = pivots.pivot_analysis(mats, [r.name for r in runs], n_splits=p["n_splits"], seed=p["seed"]).as_dict()
        res.update(kind="splits", topics=topics, scores={m: mats[m].tolist() for m in metrics})
        return res
    ee_means: dict[str, dict[str, dict[str, float]]] = {m: {} for m in metrics}
    if kind == "qrels_versions":
        versions = list(QrelsVersion.objects.filter(id__in=p["qrels_version_ids"]).order_by("created_at"))
        for k, v in enumerate(versions):
            qrels = qrels_for_version(version=v)
            evaluator = evaluator_for(qrels, metrics, threshold)
            for run in runs:
                per = evaluator(run_as_dict(run=run))
                for m in metrics:
                    ee_means[m].setdefault(v.name, {})[run.name] = mean_over(per[m], qrels)
            progress_set(obj, k + 1, len(versions) + 1)
    else:
        qrels = qrels_for_version(version=obj.qrels_version)
        evaluator = evaluator_for(qrels, metrics, threshold)
        for k, run in enumerate(runs):
            ee = run.test_set.name if run.test_set is not None else "(no test set)"
            per = evaluator(run_as_dict(run=run))
            for m in metrics:
                ee_means[m].setdefault(ee, {})[system_key(run)] = mean_over(per[m], qrels)
            progress_set(obj, k + 1, len(runs) + 1)
    res = pivots.named_ee_analysis(ee_means, rounds=p["n_splits"], seed=p["seed"])
    res["kind"] = kind
    return res


def pivot_cross_ee(*, analysis: Any, metric: str, pivot: str, choices: Mapping[str, str]) -> dict:
    """The cross-EE comparison tool: estimated ranking of chosen (system, EE) pairs through ``pivot``.

    For topic splits, the EEs are "EE1"/"EE2" of split 1 (seeded as stored); the figures are the pivot's stored
    consistency/correctness for this metric.
    """
    res = analysis.results or {}
    if metric not in res.get("metrics", []):
        raise ValidationError({"metric": f"metric {metric!r} is not part of this analysis"})
    systems = res["systems"]
    if pivot not in systems:
        raise ValidationError({"pivot": f"unknown pivot {pivot!r}"})
    ee_means = split_ee_means(res, metric) if res.get("kind") == "splits" else res["ee_means"][metric]
    try:
        ranking = pivots.cross_ee_ranking(ee_means, pivot, {s: e for s, e in choices.items() if s != pivot})
    except ValueError as exc:
        raise ValidationError({"choices": str(exc)}) from exc
    i = systems.index(pivot)
    return {
        "metric": metric,
        "pivot": pivot,
        "ranking": ranking,
        "consistency": {"mean": res["consistency_mean"][metric][i], "std": res["consistency_std"][metric][i]},
        "correctness": {"mean": res["correctness_mean"][metric][i], "std": res["correctness_std"][metric][i]},
    }


def split_ee_means(res: dict, metric: str) -> dict[str, dict[str, float]]:
    """Means of every system on the two halves of the first stored split: {"EE1": {...}, "EE2": {...}}."""
    scores = np.asarray(res["scores"][metric], dtype=float)
    mask = pivots.random_splits(scores.shape[1], n_splits=1, seed=res.get("seed", 0))
    ee1, ee2 = pivots.split_means(scores, mask)
    return {
        "EE1": dict(zip(res["systems"], map(float, ee1[0]), strict=True)),
        "EE2": dict(zip(res["systems"], map(float, ee2[0]), strict=True)),
    }
