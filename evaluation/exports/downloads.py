"""The streamed download responses of runs, qrels and per-query scores, shared by the pages and the API."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from django.http import Http404, StreamingHttpResponse

from ecast.core.csvfiles import CSV_CONTENT_TYPE
from evaluation.exports import formats
from evaluation.exports import selectors as sel
from evaluation.models import PermutationExperiment, QrelsVersion, Run

# fmt → (file name suffix, content type); TREC runs come gzipped (they can be millions of lines).
RUN_FORMATS = {
    "trec": (".run.gz", "application/gzip"),
    "csv": (".run.csv", CSV_CONTENT_TYPE),
    "ranx": (".run.json", "application/json"),
}
QRELS_FORMATS = {
    "trec": (".qrels", "text/plain; charset=utf-8"),
    "csv": (".qrels.csv", CSV_CONTENT_TYPE),
    "ranx": (".qrels.json", "application/json"),
}
PER_QUERY_FORMATS = {"csv": ("-perquery.csv", CSV_CONTENT_TYPE)}
FORMAT_LABELS = {"trec": "TREC", "csv": "CSV", "ranx": "ranx JSON"}


def file_stem(*parts: str) -> str:
    """``<collection>-<name>`` with anything but letters, digits, ``-``, ``_`` and ``.`` made ``_``."""
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in "-".join(parts))


def _format(table: dict[str, tuple[str, str]], fmt: str) -> tuple[str, str]:
    if fmt not in table:
        raise Http404(f"downloads are {', '.join(table)}")
    return table[fmt]


def attachment(body: Iterable[str] | Iterator[bytes], filename: str, content_type: str) -> StreamingHttpResponse:
    """A streamed download saved as ``filename``."""
    response = StreamingHttpResponse(body, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def run_download(*, run: Run, fmt: str) -> StreamingHttpResponse:
    """A run as TREC (gzipped), PyTerrier CSV or ranx JSON, streamed."""
    suffix, content_type = _format(RUN_FORMATS, fmt)
    rankings = sel.run_rankings(run=run)
    body: Any
    if fmt == "trec":
        body = formats.gzipped(formats.trec_run_chunks(rankings, tag=run.name))
    elif fmt == "csv":
        body = formats.run_csv_chunks(rankings)
    else:
        body = formats.run_ranx_chunks(rankings)
    return attachment(body, file_stem(run.collection.name, run.name) + suffix, content_type)


_QRELS_WRITERS: dict[str, Callable[[Iterable[tuple[str, str, int]]], Iterator[str]]] = {
    "trec": formats.qrels_trec_chunks,
    "csv": formats.qrels_csv_chunks,
    "ranx": formats.qrels_ranx_chunks,
}


def qrels_download(*, version: QrelsVersion, fmt: str) -> StreamingHttpResponse:
    """The grades a version's scores were computed from, as TREC qrels, PyTerrier CSV or ranx JSON, streamed."""
    suffix, content_type = _format(QRELS_FORMATS, fmt)
    body = _QRELS_WRITERS[fmt](sel.qrels_rows(version=version))
    return attachment(body, file_stem(version.collection.name, version.name) + suffix, content_type)


def per_query_download(*, version: QrelsVersion, fmt: str) -> StreamingHttpResponse:
    """Every stored per-query score under a version as the long table ``name,qid,measure,value``, streamed."""
    suffix, content_type = _format(PER_QUERY_FORMATS, fmt)
    body = formats.per_query_csv_chunks(sel.per_query_rows(version=version))
    return attachment(body, file_stem(version.collection.name, version.name) + suffix, content_type)


def experiment_download(*, experiment: PermutationExperiment) -> StreamingHttpResponse:
    """Every ranking a permutation experiment's built-in systems made, one gzipped TREC file whose run tag names
    the system and the order (``bm25-raw@original``, ``bm25-raw@order7``): split it by tag to evaluate each run."""
    body = formats.gzipped(formats.trec_tagged_chunks(sel.experiment_rankings(experiment=experiment)))
    name = file_stem(experiment.collection.name, experiment.name, "runs") + ".run.gz"
    return attachment(body, name, "application/gzip")
