"""Response-level judging (TREC RAG 2024/2025, TREC iKAT 2024): the answers of RAG systems, nugget banks and the
label sets that judge answers against them.

The stores live here, beside qrels versions, for the same reason: scores read them, and ``judging`` (the queues,
the LLM judge) writes into them, so evaluation never imports judging.

- A :class:`ResponseRun` is one system's answers; a :class:`Response` answers one turn, split into
  :class:`ResponseSentence` rows that keep their citations (passage ids, in the order the system gave them).
- A :class:`NuggetBank` is a version of the nuggets of a collection's turns ("LLM draft", "post-edited"), like a
  qrels version; a :class:`Nugget` keeps where it came from (imported / auto / edited / added) and its importance.
- A :class:`ResponseLabelSet` holds one kind of label (nugget assignment, or citation support) from one source
  (imported, assessed here, or an LLM job), so human vs human and human vs LLM agreement compare two sets.
  :class:`NuggetAssignment` and :class:`CitationLabel` are its rows; each records the condition it was made under
  (blind, or post-editing an LLM label shown to the assessor).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from ecast.models import Collection, Turn

__all__ = [
    "ResponseRun",
    "Response",
    "ResponseSentence",
    "NuggetBank",
    "Nugget",
    "ResponseLabelSet",
    "NuggetAssignment",
    "CitationLabel",
    "LabelCondition",
]


class LabelCondition(models.TextChoices):
    """What the person labelling saw: agreement with an LLM differs between the two, so reports keep them apart."""

    BLIND = "blind", "Blind (no LLM label shown)"
    POST_EDIT = "post_edit", "Post-editing an LLM label"
    # Imported labels (the file does not say) and the LLM's own labels.
    NONE = "", "Not recorded"


class ResponseRun(models.Model):
    """One system's generated answers over a collection's turns (a TREC RAG / iKAT run with responses)."""

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="response_runs")
    name = models.CharField(max_length=200, help_text="Run tag, unique within the collection.")
    description = models.TextField(blank=True)
    source_file = models.CharField(max_length=500, blank=True)
    # The file format it came from ("rag24", "rag25", "ikat", "tsv", "baseline") and what the import counted.
    source_format = models.CharField(max_length=20, blank=True)
    import_report = models.JSONField(default=dict, blank=True)
    # How the built-in baseline made it (retriever, k, backend, model, parameters); empty for imported runs.
    provenance = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["collection", "name"]
        constraints = [models.UniqueConstraint(fields=["collection", "name"], name="uniq_response_run_name")]

    def __str__(self) -> str:
        return self.name


class Response(models.Model):
    """A run's answer to one turn: its full text (citations removed) and the passages it drew on."""

    run = models.ForeignKey(ResponseRun, on_delete=models.CASCADE, related_name="responses")
    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="responses")
    text = models.TextField()
    # The passage ids the answer was given (TREC RAG "references"; iKAT passage provenance), in the file's order.
    references = models.JSONField(default=list, blank=True)
    # As the file states it (TREC RAG "response_length"); None when it does not.
    length = models.PositiveIntegerField(null=True, blank=True)
    metadata = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["run_id", "turn_id"]
        constraints = [models.UniqueConstraint(fields=["run", "turn"], name="uniq_response_per_run_turn")]

    def __str__(self) -> str:
        return f"{self.run} / {self.turn_id}"


class ResponseSentence(models.Model):
    """One sentence of an answer and the passages it cites; the first citation is the one support scores read."""

    response = models.ForeignKey(Response, on_delete=models.CASCADE, related_name="sentences")
    index = models.PositiveIntegerField(help_text="0-based position in the answer.")
    text = models.TextField()
    citations = models.JSONField(default=list, blank=True, help_text="Cited passage ids, in the system's order.")

    class Meta:
        ordering = ["response_id", "index"]
        constraints = [models.UniqueConstraint(fields=["response", "index"], name="uniq_sentence_index")]


class NuggetBank(models.Model):
    """A version of the nuggets of a collection's turns, versioned like qrels ("LLM draft", "post-edited")."""

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="nugget_banks")
    name = models.CharField(max_length=100)
    parent = models.ForeignKey("self", on_delete=models.PROTECT, null=True, blank=True, related_name="children")
    description = models.TextField(blank=True)
    source_file = models.CharField(max_length=500, blank=True)
    # The LLM job that drafted it, when one did: model, prompt version, parameters.
    provenance = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["collection", "created_at", "id"]
        constraints = [models.UniqueConstraint(fields=["collection", "name"], name="uniq_nugget_bank_name")]

    def __str__(self) -> str:
        return f"{self.collection.name} / {self.name}"


class Nugget(models.Model):
    """An atomic fact a good answer to a turn contains."""

    class Importance(models.TextChoices):
        VITAL = "vital", "Vital"
        OKAY = "okay", "Okay"

    class Origin(models.TextChoices):
        IMPORTED = "imported", "Imported"
        AUTO = "auto", "Drafted by an LLM"
        EDITED = "edited", "Edited by a person"
        ADDED = "added", "Added by a person"

    bank = models.ForeignKey(NuggetBank, on_delete=models.CASCADE, related_name="nuggets")
    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="nuggets")
    position = models.PositiveIntegerField(default=0, help_text="Order within the turn, as given.")
    text = models.TextField()
    importance = models.CharField(max_length=5, choices=Importance.choices, default=Importance.OKAY)
    # iKAT's 1–4 grade (the source passage's relevance), kept as given; None elsewhere.
    grade = models.PositiveSmallIntegerField(null=True, blank=True)
    origin = models.CharField(max_length=8, choices=Origin.choices, default=Origin.IMPORTED)
    # The passages it was read from (a span selected while judging, or the LLM's input).
    source_passages = models.JSONField(default=list, blank=True)
    # The id it had in its file (iKAT "[n]"), so exports and re-imports round-trip.
    external_id = models.CharField(max_length=100, blank=True)
    # Set when a curator merged this nugget into another: it then stays out of queues and scores.
    merged_into = models.ForeignKey("self", on_delete=models.SET_NULL, null=True, blank=True, related_name="merged")
    provenance = models.JSONField(default=dict, blank=True)
    history = models.JSONField(default=list, blank=True, help_text="Earlier versions: [{text, importance, at, by}].")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["bank_id", "turn_id", "position", "id"]
        indexes = [models.Index(fields=["bank", "turn"])]

    def __str__(self) -> str:
        return self.text


class ResponseLabelSet(models.Model):
    """One set of labels of one kind and one source: imported, assessed in ecast, or an LLM job's."""

    class Kind(models.TextChoices):
        NUGGETS = "nuggets", "Nugget assignment"
        CITATIONS = "citations", "Citation support"

    class Source(models.TextChoices):
        IMPORTED = "imported", "Imported"
        ASSESSED = "assessed", "Assessed in ecast"
        LLM = "llm", "LLM"

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="response_label_sets")
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=10, choices=Kind.choices)
    source = models.CharField(max_length=10, choices=Source.choices)
    # Nugget-assignment sets only: the bank whose nuggets are assigned.
    bank = models.ForeignKey(NuggetBank, on_delete=models.PROTECT, null=True, blank=True, related_name="label_sets")
    description = models.TextField(blank=True)
    source_file = models.CharField(max_length=500, blank=True)
    # LLM sets: model id, path, revision, parameters, prompt version (each label keeps its own prompt too).
    provenance = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # Bumped by every label write, so cached scores know they are stale.
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["collection", "kind", "created_at", "id"]
        constraints = [models.UniqueConstraint(fields=["collection", "name"], name="uniq_response_label_set_name")]

    def __str__(self) -> str:
        return f"{self.collection.name} / {self.name}"


class NuggetAssignment(models.Model):
    """Whether a response supports a nugget (castorini/nuggetizer: support / partial_support / not_support)."""

    class Label(models.TextChoices):
        SUPPORT = "support", "Support"
        PARTIAL = "partial_support", "Partial support"
        NOT = "not_support", "Not supported"

    label_set = models.ForeignKey(ResponseLabelSet, on_delete=models.CASCADE, related_name="assignments")
    response = models.ForeignKey(Response, on_delete=models.CASCADE, related_name="nugget_assignments")
    nugget = models.ForeignKey(Nugget, on_delete=models.CASCADE, related_name="assignments")
    label = models.CharField(max_length=15, choices=Label.choices)
    condition = models.CharField(max_length=10, choices=LabelCondition.choices, blank=True, default="")
    assessor = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    # LLM labels: the exact prompt and how it was made (model, parameters, probabilities).
    prompt = models.TextField(blank=True)
    provenance = models.JSONField(default=dict, blank=True)
    history = models.JSONField(default=list, blank=True, help_text="Earlier labels: [{label, at, by}], oldest first.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["label_set", "response", "nugget"], name="uniq_nugget_assignment"),
        ]


class CitationLabel(models.Model):
    """Whether a cited passage supports an answer sentence (TREC 2024 RAG support: full 2 / partial 1 / none 0)."""

    class Support(models.TextChoices):
        FULL = "full", "Full support"
        PARTIAL = "partial", "Partial support"
        NONE = "none", "No support"
        # The sentence states nothing that needs a source ("I hope this helps."): left out of both denominators.
        NOT_NEEDED = "not_needed", "Needs no citation"

    label_set = models.ForeignKey(ResponseLabelSet, on_delete=models.CASCADE, related_name="citation_labels")
    sentence = models.ForeignKey(ResponseSentence, on_delete=models.CASCADE, related_name="citation_labels")
    passage_id = models.CharField(max_length=200)
    support = models.CharField(max_length=10, choices=Support.choices)
    condition = models.CharField(max_length=10, choices=LabelCondition.choices, blank=True, default="")
    assessor = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    prompt = models.TextField(blank=True)
    provenance = models.JSONField(default=dict, blank=True)
    history = models.JSONField(default=list, blank=True, help_text="Earlier labels: [{support, at, by}].")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["label_set", "sentence", "passage_id"], name="uniq_citation_label"),
        ]
