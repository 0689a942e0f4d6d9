"""Helpers shared by the analysis page modules."""

from __future__ import annotations

from django.http import Http404
from django.shortcuts import get_object_or_404

from evaluation.analyses.selectors import (
    ANALYSIS_MODELS,
)


def get_analysis(kind: str, pk: int):
    """The analysis of this kind and id, or 404."""
    if kind not in ANALYSIS_MODELS:
        raise Http404("unknown analysis kind")
    return get_object_or_404(ANALYSIS_MODELS[kind].objects.select_related("collection", "qrels_version"), pk=pk)
