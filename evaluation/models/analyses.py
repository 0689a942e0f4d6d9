"""Models of pivot, meta-evaluation and calibration analyses.

Each analysis stores its parameters, its results as JSON, the qrels version it was computed against, when it was
computed, and a status/progress for the background job. Algorithms live in ``evaluation/pivots.py``,
``metaeval.py``, ``calibration.py``; services in ``evaluation/analysis_services.py``.
"""

from __future__ import annotations

from django.db import models

from ecast.core.models import Job
from ecast.models import Collection
from evaluation.models.core import QrelsVersion, Run

__all__ = [
    "BudgetSimulation",
    "CalibrationReport",
    "MetaEvaluation",
    "PivotAnalysis",
    "StochasticSystem",
]


class AnalysisBase(Job):
    """Common bookkeeping: parameters in, results out, which judgments, when, and how far along."""

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="+")
    name = models.CharField(max_length=200)
    qrels_version = models.ForeignKey(QrelsVersion, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    parameters = models.JSONField(default=dict, blank=True)
    results = models.JSONField(default=dict, blank=True)
    auto_recompute = models.BooleanField(
        default=True, help_text="Recompute in the background when the qrels version gains judgments."
    )
    # Number of qrels rows in the version when computed: tells the page whether newer judgments exist.
    qrels_count = models.PositiveIntegerField(default=0)
    computed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.name


class PivotAnalysis(AnalysisBase):
    """Consistency/correctness of every run as a pivot, per metric (González Sáez et al. 2021).

    ``parameters``: metrics, n_splits, seed, ee_kind ("splits" | "qrels_versions" | "test_sets"),
    qrels_version_ids (for ee_kind qrels_versions).
    """

    job_kind = "analysis-pivots"

    runs = models.ManyToManyField(Run, related_name="+")


class MetaEvaluation(AnalysisBase):
    """Intuitiveness Test + Metric Unanimity over per-topic scores (Albahem et al. 2019).

    Source: an uploaded per-topic table (``table_file``) or scores computed by the app for ``runs``.
    ``parameters``: source, complex_metrics, dimensions {name: [simple metrics]}, iteration_groups.
    """

    job_kind = "analysis-metaeval"

    class Source(models.TextChoices):
        UPLOAD = "upload", "Uploaded per-topic table"
        APP = "app", "Scores computed by ecast"

    source = models.CharField(max_length=10, choices=Source.choices, default=Source.UPLOAD)
    table_file = models.CharField(max_length=500, blank=True, help_text="Stored path of the uploaded table.")
    runs = models.ManyToManyField(Run, related_name="+", blank=True)


class CalibrationReport(AnalysisBase):
    """ECE and reliability diagram of one run's scores (Penha & Hauff 2021, §3.1 and Fig. 2).

    ``parameters``: normalisation ("none" | "minmax" | "softmax"), depth, n_buckets, nonrel_ratios, threshold.
    """

    job_kind = "analysis-calibration"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="+")


class StochasticSystem(AnalysisBase):
    """Several runs that are samples of one system (ensemble members / dropout passes) and its risk analysis.

    ``parameters``: b_values, measure (headline, default nDCG@3), depth. Results: gain curve and per-b scores.
    """

    job_kind = "analysis-stochastic"

    runs = models.ManyToManyField(Run, related_name="+")


class BudgetSimulation(AnalysisBase):
    """Adjudication orders replayed against a complete qrels version (``evaluation.analyses.budget``).

    ``parameters``: depth, strategies, measures, fractions, threshold. Results: relevant found per judgment budget
    and Kendall τ between system rankings under partial and full judgments, per strategy.
    """

    job_kind = "analysis-budget"

    runs = models.ManyToManyField(Run, related_name="+")
