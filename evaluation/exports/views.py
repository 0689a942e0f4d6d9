"""Download pages of runs, qrels and per-query scores (admins, like every evaluation page)."""

from __future__ import annotations

from django.http import HttpRequest, StreamingHttpResponse
from django.shortcuts import get_object_or_404

from ecast.core.permissions import admin_required
from evaluation.exports import downloads
from evaluation.models import PermutationExperiment, QrelsVersion, Run


@admin_required
def run_download(request: HttpRequest, pk: int, fmt: str) -> StreamingHttpResponse:
    run = get_object_or_404(Run.objects.select_related("collection"), pk=pk)
    return downloads.run_download(run=run, fmt=fmt)


@admin_required
def qrels_download(request: HttpRequest, pk: int, fmt: str) -> StreamingHttpResponse:
    version = get_object_or_404(QrelsVersion.objects.select_related("collection"), pk=pk)
    return downloads.qrels_download(version=version, fmt=fmt)


@admin_required
def per_query_download(request: HttpRequest, pk: int, fmt: str) -> StreamingHttpResponse:
    version = get_object_or_404(QrelsVersion.objects.select_related("collection"), pk=pk)
    return downloads.per_query_download(version=version, fmt=fmt)


@admin_required
def experiment_download(request: HttpRequest, pk: int) -> StreamingHttpResponse:
    experiment = get_object_or_404(PermutationExperiment.objects.select_related("collection"), pk=pk)
    return downloads.experiment_download(experiment=experiment)
