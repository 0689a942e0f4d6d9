"""Demo analyses on the "CAsT 2020 demo" collection: a calibration report, a pivot analysis when the collection
has at least 3 runs, a stochastic-system illustration, and a meta-evaluation of the TREC DD 2016 table
shipped in ecast/demo/.

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

from ecast.models import Collection
from evaluation.analyses import metaeval
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


def load(stdout: TextIO | None = None) -> None:
    """Create and compute the demo analyses (idempotent)."""
    out = stdout or sys.stdout
    collection = Collection.objects.filter(name=DEMO_COLLECTION).first()
    if collection is None:
        out.write(f"analyses demo: collection {DEMO_COLLECTION!r} not loaded; skipped\n")
        return
    version = QrelsVersion.objects.filter(collection=collection).order_by("created_at").first()
    runs = list(Run.objects.filter(collection=collection).order_by("name"))
    if version is None or not runs:
        out.write("analyses demo: the demo collection has no qrels or runs; skipped\n")
        return
    _calibration(collection, version, runs, out)
    _pivots(collection, version, runs, out)
    _stochastic(collection, version, runs, out)
    _metaeval(collection, out)


def _compute(kind: str, obj, out: TextIO) -> None:
    services.analysis_compute(kind=kind, analysis_id=obj.pk)
    obj.refresh_from_db()
    out.write(f"analyses demo: {obj.name}: {obj.status}{' — ' + obj.error if obj.error else ''}\n")


def _calibration(collection, version, runs, out: TextIO) -> None:
    if CalibrationReport.objects.filter(collection=collection, name=CALIBRATION_NAME).exists():
        return
    run = next((r for r in runs if r.name == "decaf-exp2"), runs[-1])
    obj = calibration_services.calibration_report_create(
        run=run, qrels_version=version, normalisation="minmax", depth=100, name=CALIBRATION_NAME
    )
    _compute("calibration", obj, out)


def _pivots(collection, version, runs, out: TextIO) -> None:
    if PivotAnalysis.objects.filter(collection=collection, name=PIVOT_NAME).exists():
        return
    if len(runs) < 3:
        out.write("analyses demo: pivots need at least 3 runs in the demo collection; skipped\n")
        return
    obj = pivot_services.pivot_analysis_create(
        collection=collection, runs=runs, qrels_version=version, metrics=["AP", "nDCG@3", "RR"], name=PIVOT_NAME
    )
    _compute("pivots", obj, out)


def _stochastic(collection, version, runs, out: TextIO) -> None:
    if StochasticSystem.objects.filter(collection=collection, name=STOCHASTIC_NAME).exists() or len(runs) < 2:
        return
    obj = calibration_services.stochastic_system_create(
        collection=collection, runs=runs[:2], qrels_version=version, name=STOCHASTIC_NAME, depth=50
    )
    _compute("stochastic", obj, out)


def _metaeval(collection, out: TextIO) -> None:
    if MetaEvaluation.objects.filter(collection=collection, name=METAEVAL_NAME).exists():
        return
    # Shipped with the demo (ecast/demo/, see DATA_LICENSES.md) so the demo never reads ../shared at run time.
    path = Path(settings.BASE_DIR) / "ecast" / "demo" / "trec-dd-2016-evals-iter1-3.csv.gz"
    if not path.is_file():
        out.write(f"analyses demo: {path} not found; meta-evaluation skipped\n")
        return
    try:
        obj = metaeval_services.meta_evaluation_create(
            collection=collection,
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
