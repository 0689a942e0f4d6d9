"""Models of permutation experiments (utterance orders, per-permutation rankings and scores) and SE/FT/PT labels."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from ecast.models import Collection, Conversation, Turn, UtteranceClass
from evaluation.models.core import QrelsVersion, Run

__all__ = [
    "UtteranceLabel",
    "PermutationExperiment",
    "Permutation",
    "PermutationQuery",
    "PermutationResult",
]


class UtteranceLabel(models.Model):
    """One labeler's SE/FT/PT class for one turn; several labelers per turn give the agreement figures.

    The class the permutations use is ``Turn.utterance_class``; admins set it directly (their label is also kept
    here) or adopt the labelers' majority.
    """

    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="utterance_labels")
    labeler = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="utterance_labels")
    utterance_class = models.CharField(max_length=2, choices=UtteranceClass.choices)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["turn", "labeler"], name="uniq_utterance_label")]


class PermutationExperiment(models.Model):
    """Conversations × K sampled orders × systems → rankings → scores against one qrels version."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Retrieving"
        SCORING = "scoring", "Scoring"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="permutation_experiments")
    name = models.CharField(max_length=200)
    qrels_version = models.ForeignKey(QrelsVersion, on_delete=models.PROTECT, related_name="permutation_experiments")
    measure = models.CharField(max_length=50, default="nDCG@3", help_text="ir_measures string.")
    k = models.PositiveIntegerField(default=100, help_text="Sampled orders per conversation besides the original.")
    seed = models.BigIntegerField(default=0)
    systems = models.JSONField(default=list, blank=True, help_text="Built-in system ids run by the worker.")
    corpus = models.CharField(max_length=10, default="qrels", help_text="qrels: judged passages with text; all.")
    depth = models.PositiveIntegerField(default=100)
    parameters = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    chunks_total = models.PositiveIntegerField(default=0)
    chunks_done = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    warnings = models.JSONField(default=list, blank=True)
    scored_version = models.ForeignKey(QrelsVersion, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    scored_qrels_count = models.PositiveIntegerField(null=True, blank=True)
    scored_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [models.UniqueConstraint(fields=["collection", "name"], name="uniq_perm_experiment_name")]

    def __str__(self) -> str:
        return self.name


class Permutation(models.Model):
    """One order of one conversation's turns (of one path of a tree) within an experiment; the first of each path is
    the original order."""

    experiment = models.ForeignKey(PermutationExperiment, on_delete=models.CASCADE, related_name="permutations")
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="+")
    # A conversation tree (CAsT 2022) is permuted path by path: the leaf ("1-8") names the path; its orders hold
    # the User turns along it and are numbered on from the previous path's (``evaluation.permutations.orders``).
    path = models.CharField(max_length=16, blank=True, help_text="Leaf of the tree path permuted; empty when linear.")
    index = models.PositiveIntegerField()
    order = models.JSONField(help_text="Turn numbers in the permuted order.")
    is_original = models.BooleanField(default=False)

    class Meta:
        ordering = ["experiment", "conversation_id", "index"]
        constraints = [
            models.UniqueConstraint(fields=["experiment", "conversation", "index"], name="uniq_permutation_index")
        ]

    def __str__(self) -> str:
        return f"perm{self.pk}"


class PermutationQuery(models.Model):
    """A ranking for one (weighted) query; shared by every permutation and turn that issues the same query.

    Order-insensitive systems issue the same query in every permutation, so an experiment stores each distinct
    query's ranking once.
    """

    experiment = models.ForeignKey(PermutationExperiment, on_delete=models.CASCADE, related_name="queries")
    key = models.CharField(max_length=40, help_text="sha1 of the weighted query.")
    query = models.JSONField(help_text="[[text, weight], ...]")
    doc_ids = models.JSONField(default=list)
    scores = models.JSONField(default=list)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["experiment", "key"], name="uniq_perm_query_key")]


class PermutationResult(models.Model):
    """One system on one permutation: which ranking each turn got, and the per-turn and mean scores.

    Built-in systems point at ``PermutationQuery`` rows through ``queries``; imported runs link the ``Run``
    (one run per permutation, named in its tag or file name) and leave ``queries`` empty.
    """

    permutation = models.ForeignKey(Permutation, on_delete=models.CASCADE, related_name="results")
    system = models.CharField(max_length=200)
    run = models.OneToOneField(Run, on_delete=models.CASCADE, null=True, blank=True, related_name="permutation_link")
    queries = models.JSONField(default=dict, blank=True, help_text="{turn_id: PermutationQuery id}")
    per_turn = models.JSONField(default=dict, blank=True)
    mean = models.FloatField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["permutation", "system"], name="uniq_perm_result_system")]
