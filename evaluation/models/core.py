"""Evaluation domain: qrels versions, runs, and (added by the evaluation features) scores and analyses."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from ecast.models import Collection, TestSet, Turn


class QrelsVersion(models.Model):
    """A named set of relevance judgments for a collection ("original" = imported).

    A derived version holds a full copy of its parent's rows plus its own new judgments, so reading a version's
    qrels is always one query and versions never change under each other.
    """

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="qrels_versions")
    name = models.CharField(max_length=100)
    parent = models.ForeignKey("self", on_delete=models.PROTECT, null=True, blank=True, related_name="children")
    description = models.TextField(blank=True)
    source_file = models.CharField(max_length=500, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["collection", "created_at"]
        constraints = [models.UniqueConstraint(fields=["collection", "name"], name="uniq_qrels_version_name")]

    def __str__(self) -> str:
        return f"{self.collection.name} / {self.name}"


class Qrel(models.Model):
    """One graded judgment (turn, passage) → 0..4 within a qrels version."""

    class Source(models.TextChoices):
        IMPORTED = "imported", "Imported"
        ASSESSED = "assessed", "Assessed in ecast"

    version = models.ForeignKey(QrelsVersion, on_delete=models.CASCADE, related_name="qrels")
    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="qrels")
    passage_id = models.CharField(max_length=200)
    grade = models.SmallIntegerField()
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.IMPORTED)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["version", "turn", "passage_id"], name="uniq_qrel_per_version")]
        indexes = [models.Index(fields=["version", "turn"])]


class Run(models.Model):
    """A TREC run over a collection's turns, normalised on import (deduplicated, ranks from scores)."""

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="runs")
    name = models.CharField(max_length=200, help_text="Run tag, unique within the collection.")
    description = models.TextField(blank=True)
    source_file = models.CharField(max_length=500, blank=True)
    test_set = models.ForeignKey(TestSet, on_delete=models.SET_NULL, null=True, blank=True, related_name="runs")
    import_report = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["collection", "name"]
        constraints = [models.UniqueConstraint(fields=["collection", "name"], name="uniq_run_name")]

    def __str__(self) -> str:
        return self.name


class RunTurn(models.Model):
    """The ranking of one run for one turn, stored column-wise: doc ids and scores in rank order.

    One row per (run, turn) keeps a 1,000-deep run over 200 turns at 200 rows, so imports take seconds.
    """

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="rankings")
    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="rankings")
    doc_ids = models.JSONField(default=list)
    scores = models.JSONField(default=list)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "turn"], name="uniq_run_turn")]
