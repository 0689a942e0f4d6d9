"""Relevance assessment: pools of (turn, passage) pairs, assessor judgments, derived qrels versions."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from ecast.core.models import Job
from ecast.models import Collection, Conversation, Turn
from evaluation.adjudication import DEFAULT_STRATEGY, STRATEGIES
from evaluation.models import QrelsVersion, Run

__all__ = ["Pool", "PoolBuild", "PoolPair", "AssessorAssignment", "AssessorJudgment", "GRADE_LABELS", "AGGREGATIONS"]

# CAsT relevance scale (ECAsT Table 6): grade → (short name, guideline shown to assessors).
GRADE_LABELS: dict[int, tuple[str, str]] = {
    4: ("Fully meets", "The passage is a perfect answer to the turn. It focuses only on the information need."),
    3: ("Highly meets", "The passage answers the turn. It contains limited extraneous information."),
    2: ("Moderately meets", "The passage answers the turn partially but focuses on unrelated information."),
    1: ("Slightly meets", "The passage includes some relevant content, but doesn't answer the turn directly."),
    0: ("Fails to meet", "The passage is not relevant to the turn."),
}
AGGREGATIONS = ("majority", "median", "primary")


class Pool(models.Model):
    """A depth-k pool of (turn, passage) pairs from selected runs that a qrels version has not judged yet."""

    class Status(models.TextChoices):
        BUILDING = "building", "Building (in the worker)"
        OPEN = "open", "Open"
        CLOSED = "closed", "Closed"
        FAILED = "failed", "Failed to build"

    class Kind(models.TextChoices):
        PASSAGES = "passages", "Passage relevance (0–4)"
        PTKB = "ptkb", "PTKB statement relevance (0/1)"

    class Aggregation(models.TextChoices):
        MAJORITY = "majority", "Majority"
        MEDIAN = "median", "Median (lower)"
        PRIMARY = "primary", "Primary assessor"

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="relevance_pools")
    name = models.CharField(max_length=200)
    # What a pair's "passage" is: a passage id graded 0–4, or (PTKB tasks, on a PTKB companion collection) the
    # number of a PTKB statement graded 0/1, judged a turn at a time on its own page.
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.PASSAGES)
    # The version whose judgments decide what is "unjudged".
    qrels_version = models.ForeignKey(QrelsVersion, on_delete=models.PROTECT, related_name="pools_checked")
    # The derived version ("original + new") that receives this pool's judgments; set by qrels_version_derive.
    target_version = models.ForeignKey(
        QrelsVersion, on_delete=models.SET_NULL, null=True, blank=True, related_name="pools_feeding"
    )
    runs = models.ManyToManyField(Run, related_name="relevance_pools")
    depth = models.PositiveSmallIntegerField(default=3)
    turn_filter = models.JSONField(default=list, blank=True, help_text="Turn ids the pool was restricted to.")
    # Only passages with text were pooled, the depth counted over them (a ranking is walked past passages without
    # text until ``depth`` are taken), so assessors never meet a passage they cannot read.
    text_only = models.BooleanField(default=False, help_text="Depth counted over passages with text only.")
    cluster_near_duplicates = models.BooleanField(default=False)
    cluster_threshold = models.FloatField(default=0.9)
    assessors_per_pair = models.PositiveSmallIntegerField(default=1)
    aggregation = models.CharField(max_length=10, choices=Aggregation.choices, default=Aggregation.MAJORITY)
    # The order in which an assessor gets a topic's pairs (evaluation.adjudication); depth-first is the
    # classic run-rank order, the others adapt to the judgments made.
    strategy = models.CharField(max_length=20, choices=list(STRATEGIES.items()), default=DEFAULT_STRATEGY)
    # Bandit strategies only: the documents this version already grades seed each run's arm.
    prior_version = models.ForeignKey(
        QrelsVersion, on_delete=models.SET_NULL, null=True, blank=True, related_name="pools_seeded"
    )
    # Assessors allowed to take topics; empty = every assessor.
    assessors = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="relevance_pools")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN)
    stats = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True, help_text="Why the worker could not build the pool.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.name


class PoolBuild(Job):
    """The worker computing a pool's pairs: deep pools over many runs are never built inside a request."""

    job_kind = "pool"

    # The pool's own id: the heartbeat, the sweeper and the recoveries know a build by its pool.
    pool = models.OneToOneField(Pool, on_delete=models.CASCADE, primary_key=True, related_name="build")

    def __str__(self) -> str:
        return f"build of pool {self.pool_id}"


class PoolPair(models.Model):
    """One (turn, passage) pair of a pool.

    ``cluster_head`` points at the pair whose judgments stand for the whole near-duplicate cluster; a head points
    at itself, so "the judgments that apply to this pair" is always ``cluster_head.judgments``.
    """

    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="pairs")
    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="pool_pairs")
    passage_id = models.CharField(max_length=200)
    run_ids = models.JSONField(default=list, help_text="Runs that ranked the passage within the pool depth.")
    best_rank = models.PositiveIntegerField(default=1)
    has_text = models.BooleanField(default=False)
    cluster_head = models.ForeignKey("self", on_delete=models.CASCADE, null=True, blank=True, related_name="members")

    class Meta:
        ordering = ["turn_id", "best_rank", "passage_id"]
        constraints = [models.UniqueConstraint(fields=["pool", "turn", "passage_id"], name="uniq_pool_pair")]
        indexes = [models.Index(fields=["pool", "turn"])]

    @property
    def is_head(self) -> bool:
        return self.cluster_head_id == self.pk


class AssessorAssignment(models.Model):
    """A topic lease: one assessor judges every pair of one conversation in a pool."""

    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="assignments")
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="assessor_assignments")
    assessor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="relevance_assignments"
    )
    # 1 = primary assessor of the topic; later assessors get 2, 3, ...
    slot = models.PositiveSmallIntegerField(default=1)
    assigned_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["pool_id", "conversation_id", "slot"]
        constraints = [
            models.UniqueConstraint(fields=["pool", "conversation", "assessor"], name="uniq_assignment_assessor"),
            models.UniqueConstraint(fields=["pool", "conversation", "slot"], name="uniq_assignment_slot"),
        ]


class AssessorJudgment(models.Model):
    """One assessor's grade for a cluster-head pair; a re-submit updates it and appends to ``history``."""

    pair = models.ForeignKey(PoolPair, on_delete=models.CASCADE, related_name="judgments")
    assignment = models.ForeignKey(AssessorAssignment, on_delete=models.CASCADE, related_name="judgments")
    assessor = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    grade = models.SmallIntegerField()
    history = models.JSONField(default=list, blank=True, help_text="Earlier grades: [{grade, at}], oldest first.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["pair", "assessor"], name="uniq_judgment_per_assessor"),
            models.CheckConstraint(condition=models.Q(grade__gte=0, grade__lte=4), name="judgment_grade_0_4"),
        ]
