"""Budget simulations: how fast each adjudication order finds the relevant passages and settles the system ranking."""

from __future__ import annotations

from collections.abc import Sequence

from django.core.exceptions import ValidationError
from django.db import transaction

from ecast.models import Collection
from evaluation import adjudication
from evaluation.analyses import budget
from evaluation.analyses.selectors import qrels_for_version, run_as_dict
from evaluation.analyses.services.toolkit import analysis_queue, check_measures, check_runs, check_version, progress_set
from evaluation.models import BudgetSimulation, QrelsVersion, Run

MAX_DEPTH = 100


@transaction.atomic
def budget_simulation_create(
    *,
    collection: Collection,
    runs: Sequence[Run],
    qrels_version: QrelsVersion | None,
    depth: int = 10,
    strategies: Sequence[str] = budget.DEFAULT_STRATEGIES,
    measures: Sequence[str] = budget.DEFAULT_MEASURES,
    fractions: Sequence[float] = budget.DEFAULT_FRACTIONS,
    prior_version: QrelsVersion | None = None,
    name: str = "",
    created_by=None,
) -> BudgetSimulation:
    """Store a budget simulation of ``runs`` against a complete qrels version and queue it."""
    runs = check_runs(collection, runs, 2, why="a system ranking needs two systems")
    version = check_version(collection, qrels_version)
    measures = check_measures(measures)
    if not 1 <= int(depth) <= MAX_DEPTH:
        raise ValidationError({"depth": f"between 1 and {MAX_DEPTH}"})
    unknown = [s for s in strategies if s not in adjudication.STRATEGIES]
    if unknown or not strategies:
        raise ValidationError({"strategies": f"choose among {', '.join(adjudication.STRATEGIES)}"})
    fractions = sorted({float(f) for f in fractions})
    if not fractions or not all(0.0 < f <= 1.0 for f in fractions):
        raise ValidationError({"fractions": "fractions of the pool in (0, 1], e.g. 0.1 0.25 0.5 1"})
    if prior_version is not None:
        check_version(collection, prior_version)
        if not set(strategies) & set(adjudication.BANDITS):
            raise ValidationError({"prior_version": "a prior seeds the bandit orders (MM, MM-NS): choose one of them"})
    obj = BudgetSimulation(
        collection=collection,
        name=name or f"{len(runs)} runs · depth {int(depth)} · {version.name}",
        qrels_version=version,
        parameters={
            "depth": int(depth),
            "strategies": [s for s in adjudication.STRATEGIES if s in strategies],
            "measures": measures,
            "fractions": fractions,
            "threshold": collection.relevance_threshold,
            "prior_version_id": prior_version.pk if prior_version is not None else None,
            "prior_version": prior_version.name if prior_version is not None else None,
        },
        # The qrels version is the complete truth the strategies are replayed against, not a growing one.
        auto_recompute=False,
        created_by=created_by,
    )
    obj.full_clean()
    obj.save()
    obj.runs.set(runs)
    analysis_queue(kind="budget", analysis_id=obj.id)
    return obj


def _prior(version_id: int | None) -> dict[str, dict[str, int]] | None:
    if version_id is None:
        return None
    version = QrelsVersion.objects.filter(pk=version_id).first()
    if version is None:
        raise ValueError("the prior qrels version no longer exists")
    return qrels_for_version(version=version)


def budget_simulation_compute(obj: BudgetSimulation) -> dict:
    """Replay every strategy against the qrels version (progress: topics ordered and fractions scored)."""
    p = obj.parameters
    runs = {r.name: run_as_dict(run=r) for r in obj.runs.order_by("name")}
    return budget.simulate(
        runs=runs,
        qrels=qrels_for_version(version=obj.qrels_version),
        depth=int(p["depth"]),
        threshold=int(p.get("threshold", obj.collection.relevance_threshold)),
        strategies=p["strategies"],
        measures=p["measures"],
        fractions=p["fractions"],
        prior=_prior(p.get("prior_version_id")),
        progress=lambda done, total: progress_set(obj, done, total),
    )
