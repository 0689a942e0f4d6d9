"""Evaluation domain: qrels versions, runs, and (added by the evaluation features) scores and analyses."""

from __future__ import annotations

from array import array
from typing import Any

from django.conf import settings
from django.db import models

from ecast.core.models import Job
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
    # ir_measures strings asked for beyond the default measures: stored and kept live like them from then on.
    requested_measures = models.JSONField(default=list, blank=True)
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
        LLM = "llm", "LLM pre-judgment"

    # Bulk rows (tens of thousands per qrels file or derived version): no database foreign-key constraints, which
    # PostgreSQL checks row by row at commit (half of a qrels import); writers resolve every turn and version in
    # their transaction and Django still cascades deletes. The unique index leads with (version, turn), so neither
    # a version index nor a (version, turn) one is needed.
    version = models.ForeignKey(
        QrelsVersion, on_delete=models.CASCADE, related_name="qrels", db_constraint=False, db_index=False
    )
    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="qrels", db_constraint=False)
    passage_id = models.CharField(max_length=200)
    grade = models.SmallIntegerField()
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.IMPORTED)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["version", "turn", "passage_id"], name="uniq_qrel_per_version")]


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


class DocIdsField(models.BinaryField):
    """A ranking's doc ids in rank order, stored as one UTF-8 blob of newline-separated ids.

    TREC run columns are whitespace-separated, so an id never holds a newline; splitting a blob is many times
    cheaper than decoding JSON, which matters when a recompute reads millions of ids."""

    _pyi_private_set_type: list[str] | tuple[str, ...] | bytes
    _pyi_private_get_type: list[str]  # type: ignore[assignment]  # decoded on read, unlike a plain BinaryField

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("default", list)
        super().__init__(*args, **kwargs)

    def deconstruct(self) -> Any:
        name, path, args, kwargs = super().deconstruct()
        kwargs.pop("default", None)
        return name, path, args, kwargs

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> list[str] | None:
        if value is None:
            return None
        text = bytes(value).decode("utf-8")
        return text.split("\n") if text else []

    def to_python(self, value: Any) -> Any:
        if isinstance(value, (bytes, memoryview)):
            return self.from_db_value(value, None, None)
        return value

    @staticmethod
    def pack(doc_ids: list[str] | tuple[str, ...]) -> bytes:
        """The stored blob of a list of doc ids (for writers that insert rows without model objects)."""
        blob = "\n".join(doc_ids).encode("utf-8")
        if blob.count(b"\n") != max(len(doc_ids) - 1, 0):  # would come back as more ids than went in
            raise ValueError(f"a doc id holds a newline: {next(d for d in doc_ids if chr(10) in d)!r}")
        return blob

    def get_db_prep_value(self, value: Any, connection: Any, prepared: bool = False) -> Any:
        if isinstance(value, (list, tuple)):
            value = self.pack(value)
        return super().get_db_prep_value(value, connection, prepared)


class PackedDoublesMixin:
    """Reads a list of doubles back from packed IEEE-754 bytes (or as the list PostgreSQL's float8[] gives)."""

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> list[float] | None:
        if value is None or isinstance(value, list):
            return value
        return array("d", bytes(value)).tolist()

    def to_python(self, value: Any) -> Any:
        if isinstance(value, (bytes, memoryview)):
            return self.from_db_value(value, None, None)
        return value


class ScoresField(PackedDoublesMixin, models.BinaryField):
    """A ranking's scores in rank order, stored as packed IEEE-754 doubles (8 bytes each, exact)."""

    _pyi_private_set_type: list[float] | tuple[float, ...] | bytes
    _pyi_private_get_type: list[float]  # type: ignore[assignment]  # decoded on read, unlike a plain BinaryField

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("default", list)
        super().__init__(*args, **kwargs)

    def deconstruct(self) -> Any:
        name, path, args, kwargs = super().deconstruct()
        kwargs.pop("default", None)
        return name, path, args, kwargs

    @staticmethod
    def pack(scores: list[float] | tuple[float, ...]) -> bytes:
        """The stored blob of a list of scores (for writers that insert rows without model objects)."""
        return array("d", [float(v) for v in scores]).tobytes()

    def get_db_prep_value(self, value: Any, connection: Any, prepared: bool = False) -> Any:
        if isinstance(value, (list, tuple)):
            value = self.pack(value)
        return super().get_db_prep_value(value, connection, prepared)


class RunTurn(models.Model):
    """The ranking of one run for one turn, stored column-wise: doc ids and scores in rank order.

    One row per (run, turn) keeps a 1,000-deep run over 200 turns at 200 rows, so imports take seconds.
    """

    # Bulk rows, like Qrel: no database foreign-key constraints (the importer resolves run and turns in its
    # transaction; Django cascades deletes); the unique index leads with the run.
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="rankings", db_constraint=False, db_index=False)
    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="rankings", db_constraint=False)
    doc_ids = DocIdsField()
    scores = ScoresField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "turn"], name="uniq_run_turn")]


# --- Scores, live recompute and history (evaluation helper "evaluation") -------------------------------------


class FloatArrayField(PackedDoublesMixin, models.Field):
    """A list of doubles: ``float8[]`` on PostgreSQL, packed IEEE-754 doubles in a blob elsewhere (both exact)."""

    _pyi_private_set_type: list[float] | tuple[float, ...]
    _pyi_private_get_type: list[float]

    def db_type(self, connection: Any) -> str:
        return "double precision[]" if connection.vendor == "postgresql" else "blob"

    def get_db_prep_value(self, value: Any, connection: Any, prepared: bool = False) -> Any:
        if value is None:
            return None
        values = [float(v) for v in value]
        return values if connection.vendor == "postgresql" else array("d", values).tobytes()


class TurnScores(models.Model):
    """Every measure of one run on one turn under one qrels version: measure names and values side by side.

    One row per run × turn × version (not per measure) keeps a full recompute at a few thousand rows written by
    one binary COPY. Readers never see this layout: ``evaluation.selectors.score_rows`` yields the public
    (run, turn, version, measure, value) shape. ``threshold`` is the relevance level binary measures were computed
    with; judged turns the run did not rank are stored as 0 (trec_eval -c semantics).
    """

    # Derived rows written thousands at a time: no database foreign-key constraints (each would be checked per
    # row at commit; Django still cascades deletes of runs, turns and versions); the unique index leads with the
    # version, which every reader filters on.
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="+", db_constraint=False, db_index=False)
    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="+", db_constraint=False)
    version = models.ForeignKey(
        QrelsVersion, on_delete=models.CASCADE, related_name="+", db_constraint=False, db_index=False
    )
    measures = models.TextField(help_text="ir_measures strings, newline-separated, in the order of values")
    values = FloatArrayField()
    threshold = models.PositiveSmallIntegerField()
    computed_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["version", "run", "turn"], name="uniq_turn_scores")]


class EvaluationJob(Job):
    """Background evaluation with progress: one run × all versions, a full recompute, or a dirty-turn drain."""

    job_kind = "evaluation"

    class Kind(models.TextChoices):
        RUN = "run", "Evaluate a run"
        FULL = "full", "Full recompute"
        TURNS = "turns", "Recompute changed turns"
        MEASURES = "measures", "Compute requested measures"

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="evaluation_jobs")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    run = models.ForeignKey(Run, on_delete=models.CASCADE, null=True, blank=True, related_name="evaluation_jobs")
    version = models.ForeignKey(QrelsVersion, on_delete=models.CASCADE, null=True, blank=True, related_name="+")
    turn_ids = models.JSONField(default=list, blank=True)
    # The requested measures a "measures" job adds to its version's stored scores.
    measures = models.JSONField(default=list, blank=True)
    # Parts of a fanned-out full recompute that have finished ("version:first run"): counted by identity, so a part
    # run twice (redelivered, or queued again by the sweeper) never ends the job before every part has run.
    parts_done = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]


class DirtyTurn(models.Model):
    """A turn whose judgments changed in a version and whose scores await the debounced recompute."""

    version = models.ForeignKey(QrelsVersion, on_delete=models.CASCADE, related_name="+")
    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["version", "turn"], name="uniq_dirty_turn")]


class LeaderboardSnapshot(models.Model):
    """Means and ranks of every run under a version after a recompute, so history shows how rankings moved."""

    version = models.ForeignKey(QrelsVersion, on_delete=models.CASCADE, related_name="snapshots")
    measure = models.CharField(max_length=64, default="nDCG@3")
    threshold = models.PositiveSmallIntegerField()
    judged_turns = models.PositiveIntegerField(default=0)
    qrels_count = models.PositiveIntegerField(default=0)
    # [{"run_id": .., "run": name, "mean": .., "rank": 1..}] best first
    entries = models.JSONField(default=list, blank=True)
    trigger = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["version", "created_at", "id"]
