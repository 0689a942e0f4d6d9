"""Dataset domain: collections of CAsT conversations, their turns, passages and paraphrases."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from ecast.core.models import Job


class Collection(models.Model):
    """A test collection, e.g. "CAsT 2020"; the unit that owns conversations, qrels and runs."""

    name = models.CharField(max_length=100, unique=True)
    year = models.PositiveSmallIntegerField(null=True, blank=True)
    corpus_note = models.TextField(blank=True, help_text="Which passage corpus the ids refer to.")
    relevance_threshold = models.PositiveSmallIntegerField(
        default=1, help_text="Minimum grade counted as relevant by binary measures (MAP, recall, P@k, bpref)."
    )
    # TREC iKAT: a collection's PTKB assessments live in a companion collection that mirrors its conversations and
    # turns and whose "passages" are PTKB statement numbers, so PTKB qrels, statement runs, pools, the leaderboard
    # and the agreement report all work on it as on any collection (``ecast.services.ptkb_collection_sync``).
    ptkb_of = models.OneToOneField(
        "self",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="ptkb_companion",
        help_text="The iKAT collection whose PTKB statements this collection's items are.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["year", "name"]

    def __str__(self) -> str:
        return self.name

    @property
    def ptkb_source(self) -> Collection:
        """The iKAT collection whose PTKB this companion mirrors; a collection that is no companion is its own."""
        return self.ptkb_of or self


class Conversation(models.Model):
    """A CAsT topic: an ordered sequence of turns."""

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="conversations")
    topic_id = models.CharField(max_length=32)
    title = models.CharField(max_length=500, blank=True)
    description = models.TextField(blank=True)

    class Meta:
        ordering = ["collection", "id"]
        constraints = [models.UniqueConstraint(fields=["collection", "topic_id"], name="uniq_conversation_topic")]

    def __str__(self) -> str:
        return f"{self.collection.name} topic {self.topic_id}"


class UtteranceClass(models.TextChoices):
    SELF_EXPLANATORY = "SE", "Self-explanatory"
    FIRST_TOPIC = "FT", "Depends on the first turn"
    PREVIOUS_TOPIC = "PT", "Depends on a previous topic"


class Participant(models.TextChoices):
    USER = "User", "User"
    SYSTEM = "System", "System"


class MixedInitiative(models.TextChoices):
    """A System turn that hands the initiative to the user instead of answering (``ecast.trees.mixed_initiative``)."""

    CLARIFICATION = "clarification", "Clarifying question"
    SUGGESTION = "suggestion", "Suggestion"


class Turn(models.Model):
    """One utterance u_i of a conversation with its rewrites, canonical response and dependency labels."""

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="turns")
    # Denormalised so that "<topic>_<turn>" ids resolve with one indexed lookup per collection.
    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="turns")
    # In a tree, the turn's position in its topics file: ancestors always come first, so ordering a path by number
    # keeps its order; the number people read is ``tree_number``.
    number = models.PositiveSmallIntegerField()
    turn_id = models.CharField(max_length=64, help_text="<topic>_<turn>, as in qrels and runs.")
    raw_utterance = models.TextField()
    manual_rewrite = models.TextField(blank=True)
    automatic_rewrite = models.TextField(blank=True)
    canonical_response_id = models.CharField(max_length=200, blank=True)
    canonical_response_text = models.TextField(blank=True)
    canonical_response_unreliable = models.BooleanField(
        default=False, help_text="Set when the next turn gives negative feedback on this response."
    )
    replacement_response_id = models.CharField(max_length=200, blank=True)
    feedback_sentences = models.JSONField(default=list, blank=True)
    revealment_sentences = models.JSONField(default=list, blank=True)
    utterance_class = models.CharField(max_length=2, choices=UtteranceClass.choices, blank=True)
    depends_on = models.ForeignKey("self", on_delete=models.SET_NULL, null=True, blank=True, related_name="dependents")
    relevant_turn_numbers = models.JSONField(
        default=list, blank=True, help_text="Earlier turns this one relies on (CAsTUR / CAsT annotations)."
    )
    # TREC iKAT: the canonical response is a written answer (in canonical_response_text, with no passage id) that
    # cites passages and the user's PTKB statements.
    response_provenance = models.JSONField(
        default=list, blank=True, help_text="Passage ids the canonical response was written from (iKAT)."
    )
    ptkb_provenance = models.JSONField(
        default=list, blank=True, help_text="Numbers of the conversation's PTKB statements the response used (iKAT)."
    )
    # TREC CAsT 2022 conversation trees: a System turn is the system's side of the conversation (its response in
    # canonical_response_text, its passages in response_provenance, no utterance); ``parent`` links each turn to the
    # one it follows, so the history of a turn is its path (``ecast.selectors.turn_history``). Linear conversations
    # leave these at their defaults: User turns, no parent (each follows the turn numbered before it).
    participant = models.CharField(max_length=6, choices=Participant.choices, default=Participant.USER)
    parent = models.ForeignKey("self", on_delete=models.CASCADE, null=True, blank=True, related_name="children")
    tree_number = models.CharField(
        max_length=16, blank=True, help_text='Branch-aware number in a conversation tree ("1-3"); empty when linear.'
    )
    mixed_initiative = models.CharField(max_length=13, choices=MixedInitiative.choices, blank=True)

    class Meta:
        ordering = ["conversation_id", "number"]
        constraints = [
            models.UniqueConstraint(fields=["conversation", "number"], name="uniq_turn_number"),
            models.UniqueConstraint(fields=["collection", "turn_id"], name="uniq_turn_id_per_collection"),
        ]
        indexes = [models.Index(fields=["turn_id"])]

    def __str__(self) -> str:
        return self.turn_id

    @property
    def label(self) -> str:
        """The number people read: the branch-aware one in a tree ("1-3"), else the turn number."""
        return self.tree_number or str(self.number)

    @property
    def is_system(self) -> bool:
        return self.participant == Participant.SYSTEM


class PtkbStatement(models.Model):
    """One statement of a conversation's Personal Text Knowledge Base (TREC iKAT): what the user has told the
    system about themselves ("I'm vegetarian."), numbered as in the topics file."""

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="ptkb")
    number = models.PositiveSmallIntegerField()
    text = models.TextField()

    class Meta:
        ordering = ["conversation_id", "number"]
        constraints = [models.UniqueConstraint(fields=["conversation", "number"], name="uniq_ptkb_number")]

    def __str__(self) -> str:
        return f"{self.number}. {self.text}"


class Passage(models.Model):
    """Passage text by corpus id (MARCO_…, CAR_…, KILT_…); ids without text simply have no row."""

    passage_id = models.CharField(max_length=200, unique=True)
    text = models.TextField()
    source = models.CharField(max_length=300, blank=True, help_text="File or process the text came from.")
    # A collection's corpus is the passages imported for it (``collection.corpus``): its built-in runs retrieve from
    # these only, since passages of several corpora (CAsT 2020 MARCO/CAR, CAsT 2021 documents, iKAT ClueWeb22)
    # share this table. A passage of a corpus that two collections use (MS MARCO in CAsT 2019 and 2020) is in both.
    collections = models.ManyToManyField(
        Collection, blank=True, related_name="corpus", help_text="The collections whose corpus this passage is in."
    )

    def __str__(self) -> str:
        return self.passage_id


class Paraphrase(models.Model):
    """A manual (context-independent) or raw (context-dependent) paraphrase of a turn.

    Edits never overwrite: an edit creates a new row with origin=edited and ``edited_from`` pointing at the
    previous text, and the previous row gets ``is_current=False``, so the whole history stays queryable.
    """

    class Kind(models.TextChoices):
        MANUAL = "manual", "Manual (context-independent)"
        RAW = "raw", "Raw (context-dependent)"

    class Status(models.TextChoices):
        CANDIDATE = "candidate", "Candidate"
        APPROVED = "approved", "Approved"
        REJECTED = "rejected", "Rejected"

    class Origin(models.TextChoices):
        IMPORTED = "imported", "Imported"
        GENERATED = "generated", "Generated"
        EDITED = "edited", "Edited"
        ADDED = "added", "Added"

    # An ECAsT import writes tens of thousands of rows: no database foreign-key constraints on the turn and the
    # pair (PostgreSQL checks each row at commit); the importer resolves both in its transaction and Django still
    # cascades deletes. The (turn, kind, status) index serves turn look-ups.
    turn = models.ForeignKey(
        Turn, on_delete=models.CASCADE, related_name="paraphrases", db_constraint=False, db_index=False
    )
    kind = models.CharField(max_length=10, choices=Kind.choices)
    text = models.TextField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.CANDIDATE)
    origin = models.CharField(max_length=10, choices=Origin.choices)
    provenance = models.JSONField(default=dict, blank=True)
    edited_from = models.ForeignKey("self", on_delete=models.SET_NULL, null=True, blank=True, related_name="edits")
    # The other member of a manual/raw pair produced together (both rows point at each other).
    pair = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="+", db_constraint=False
    )
    is_current = models.BooleanField(default=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["turn_id", "id"]
        indexes = [models.Index(fields=["turn", "kind", "status"])]

    def __str__(self) -> str:
        return f"{self.turn.turn_id} {self.kind}: {self.text[:60]}"


class ImportJob(Job):
    """One import of one file: its progress and the full error report, kept for the import page and API."""

    job_kind = "import"

    kind = models.CharField(max_length=40)
    collection = models.ForeignKey(Collection, on_delete=models.SET_NULL, null=True, blank=True)
    file_name = models.CharField(max_length=500)
    stored_path = models.CharField(max_length=1000, blank=True)
    options = models.JSONField(default=dict, blank=True)
    errors = models.JSONField(default=list, blank=True, help_text="[{file, line, reason}, ...]")
    counts = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-created_at"]


class TestSet(models.Model):
    """A random paraphrase test set R^r_i / R^m_i: one paraphrase per turn of each conversation (ECAsT)."""

    __test__ = False  # not a pytest test class

    class Kind(models.TextChoices):
        RAW = "raw", "Raw (R^r)"
        MANUAL = "manual", "Manual (R^m)"

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="test_sets")
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=10, choices=Kind.choices)
    index = models.PositiveSmallIntegerField()
    seed = models.BigIntegerField()
    parameters = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["collection", "name"], name="uniq_testset_name")]

    def __str__(self) -> str:
        return self.name


class TestSetItem(models.Model):
    __test__ = False
    test_set = models.ForeignKey(TestSet, on_delete=models.CASCADE, related_name="items")
    turn = models.ForeignKey(Turn, on_delete=models.CASCADE)
    paraphrase = models.ForeignKey(Paraphrase, on_delete=models.PROTECT)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["test_set", "turn"], name="uniq_testset_turn")]


class GenerationJob(Job):
    """A background paraphrase-generation job over a selection of turns (helper "pipeline").

    ``config`` holds, per stage (cqr, paraphrase, cr, clean), the backend and its parameters; progress is
    counted from :class:`GenerationTurn` rows so a resumed or retried job never double-counts
    (``progress_total`` is the number of turns, ``progress_done`` those finished, set from a count).
    """

    job_kind = "generation"

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="generation_jobs")
    name = models.CharField(max_length=200, blank=True)
    selection = models.JSONField(default=dict, blank=True, help_text="{conversation_ids: [...], turn_ids: [...]}")
    config = models.JSONField(default=dict, blank=True)
    seed = models.BigIntegerField(default=0)
    chunk_size = models.PositiveIntegerField(default=10)
    cancel_requested = models.BooleanField(default=False)
    # The key this job sends to an OpenAI-compatible endpoint, when it has its own: kept out of ``config`` (shown on
    # the job page and in the API) and out of provenance; only the worker reads it.
    api_key = models.CharField(max_length=500, blank=True, editable=False)

    class Meta:
        ordering = ["-created_at", "-id"]

    @property
    def status_label(self) -> str:
        # A failed generation job kept every turn that succeeded: it finished, with some turns failed.
        return "Finished with failures" if self.status == self.Status.FAILED else super().status_label

    def __str__(self) -> str:
        return self.name or f"Generation job {self.pk}"


class GenerationTurn(models.Model):
    """One turn of a generation job: the unit of work, of idempotence and of retry."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    job = models.ForeignKey(GenerationJob, on_delete=models.CASCADE, related_name="turns")
    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="generation_turns")
    position = models.PositiveIntegerField(default=0)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    outputs = models.PositiveIntegerField(default=0)
    details = models.JSONField(default=dict, blank=True, help_text="Rewrite, sources, dropped texts and reasons.")
    error = models.TextField(blank=True)
    seconds = models.FloatField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["job_id", "position"]
        constraints = [models.UniqueConstraint(fields=["job", "turn"], name="uniq_generation_job_turn")]
        indexes = [models.Index(fields=["job", "status"])]


class FinetuneJob(Job):
    """Fine-tune the chat model on a collection's approved pairs as a LoRA adapter (``ecast.pipeline.lora``)."""

    job_kind = "finetune"

    class Stage(models.TextChoices):
        PARAPHRASE = "paraphrase", "Paraphrase (mᵢ → pᵐ)"
        CR = "cr", "Context removal (pᵐ → pʳ)"

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="finetune_jobs")
    stage = models.CharField(max_length=10, choices=Stage.choices, default=Stage.PARAPHRASE)
    base_model = models.CharField(max_length=1000, default="smollm", help_text="'smollm' or a local model path.")
    params = models.JSONField(default=dict, blank=True)
    # Conversations whose pairs never train or validate the adapter (a test collection's turns kept unseen).
    exclude_topics = models.JSONField(default=list, blank=True)
    cancel_requested = models.BooleanField(default=False)
    metrics = models.JSONField(default=dict, blank=True, help_text="Losses, pair counts, seconds, device.")

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"Fine-tune {self.pk} ({self.collection.name}, {self.stage})"


class Adapter(models.Model):
    """A trained LoRA adapter, kept in the database so every worker can load it; a generation backend."""

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="adapters")
    job = models.OneToOneField(FinetuneJob, on_delete=models.SET_NULL, null=True, blank=True, related_name="adapter")
    stage = models.CharField(max_length=10, choices=FinetuneJob.Stage.choices)
    base_model = models.CharField(max_length=1000)
    weights = models.BinaryField()
    sha256 = models.CharField(max_length=64)
    config = models.JSONField(default=dict, help_text="The peft LoRA configuration.")
    metrics = models.JSONField(default=dict, blank=True)
    # What it learnt from: pair counts, the approved paraphrase ids, the conversations held out and excluded.
    training = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.label

    @property
    def label(self) -> str:
        base = "SmolLM2" if self.base_model in ("", "smollm") else self.base_model.rsplit("/", 1)[-1]
        return f"{base} + {self.collection.name} adapter #{self.pk} ({self.get_stage_display()})"


class JobRecovery(models.Model):
    """What the sweeper (or the broker's redelivery) did about a job whose worker died or whose message was lost.

    Jobs of every kind live in their own feature's table, so a recovery names the job by kind and id; the job
    pages and APIs show these as "retried after worker loss".
    """

    class Reason(models.TextChoices):
        WORKER_LOST = "worker_lost", "Retried after worker loss"
        REQUEUED = "requeued", "Re-queued (no worker had started it)"
        GAVE_UP = "gave_up", "Failed after repeated worker loss"
        TRANSIENT = "transient", "Retried after a database or broker error"

    kind = models.CharField(max_length=40)
    job_id = models.PositiveBigIntegerField()
    reason = models.CharField(max_length=20, choices=Reason.choices)
    detail = models.TextField(blank=True)
    last_heartbeat = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["kind", "job_id", "created_at", "id"]
        indexes = [models.Index(fields=["kind", "job_id"])]

    def __str__(self) -> str:
        return f"{self.kind} {self.job_id}: {self.reason}"
