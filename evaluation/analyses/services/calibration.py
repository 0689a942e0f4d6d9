"""Calibration reports and stochastic systems (Penha & Hauff 2021)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from django.core.exceptions import ValidationError
from django.db import transaction

from ecast.models import Collection
from evaluation.analyses import calibration as cal
from evaluation.analyses.selectors import (
    qrels_for_version,
    run_as_dict,
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
    CalibrationReport,
    QrelsVersion,
    Run,
    StochasticSystem,
)

DEFAULT_B_VALUES = [0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0]
# Risk-aware ranking weighs variances against means, so sample scores go to [0, 1] per turn first (calibration.py).
DEFAULT_SAMPLE_NORMALISATION = "minmax"


# ---- calibration ---------------------------------------------------------------------------------------------------


@transaction.atomic
def calibration_report_create(
    *,
    run: Run,
    qrels_version: QrelsVersion | None,
    normalisation: str = "none",
    depth: int | None = None,
    n_buckets: int = 10,
    nonrel_ratios: Sequence[int] = (1, 2, 5, 10),
    name: str = "",
    created_by=None,
) -> CalibrationReport:
    """Store a calibration report of one run and queue it."""
    version = check_version(run.collection, qrels_version)
    if normalisation not in cal.NORMALISATIONS:
        raise ValidationError({"normalisation": f"choose one of {', '.join(cal.NORMALISATIONS)}"})
    if not 2 <= int(n_buckets) <= 100:
        raise ValidationError({"n_buckets": "between 2 and 100 buckets"})
    if normalisation == "none":
        bad = _first_non_probability(run)
        if bad:
            raise ValidationError({"normalisation": bad})
    obj = CalibrationReport(
        collection=run.collection,
        run=run,
        qrels_version=version,
        name=name or f"Calibration · {run.name} · {normalisation}",
        parameters={
            "normalisation": normalisation,
            "depth": int(depth) if depth else None,
            "n_buckets": int(n_buckets),
            "nonrel_ratios": [int(k) for k in nonrel_ratios],
            "threshold": run.collection.relevance_threshold,
        },
        created_by=created_by,
    )
    obj.full_clean()
    obj.save()
    analysis_queue(kind="calibration", analysis_id=obj.id)
    return obj


def _first_non_probability(run: Run) -> str:
    for turn_id, docs in run_as_dict(run=run).items():
        for d, s in docs.items():
            if not 0.0 <= s <= 1.0:
                return (
                    f"run {run.name}: turn {turn_id}, passage {d} has score {s:g}, not a probability; "
                    "choose min-max or softmax normalisation"
                )
    return ""


def calibration_report_compute(obj: CalibrationReport) -> dict:
    """ECE and reliability points of the run against the qrels version."""
    p = obj.parameters
    qrels = qrels_for_version(version=obj.qrels_version)
    return cal.calibration_report(
        run_as_dict(run=obj.run),
        qrels,
        threshold=int(p.get("threshold", obj.collection.relevance_threshold)),
        method=p["normalisation"],
        depth=p.get("depth"),
        n_buckets=int(p.get("n_buckets", 10)),
        nonrel_ratios=p.get("nonrel_ratios", [1, 2, 5, 10]),
    )


# ---- stochastic systems --------------------------------------------------------------------------------------------


@transaction.atomic
def stochastic_system_create(
    *,
    collection: Collection,
    runs: Sequence[Run],
    qrels_version: QrelsVersion | None,
    b_values: Sequence[float] = tuple(DEFAULT_B_VALUES),
    measure: str = "nDCG@3",
    depth: int | None = 100,
    normalisation: str = DEFAULT_SAMPLE_NORMALISATION,
    name: str = "",
    created_by=None,
) -> StochasticSystem:
    """Group runs as samples of one system (ensemble members / dropout passes) and queue its risk analysis."""
    runs = check_runs(collection, runs, 2)
    version = check_version(collection, qrels_version)
    measure = check_measures([measure])[0]
    if normalisation not in cal.NORMALISATIONS:
        raise ValidationError({"normalisation": f"one of {', '.join(cal.NORMALISATIONS)}"})
    b_values = sorted({float(b) for b in b_values})
    if not b_values or min(b_values) < 0:
        raise ValidationError({"b_values": "give non-negative risk-aversion values b"})
    if 0.0 not in b_values:
        b_values = [0.0, *b_values]
    obj = StochasticSystem(
        collection=collection,
        name=name or f"Stochastic system · {len(runs)} samples",
        qrels_version=version,
        parameters={
            "b_values": b_values,
            "measure": measure,
            "depth": int(depth) if depth else None,
            "normalisation": normalisation,
            "threshold": collection.relevance_threshold,
        },
        created_by=created_by,
    )
    obj.full_clean()
    obj.save()
    obj.runs.set(runs)
    analysis_queue(kind="stochastic", analysis_id=obj.id)
    return obj


def stochastic_system_compute(obj: StochasticSystem) -> dict:
    """Members' scores, variance summary and the gain curve over b."""
    p = obj.parameters
    runs = list(obj.runs.order_by("name"))
    samples = [run_as_dict(run=r) for r in runs]
    qrels = qrels_for_version(version=obj.qrels_version)
    threshold = int(p.get("threshold", obj.collection.relevance_threshold))
    measure = p["measure"]

    evaluator = evaluator_for(qrels, [measure], threshold)

    def score(run: dict) -> float:
        return mean_over(evaluator(run)[measure], qrels)

    members = [{"run": r.name, "value": score(s)} for r, s in zip(runs, samples, strict=True)]
    progress_set(obj, 1, 3)
    # Analyses stored before the parameter existed used raw scores, whose variances swamp the mean at any b > 0:
    # their next recompute uses the default scale instead.
    normalisation = p.get("normalisation", DEFAULT_SAMPLE_NORMALISATION)
    samples = cal.normalise_samples(samples, normalisation)  # "none" on raw scores: a ValueError saying so
    curve = cal.gain_curve(samples, p["b_values"], score, depth=p.get("depth"))
    summary = cal.stochastic_summary(samples)
    variances = [v for docs in summary.values() for _, v in docs.values()]
    best = max(curve, key=lambda c: c["value"])
    return {
        "measure": measure,
        "normalisation": normalisation,
        "members": members,
        "curve": curve,
        "best_b": best["b"],
        "mean_run_value": curve[0]["value"],  # b = 0 is always first: the mean of the samples
        "turns": len(summary),
        "mean_variance": float(np.mean(variances)) if variances else None,
        "max_variance": float(np.max(variances)) if variances else None,
    }
