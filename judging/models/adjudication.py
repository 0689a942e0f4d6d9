"""Adjudication of two qrels versions: the items on which they disagree, and the final grade an adjudicator sets
for each into a new qrels version."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from ecast.models import Turn
from evaluation.models import QrelsVersion

__all__ = ["Adjudication", "AdjudicationItem"]


class Adjudication(models.Model):
    """Versions A and B compared, and the "adjudicated: A vs B" version their agreed and adjudicated items form.

    The queue of disagreements is taken once, when the adjudication is made, so "k of N" keeps its meaning while A
    or B go on changing.
    """

    version = models.OneToOneField(QrelsVersion, on_delete=models.CASCADE, related_name="adjudication")
    version_a = models.ForeignKey(QrelsVersion, on_delete=models.PROTECT, related_name="adjudications_as_a")
    version_b = models.ForeignKey(QrelsVersion, on_delete=models.PROTECT, related_name="adjudications_as_b")
    # Neither version grades above 1 (PTKB statements, binary crowd labels): the final grade is 0 or 1 too.
    binary = models.BooleanField(default=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [models.UniqueConstraint(fields=["version_a", "version_b"], name="uniq_adjudication_pair")]

    def __str__(self) -> str:
        return f"adjudication of {self.version_a_id} vs {self.version_b_id}"


class AdjudicationItem(models.Model):
    """One (turn, passage) that A and B graded differently: both grades, and the final one once it is set."""

    adjudication = models.ForeignKey(Adjudication, on_delete=models.CASCADE, related_name="items")
    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="+")
    passage_id = models.CharField(max_length=200)
    grade_a = models.SmallIntegerField()
    grade_b = models.SmallIntegerField()
    # None until adjudicated; an undo sets it back to None.
    grade = models.SmallIntegerField(null=True, blank=True)
    adjudicated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    adjudicated_at = models.DateTimeField(null=True, blank=True)
    history = models.JSONField(default=list, blank=True, help_text="Earlier final grades: [{grade, by, at}].")

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["adjudication", "turn", "passage_id"], name="uniq_adjudication_item"),
            models.CheckConstraint(
                condition=models.Q(grade__isnull=True) | models.Q(grade__gte=0, grade__lte=4),
                name="adjudication_grade_0_4",
            ),
        ]
