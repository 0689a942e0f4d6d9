"""REST downloads of runs, qrels and per-query scores (admins; token or session), streamed like the pages'."""

from __future__ import annotations

from django.http import StreamingHttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema

from ecast.core.rest import AdminApi
from evaluation.exports import downloads
from evaluation.models import QrelsVersion, Run

BINARY = OpenApiResponse(OpenApiTypes.BINARY)


def _fmt_param(table: dict[str, tuple[str, str]]) -> OpenApiParameter:
    return OpenApiParameter("fmt", str, OpenApiParameter.PATH, enum=list(table), description="File format")


class RunDownloadApi(AdminApi):
    """A run as TREC (``trec``: gzipped ``qid Q0 docno rank score tag``), PyTerrier CSV (``csv``: ``qid,docno,
    score,rank``, ranks from 0) or ranx JSON (``ranx``: ``{qid: {docno: score}}``)."""

    @extend_schema(parameters=[_fmt_param(downloads.RUN_FORMATS)], responses={200: BINARY})
    def get(self, request, pk: int, fmt: str) -> StreamingHttpResponse:
        run = get_object_or_404(Run.objects.select_related("collection"), pk=pk)
        return downloads.run_download(run=run, fmt=fmt)


class QrelsDownloadApi(AdminApi):
    """The grades a version's scores were computed from: TREC qrels (``trec``), PyTerrier CSV (``csv``:
    ``qid,docno,label``) or ranx JSON (``ranx``: ``{qid: {docno: label}}``)."""

    @extend_schema(parameters=[_fmt_param(downloads.QRELS_FORMATS)], responses={200: BINARY})
    def get(self, request, pk: int, fmt: str) -> StreamingHttpResponse:
        version = get_object_or_404(QrelsVersion.objects.select_related("collection"), pk=pk)
        return downloads.qrels_download(version=version, fmt=fmt)


class PerQueryDownloadApi(AdminApi):
    """Every stored score under a version as the long table ``name,qid,measure,value`` (``csv``), the shape
    ``pt.Experiment(perquery=True)`` returns; binary measures carry their threshold (``AP(rel=2)``)."""

    @extend_schema(parameters=[_fmt_param(downloads.PER_QUERY_FORMATS)], responses={200: BINARY})
    def get(self, request, pk: int, fmt: str) -> StreamingHttpResponse:
        version = get_object_or_404(QrelsVersion.objects.select_related("collection"), pk=pk)
        return downloads.per_query_download(version=version, fmt=fmt)
