"""Rating campaigns: crowd raters score paraphrase pairs (or (turn, passage) pairs) on 1–5 measures (ECAsT Table 5).

Invariants the assignment service keeps (see ``judging/services.py``):
- one ``RatingAssignment`` per (item, rater) — a rater never gets the same item twice;
- for every non-gold item, completed counted ratings + live leases <= ``campaign.raters_per_item``;
- one ``Rating`` per assignment, and one per (rater, idempotency key), so a repeated submit is stored once.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from ecast.models import Collection, Paraphrase, Turn

__all__ = [
    "MEASURES",
    "DEFAULT_MEASURES",
    "Campaign",
    "RatingItem",
    "RatingAssignment",
    "Rating",
    "RaterStatus",
]

# Measures of ECAsT Table 5 / Fig. 4 (questions and 1..5 anchors), plus the answer-confidence
# scale of the CAsT-snippets crowd data (Łajewska & Balog 2023) used by imported relevance-style campaigns.
# "question" names the paper's symbols (m_i, p^m, p^r) for admins; raters read "rater_question", which speaks of the
# labels their page shows ("original question", "rewritten question", "in-conversation version").
MEASURES: dict[str, dict] = {
    "semantic_similarity": {
        "name": "Semantic similarity",
        "question": "Do the original question (m_i) and the paraphrase (p^m) ask for the same information?",
        "anchors": ["Completely different", "Mostly different", "Somewhat similar", "Mostly the same", "Identical"],
        "rater_question": "Do the original question and the rewritten question ask for the same information?",
        "shows": "m_i vs p^m",
    },
    "language_diversity": {
        "name": "Language diversity",
        "question": "How different are the words and sentence structure of the paraphrase (p^m) from the original "
        "question (m_i)?",
        "anchors": ["Identical wording", "Few changes", "Some changes", "Many changes", "Completely reworded"],
        "rater_question": "How different are the words and sentence structure of the rewritten question from the "
        "original question?",
        "shows": "m_i vs p^m",
    },
    "raw_semantic_similarity": {
        "name": "Raw semantic similarity",
        "question": "Read in this conversation, does the context-dependent paraphrase (p^r) ask for the same "
        "information as the paraphrase (p^m)?",
        "anchors": ["Completely different", "Mostly different", "Somewhat similar", "Mostly the same", "Identical"],
        "rater_question": "Read after the conversation so far, does the in-conversation version ask for the same "
        "information as the rewritten question?",
        "shows": "p^m vs p^r",
    },
    "conversational_entailment": {
        "name": "Conversational entailment",
        "question": "Does the paraphrase (p^m) fit the conversation so far as its next question?",
        "anchors": ["Not at all", "Barely", "Somewhat", "Mostly", "Perfectly"],
        "rater_question": "Would the rewritten question make sense as the next question of this conversation?",
        "shows": "history h_i + p^m",
    },
    "passage_relevance": {
        "name": "Passage relevance",
        "question": "Does the passage answer the paraphrase (p^m)?",
        "anchors": ["Not relevant", "Slightly", "Partially", "Mostly", "Fully answers"],
        "rater_question": "Does the passage answer the rewritten question?",
        "shows": "passage c_i + p^m",
    },
    "answer_confidence": {
        "name": "Answer confidence",
        "question": "How confident are you that the passage answers the question?",
        "anchors": ["Very low", "Low", "Medium", "High", "Very high"],
        "rater_question": "How confident are you that the passage answers the question?",
        "shows": "query + passage",
    },
}
DEFAULT_MEASURES = [
    "semantic_similarity",
    "language_diversity",
    "raw_semantic_similarity",
    "conversational_entailment",
    "passage_relevance",
]


class Campaign(models.Model):
    """A crowd-rating campaign: a sample of items, the measures asked, N raters per item, gold checks and leases."""

    class Kind(models.TextChoices):
        PARAPHRASE = "paraphrase", "Paraphrase pairs"
        PASSAGE = "passage", "(Turn, passage) pairs"

    class Status(models.TextChoices):
        OPEN = "open", "Open"
        CLOSED = "closed", "Closed"

    name = models.CharField(max_length=200, unique=True)
    kind = models.CharField(max_length=12, choices=Kind.choices, default=Kind.PARAPHRASE)
    collections = models.ManyToManyField(Collection, blank=True, related_name="rating_campaigns")
    description = models.TextField(blank=True)
    guidelines = models.TextField(blank=True)
    # Full definitions ({key, name, question, anchors, shows}) copied at creation so later edits of the registry
    # never change what a finished campaign asked.
    measures = models.JSONField(default=list)
    raters_per_item = models.PositiveSmallIntegerField(default=5)
    lease_seconds = models.PositiveIntegerField(default=600)
    undo_seconds = models.PositiveIntegerField(default=30)
    gold_threshold = models.FloatField(default=0.6, help_text="Minimum gold accuracy; raters below it are paused.")
    gold_min_answers = models.PositiveSmallIntegerField(default=3, help_text="Gold answers needed before pausing.")
    gold_every = models.PositiveSmallIntegerField(default=5, help_text="Serve a gold item every k items.")
    gold_tolerance = models.PositiveSmallIntegerField(default=1, help_text="A gold answer within ±t counts as right.")
    sample_size = models.PositiveIntegerField(default=0)
    include_candidates = models.BooleanField(
        default=False, help_text="Sampled unapproved candidates too (otherwise approved pairs only)."
    )
    seed = models.BigIntegerField(default=0)
    strata = models.JSONField(default=dict, blank=True, help_text="Stratum → number of items sampled.")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.name

    @property
    def measure_keys(self) -> list[str]:
        return [m["key"] for m in self.measures]


class RatingItem(models.Model):
    """One thing to rate: a paraphrase pair (p^m with its p^r) in context, or a (turn, passage) pair."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="items")
    paraphrase = models.ForeignKey(
        Paraphrase, on_delete=models.PROTECT, null=True, blank=True, related_name="rating_items"
    )
    turn = models.ForeignKey(Turn, on_delete=models.SET_NULL, null=True, blank=True, related_name="rating_items")
    turn_key = models.CharField(max_length=64, blank=True, help_text="Turn id, also when no Turn row exists.")
    external_key = models.CharField(max_length=300, blank=True, help_text="Key of an imported item.")
    # What raters see, snapshotted at creation so the page never changes under a running campaign.
    context = models.JSONField(default=dict, blank=True)
    passage_id = models.CharField(max_length=200, blank=True)
    passage_text = models.TextField(blank=True)
    stratum = models.CharField(max_length=40, blank=True)
    source = models.CharField(max_length=10, blank=True, help_text="r (from r_i), m (from m_i) or unknown.")
    is_gold = models.BooleanField(default=False)
    gold_expected = models.JSONField(default=dict, blank=True, help_text="Measure key → expected score.")
    position = models.PositiveIntegerField(default=0, help_text="Seeded shuffle order; ties in the queue use it.")
    completed_count = models.PositiveSmallIntegerField(default=0, help_text="Counted (non-excluded) ratings.")
    # Assignment id → lease expiry (Unix seconds) of the item's leases, kept on the item row itself: the room check
    # "completed + live leases < N" then reads only the row it locks, which PostgreSQL re-reads at its newest version
    # when a concurrent lease changed it, so leasing stays one statement without ever overfilling the item. Entries
    # past their expiry are ignored and dropped at the next lease; a submitted lease removes its own entry.
    leases = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["campaign_id", "position", "id"]
        indexes = [models.Index(fields=["campaign", "is_gold", "completed_count", "position"])]

    def __str__(self) -> str:
        return f"item {self.pk} of {self.campaign_id}"


class RatingAssignment(models.Model):
    """A rater's lease on an item; completed once the rating is stored. Unique per (item, rater)."""

    class Status(models.TextChoices):
        LEASED = "leased", "Leased"
        COMPLETED = "completed", "Completed"
        # The lease ran out and the item went back to the queue; the rater does not get it again.
        EXPIRED = "expired", "Expired"

    # No single-column index on item or campaign: the unique (item, rater) and the (campaign, rater, status) indexes
    # lead with them and serve their look-ups and cascades, and every lease would otherwise write two more indexes.
    item = models.ForeignKey(RatingItem, on_delete=models.CASCADE, related_name="assignments", db_index=False)
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="assignments", db_index=False)
    rater = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="rating_assignments")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.LEASED)
    leased_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    completed_at = models.DateTimeField(null=True, blank=True)
    # Submissions withdrawn with "undo", kept for audit.
    history = models.JSONField(default=list, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["item", "rater"], name="uniq_rating_assignment_item_rater")]
        indexes = [
            models.Index(fields=["campaign", "rater", "status"]),
            models.Index(fields=["item", "status", "expires_at"]),
        ]


class Rating(models.Model):
    """The stored answer of one assignment: a score per measure and the time on task."""

    assignment = models.OneToOneField(RatingAssignment, on_delete=models.CASCADE, related_name="rating")
    item = models.ForeignKey(RatingItem, on_delete=models.CASCADE, related_name="ratings")
    # Served by the (campaign, submitted_at) and unique (rater, idempotency key) indexes, which lead with them.
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="ratings", db_index=False)
    rater = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="ratings", db_index=False
    )
    values = models.JSONField(help_text="Measure key → score 1..5.")
    idempotency_key = models.CharField(max_length=64)
    seconds_on_task = models.FloatField(null=True, blank=True, help_text="Visible time measured by the page.")
    server_seconds = models.FloatField(null=True, blank=True, help_text="Lease start to submission.")
    submitted_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["submitted_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["rater", "idempotency_key"], name="uniq_rating_rater_idempotency"),
        ]
        indexes = [models.Index(fields=["campaign", "submitted_at"])]


class RaterStatus(models.Model):
    """Per campaign and rater: gold accuracy and whether the rater is paused (their ratings then excluded)."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="rater_statuses")
    rater = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="rating_statuses")
    gold_answers = models.PositiveIntegerField(default=0)
    gold_correct = models.PositiveIntegerField(default=0)
    paused = models.BooleanField(default=False)
    paused_reason = models.CharField(max_length=300, blank=True)
    # Set when an admin reinstates a rater: automatic pausing then stops for them.
    override = models.BooleanField(default=False)
    # Assignments of this rater in LEASED state, or more (never fewer): while it is 0 the next item is leased in one
    # statement; otherwise the general path runs (renewing or expiring the open lease) and sets the exact count.
    open_leases = models.PositiveIntegerField(default=0)
    external_id = models.CharField(max_length=100, blank=True, help_text="Worker id of an imported crowd rater.")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["campaign", "rater"], name="uniq_rater_status")]

    @property
    def gold_accuracy(self) -> float | None:
        return self.gold_correct / self.gold_answers if self.gold_answers else None
