"""Models of permutation experiments (utterance orders, per-permutation rankings and scores) and SE/FT/PT labels."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from ecast.core.models import Job
from ecast.models import Collection, Conversation, Turn, UtteranceClass
from evaluation.models.core import DocIdsField, QrelsVersion, Run, ScoresField

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


class PermutationExperiment(Job):
    """Conversations × K sampled orders × systems → rankings → scores against one qrels version.

    Progress counts conversations retrieved (one chunk each); a running experiment's ``message`` says whether it is
    retrieving or scoring.
    """

    job_kind = "permutation"
    RETRIEVING = "Retrieving"
    SCORING = "Scoring"

    @property
    def is_retrieving(self) -> bool:
        """Running, its chunks still retrieving (a chunk runs only then)."""
        return self.status == self.Status.RUNNING and self.message != self.SCORING

    @property
    def is_scoring(self) -> bool:
        """Running, every chunk retrieved, the whole experiment being scored again."""
        return self.status == self.Status.RUNNING and self.message == self.SCORING

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
    plan = models.JSONField(
        default=list,
        blank=True,
        help_text="The conversations retrieved, one chunk each, largest first: {conversation, topic, size (turns over "
        "its orders), paths: [[path, [[turn number, class], ...]], ...]}. A chunk samples its conversation's orders "
        "from these labels, as they were when the experiment was created.",
    )
    warnings = models.JSONField(default=list, blank=True)
    scored_version = models.ForeignKey(QrelsVersion, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    scored_qrels_count = models.PositiveIntegerField(null=True, blank=True)
    scored_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [models.UniqueConstraint(fields=["collection", "name"], name="uniq_perm_experiment_name")]

    def __str__(self) -> str:
        return self.name


class Permutation(models.Model):
    """One order of one conversation's turns (of one path of a tree) within an experiment; the first of each path is
    the original order."""

    # No index of its own: the unique (experiment, conversation, index) index starts with it.
    experiment = models.ForeignKey(
        PermutationExperiment, on_delete=models.CASCADE, related_name="permutations", db_index=False
    )
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

    # No index of its own: the unique (experiment, key) index starts with it.
    experiment = models.ForeignKey(
        PermutationExperiment, on_delete=models.CASCADE, related_name="queries", db_index=False
    )
    key = models.CharField(max_length=40, help_text="sha1 of the weighted query.")
    query = models.JSONField(help_text="[[text, weight], ...]")
    # Packed like a run's rankings: a chunk stores a hundred of these at once, and JSON made them its costliest
    # write (the database parses and compresses every array).
    doc_ids = DocIdsField()
    scores = ScoresField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["experiment", "key"], name="uniq_perm_query_key")]


class PermutationResult(models.Model):
    """One system on one permutation: which ranking each turn got, and the per-turn and mean scores.

    Built-in systems point at ``PermutationQuery`` rows through ``queries``; imported runs link the ``Run``
    (one run per permutation, named in its tag or file name) and leave ``queries`` empty.
    """

    # No index of its own: the unique (permutation, system) index starts with it.
    permutation = models.ForeignKey(Permutation, on_delete=models.CASCADE, related_name="results", db_index=False)
    system = models.CharField(max_length=200)
    # One result per imported run, unique among the rows that have one (see Meta): a plain unique index also held
    # an entry for every built-in system's result, which have none, and the planner chose it for ``run IS NULL``,
    # reading every built-in result of every experiment to find one chunk's.
    run = models.ForeignKey(
        Run, on_delete=models.CASCADE, null=True, blank=True, related_name="permutation_results", db_index=False
    )
    queries = models.JSONField(default=dict, blank=True, help_text="{turn_id: PermutationQuery id}")
    per_turn = models.JSONField(default=dict, blank=True)
    mean = models.FloatField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["permutation", "system"], name="uniq_perm_result_system"),
            models.UniqueConstraint(fields=["run"], condition=models.Q(run__isnull=False), name="uniq_perm_result_run"),
        ]
