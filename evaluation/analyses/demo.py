"""Demo analyses: on the "CAsT 2020 demo" collection a calibration report, a pivot analysis when the collection
has enough runs and a stochastic-system illustration, all on the qrels version the demo pool feeds ("original +
new"), so they recompute as assessors judge; and, in a collection of its own, a meta-evaluation of the TREC DD 2016
table shipped in ecast/demo/ (TREC DD is not CAsT: its table carries its own topics and runs).

``load(stdout=...)`` is idempotent (each analysis is skipped when one of its name exists) and computes everything
synchronously in a few seconds.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import TextIO

from django.conf import settings
from django.core.exceptions import ValidationError

from ecast import services as ecast_services
from ecast.models import Collection
from evaluation.analyses import metaeval, pivots
from evaluation.analyses.services import calibration as calibration_services
from evaluation.analyses.services import common as services
from evaluation.analyses.services import metaeval as metaeval_services
from evaluation.analyses.services import pivots as pivot_services
from evaluation.models import CalibrationReport, MetaEvaluation, PivotAnalysis, QrelsVersion, Run, StochasticSystem
from evaluation.permutations.demo import DEMO_COLLECTION

PIVOT_NAME = "Demo: pivots over topic splits"
CALIBRATION_NAME = "Demo: calibration of decaf-exp2 (min-max per turn)"
STOCHASTIC_NAME = "Demo: two DECAF runs grouped as samples (illustration only)"
METAEVAL_NAME = "Demo: TREC DD 2016 meta-evaluation"
DD_COLLECTION = "TREC DD 2016 (meta-evaluation demo)"
DD_NOTE = (
    "TREC Dynamic Domain 2016: per-topic values of 21 runs under the DD metrics (iterations 1-3), the table the "
    "meta-evaluation reads. No conversations, passages or runs: the uploaded table is the whole dataset."
)


def demo_version(collection: Collection) -> QrelsVersion | None:
    """The version the demo analyses use: the one a relevance pool feeds (it gains the assessors' judgments, so the
    analyses recompute), else the collection's first (the imported "original")."""
    versions = QrelsVersion.objects.filter(collection=collection)
    fed = versions.filter(pools_feeding__isnull=False).order_by("created_at", "id").first()
    return fed or versions.order_by("created_at", "id").first()


def load(stdout: TextIO | None = None) -> None:
    """Create and compute the demo analyses (idempotent)."""
    out = stdout or sys.stdout
    collection = Collection.objects.filter(name=DEMO_COLLECTION).first()
    if collection is None:
        out.write(f"analyses demo: collection {DEMO_COLLECTION!r} not loaded; skipped\n")
        return
    version = demo_version(collection)
    runs = list(Run.objects.filter(collection=collection).order_by("name"))
    if version is None or not runs:
        out.write("analyses demo: the demo collection has no qrels or runs; skipped\n")
    else:
        _calibration(collection, version, runs, out)
        _pivots(collection, version, runs, out)
        _stochastic(collection, version, runs, out)
    _metaeval(out)


def _compute(kind: str, obj, out: TextIO) -> None:
    services.analysis_compute(kind=kind, analysis_id=obj.pk)
    obj.refresh_from_db()
    out.write(f"analyses demo: {obj.name}: {obj.status}{' — ' + obj.error if obj.error else ''}\n")


def _present(kind: str, model, collection, name: str, version, out: TextIO) -> bool:
    """Whether the named demo analysis exists; one made on another version (demos loaded before they used the
    version the pool feeds) is moved to ``version`` and recomputed."""
    obj = model.objects.filter(collection=collection, name=name).first()
    if obj is None:
        return False
    if obj.qrels_version_id != version.pk:
        model.objects.filter(pk=obj.pk).update(qrels_version=version)
        out.write(f"analyses demo: {name}: moved to qrels version {version.name!r}\n")
        _compute(kind, obj, out)
    return True


def _calibration(collection, version, runs, out: TextIO) -> None:
    if _present("calibration", CalibrationReport, collection, CALIBRATION_NAME, version, out):
        return
    run = next((r for r in runs if r.name == "decaf-exp2"), runs[-1])
    obj = calibration_services.calibration_report_create(
        run=run, qrels_version=version, normalisation="minmax", depth=100, name=CALIBRATION_NAME
    )
    _compute("calibration", obj, out)


def _pivots(collection, version, runs, out: TextIO) -> None:
    if _present("pivots", PivotAnalysis, collection, PIVOT_NAME, version, out):
        return
    if len(runs) < pivots.MIN_RUNS:
        out.write(f"analyses demo: pivots need at least {pivots.MIN_RUNS} runs in the demo collection; skipped\n")
        return
    obj = pivot_services.pivot_analysis_create(
        collection=collection, runs=runs, qrels_version=version, metrics=["AP", "nDCG@3", "RR"], name=PIVOT_NAME
    )
    _compute("pivots", obj, out)


def _stochastic(collection, version, runs, out: TextIO) -> None:
    if _present("stochastic", StochasticSystem, collection, STOCHASTIC_NAME, version, out) or len(runs) < 2:
        return
    # Two different systems stand in for samples of one; min-max per turn puts BM25 (≈ 10–25) and dense (≈ 100)
    # scores on one [0, 1] scale, as the risk-aware objective needs (calibration.py).
    obj = calibration_services.stochastic_system_create(
        collection=collection,
        runs=runs[:2],
        qrels_version=version,
        name=STOCHASTIC_NAME,
        depth=50,
        normalisation="minmax",
    )
    _compute("stochastic", obj, out)


def _dd_collection() -> Collection:
    found = Collection.objects.filter(name=DD_COLLECTION).first()
    return found or ecast_services.collection_create(name=DD_COLLECTION, year=2016, corpus_note=DD_NOTE)


def _metaeval(out: TextIO) -> None:
    existing = MetaEvaluation.objects.filter(name=METAEVAL_NAME).first()
    if existing is not None:
        if existing.collection.name != DD_COLLECTION:
            # Demos loaded before the TREC DD collection existed filed it under CAsT: move it where it belongs.
            MetaEvaluation.objects.filter(pk=existing.pk).update(collection=_dd_collection())
            out.write(f"analyses demo: {METAEVAL_NAME} moved to the collection {DD_COLLECTION!r}\n")
        return
    # Shipped with the demo (ecast/demo/, see DATA_LICENSES.md) so the demo never reads ../shared at run time.
    path = Path(settings.BASE_DIR) / "ecast" / "demo" / "trec-dd-2016-evals-iter1-3.csv.gz"
    if not path.is_file():
        out.write(f"analyses demo: {path} not found; meta-evaluation skipped\n")
        return
    try:
        obj = metaeval_services.meta_evaluation_create(
            collection=_dd_collection(),
            complex_metrics=metaeval.DD_COMPLEX,
            dimensions=metaeval.DEFAULT_DIMENSIONS,
            upload=io.BytesIO(path.read_bytes()),
            upload_name=path.name,
            name=METAEVAL_NAME,
        )
    except ValidationError as exc:
        out.write(f"analyses demo: meta-evaluation not created: {exc}\n")
        return
    _compute("metaeval", obj, out)
