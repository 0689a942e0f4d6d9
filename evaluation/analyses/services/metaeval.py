"""Meta-evaluations (Albahem et al. 2019): uploaded per-topic tables or the app's own scores."""

from __future__ import annotations

import gzip
import io
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction

from ecast.models import Collection
from evaluation.analyses import metaeval
from evaluation.analyses.selectors import (
    doc_lengths,
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
    progress_set,
)
from evaluation.analyses.session_metrics import total_time
from evaluation.models import (
    MetaEvaluation,
    QrelsVersion,
    Run,
)

# ---- meta-evaluation -----------------------------------------------------------------------------------------------


def _upload_dir() -> Path:
    d = Path(settings.MEDIA_ROOT) / "analyses" / "metaeval"
    d.mkdir(parents=True, exist_ok=True)
    return d


def _parse_dimensions(dimensions: Mapping[str, Sequence[str]] | None, available: Sequence[str]) -> dict[str, list[str]]:
    if not dimensions:
        raise ValidationError({"dimensions": "give at least one set of simple metrics"})
    out: dict[str, list[str]] = {}
    for name, simple in dimensions.items():
        simple = [s.strip() for s in simple if s and s.strip()]
        if not simple:
            raise ValidationError({"dimensions": f"dimension {name!r} has no simple metric"})
        missing = [s for s in simple if s not in available]
        if missing:
            raise ValidationError({"dimensions": f"dimension {name!r}: unknown column(s) {', '.join(missing)}"})
        out[str(name)] = simple
    return out


@transaction.atomic
def meta_evaluation_create(
    *,
    collection: Collection,
    complex_metrics: Sequence[str],
    dimensions: Mapping[str, Sequence[str]],
    upload: Any = None,
    upload_name: str = "table.csv",
    runs: Sequence[Run] = (),
    qrels_version: QrelsVersion | None = None,
    depth: int = 10,
    iteration_groups: dict[str, list[int] | None] | None = None,
    lengths_upload: Any = None,
    lengths_name: str = "lengths.tsv",
    name: str = "",
    created_by=None,
) -> MetaEvaluation:
    """Store a meta-evaluation (uploaded per-topic table, or app scores of ``runs``) and queue it.

    ``lengths_upload`` (app scores only): TSV ``passage_id<TAB>length in words`` overriding the passage store for
    tot-time.
    """
    lengths = parse_lengths(lengths_upload, name=lengths_name) if lengths_upload is not None else None
    complex_metrics = [c.strip() for c in complex_metrics if c and c.strip()]
    if len(complex_metrics) < 2:
        raise ValidationError({"complex_metrics": "choose at least two complex metrics"})
    if upload is not None:
        raw = upload.read()
        if isinstance(raw, str):
            raw = raw.encode()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        try:
            df = metaeval.load_table(io.BytesIO(raw), name=upload_name)
        except metaeval.TableError as exc:
            raise ValidationError({"upload": str(exc)}) from exc
        available = metaeval.metric_columns(df)
        missing = [c for c in complex_metrics if c not in available]
        if missing:
            raise ValidationError({"complex_metrics": f"{upload_name}: no column(s) {', '.join(missing)}"})
        dims = _parse_dimensions(dimensions, available)
        source = MetaEvaluation.Source.UPLOAD
        version = None
    else:
        runs = check_runs(collection, runs, 2)
        version = check_version(collection, qrels_version)
        complex_metrics = check_measures(complex_metrics)
        available = [*complex_metrics, *APP_SIMPLE]
        dims = _parse_dimensions(dimensions, available)
        source = MetaEvaluation.Source.APP
    obj = MetaEvaluation(
        collection=collection,
        name=name or f"Meta-evaluation · {upload_name if upload is not None else f'{len(runs)} runs'}",
        qrels_version=version,
        source=source,
        parameters={
            "complex_metrics": complex_metrics,
            # Lists of pairs, not dicts: PostgreSQL jsonb does not keep key order, and the order is the report's.
            "dimensions": [[k, v] for k, v in dims.items()],
            "iteration_groups": [[k, v] for k, v in iteration_groups.items()] if iteration_groups else None,
            "depth": int(depth),
            "upload_name": upload_name if upload is not None else "",
            "threshold": collection.relevance_threshold,
            "doc_lengths": lengths,
            "doc_lengths_file": lengths_name if lengths is not None else "",
        },
        auto_recompute=source == MetaEvaluation.Source.APP,
        created_by=created_by,
    )
    obj.full_clean()
    obj.save()
    if upload is not None:
        path = _upload_dir() / f"{obj.id}-{uuid.uuid4().hex[:8]}.csv"
        df.to_csv(path, index=False)  # stored cleaned: 'all' rows dropped, index column removed
        obj.table_file = str(path)
        obj.save(update_fields=["table_file"])
    else:
        obj.runs.set(runs)
    analysis_queue(kind="metaeval", analysis_id=obj.id)
    return obj


def parse_lengths(upload: Any, *, name: str) -> dict[str, int]:
    """Read ``passage_id<TAB>words`` lines; a bad line raises a ValidationError naming file and line."""
    raw = upload.read()
    text = raw.decode("utf-8", errors="strict") if isinstance(raw, bytes) else raw
    out: dict[str, int] = {}
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        parts = line.rstrip("\r").split("\t")
        if len(parts) != 2 or not parts[1].strip().isdigit():
            raise ValidationError({"lengths": f"{name}: line {n}: expected 'passage_id<TAB>length in words'"})
        out[parts[0].strip()] = int(parts[1])
    if not out:
        raise ValidationError({"lengths": f"{name}: no lengths found"})
    return out


# Simple metrics the app computes for its own runs (no iterations/subtopics in CAsT):
# precision at the depth, and −tot-time over the top `depth` passages (negated: higher = less effort).
APP_SIMPLE = ["precision", "tot-time"]


def app_score_table(
    *,
    runs: Sequence[Run],
    qrels: dict,
    measures: Sequence[str],
    depth: int,
    threshold: int,
    uploaded_lengths: Mapping[str, int] | None = None,
) -> tuple[pd.DataFrame, dict]:
    """Per (run, turn) table of the app's scores plus the simple metrics, and notes on how they were made."""
    rows = []
    all_docs: set[str] = set()
    run_dicts = {r.id: run_as_dict(run=r) for r in runs}
    for rd in run_dicts.values():
        for docs in rd.values():
            all_docs.update(sorted(docs, key=lambda d: -docs[d])[:depth])
    lengths = doc_lengths(passage_ids=all_docs)
    if uploaded_lengths:
        lengths.update({d: int(v) for d, v in uploaded_lengths.items() if d in all_docs})
    fallback = int(np.mean(list(lengths.values()))) if lengths else 0
    prec = f"P@{depth}"
    evaluator = evaluator_for(qrels, [*measures, prec], threshold)
    for r in runs:
        per = evaluator(run_dicts[r.id])
        for t in sorted(qrels):
            docs = run_dicts[r.id].get(t, {})
            top = sorted(docs, key=lambda d: -docs[d])[:depth]
            # One iteration of the top passages; a passage is relevant at the collection's threshold.
            relevant = {d: {"rel": 1} for d in top if qrels[t].get(d, 0) >= threshold}
            tot = total_time([top], relevant, lengths, default_length=fallback)
            row = {"run": r.name, "iteration": 1, "topic": t, "precision": per[prec].get(t, 0.0), "tot-time": -tot}
            for m in measures:
                row[m] = per[m].get(t, 0.0)
            rows.append(row)
    notes = {
        "depth": depth,
        "passages_with_length": len(lengths),
        "passages_without_length": len(all_docs) - len(lengths),
        "fallback_length": fallback,
    }
    return pd.DataFrame(rows), notes


def meta_evaluation_compute(obj: MetaEvaluation) -> dict:
    """Load or build the per-topic table, then intuitiveness, unanimity, rankings and stability."""
    p = obj.parameters
    groups = {k: v for k, v in p["iteration_groups"]} if p.get("iteration_groups") else None
    dimensions = {k: v for k, v in p["dimensions"]}
    if obj.source == MetaEvaluation.Source.UPLOAD:
        df = metaeval.load_table(obj.table_file, name=p.get("upload_name") or "table")
        notes: dict = {"source": "upload", "file": p.get("upload_name")}
        stability = None
    else:
        runs = list(obj.runs.select_related("test_set").order_by("name"))
        qrels = qrels_for_version(version=obj.qrels_version)
        threshold = int(p.get("threshold", obj.collection.relevance_threshold))
        df, notes = app_score_table(
            runs=runs,
            qrels=qrels,
            measures=p["complex_metrics"],
            depth=int(p.get("depth", 10)),
            threshold=threshold,
            uploaded_lengths=p.get("doc_lengths"),
        )
        notes["source"] = "app"
        stability = _stability(df, runs, p["complex_metrics"] + APP_SIMPLE)
    progress_set(obj, 1, 2)
    res = metaeval.meta_evaluate(df, p["complex_metrics"], dimensions, iteration_groups=groups)
    res["notes"] = notes
    res["stability"] = stability
    return res


def _stability(df: pd.DataFrame, runs: Sequence[Run], measures: Sequence[str]) -> list[dict] | None:
    """Mean Kendall τ between system rankings on different paraphrase test sets, per measure (ECAsT)."""
    with_sets = [r for r in runs if r.test_set_id]
    if len({r.test_set_id for r in with_sets}) < 2:
        return None
    means = df.groupby("run")[list(measures)].mean()
    out: dict[str, dict[str, dict[str, float]]] = {m: {} for m in measures}
    for r in with_sets:
        for m in measures:
            set_name = r.test_set.name if r.test_set is not None else ""
            out[m].setdefault(set_name, {})[system_key(r)] = float(means.loc[r.name, m])
    return metaeval.ranking_stability(out)
