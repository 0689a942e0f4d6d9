"""LLM pre-judgments: a job labels the judged (turn, passage) pairs with text of a human qrels version with a local
model, into a qrels version of its own; every label keeps its prompt and provenance."""

from __future__ import annotations

from django.db import models

from ecast.core.models import Job
from ecast.models import Collection, Turn
from evaluation.models import NuggetBank, QrelsVersion, ResponseLabelSet, ResponseRun

__all__ = ["LlmJudgeJob", "LlmLabel", "ResponseLlmJob"]


class LlmJudgeJob(Job):
    """One labelling run of one model over the pairs with text of a human version (``source_version``)."""

    job_kind = "llm_judge"

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="llm_judge_jobs")
    # The human version whose judged pairs (with passage text) are labelled; the LLM version's parent.
    source_version = models.ForeignKey(QrelsVersion, on_delete=models.PROTECT, related_name="llm_jobs_reading")
    # "llm: <model>": holds this job's labels only, never the parent's rows.
    target_version = models.ForeignKey(
        QrelsVersion, on_delete=models.SET_NULL, null=True, blank=True, related_name="llm_jobs_writing"
    )
    model = models.CharField(max_length=1000, help_text="'smollm' (shipped) or a local model folder / .gguf file.")
    model_id = models.CharField(max_length=300)
    revision = models.CharField(max_length=300, blank=True)
    params = models.JSONField(default=dict, blank=True)
    provenance = models.JSONField(default=dict, blank=True)
    limit = models.PositiveIntegerField(null=True, blank=True, help_text="Label only the first N pairs.")
    seconds = models.FloatField(default=0.0, help_text="Model time spent labelling (for pairs per second).")
    # The key an "openai" job sends to its endpoint when it has its own: never in params, provenance, pages or API.
    api_key = models.CharField(max_length=500, blank=True, editable=False)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"LLM judge {self.pk} ({self.model_id})"


class LlmLabel(models.Model):
    """One model label of a (turn, passage) pair, with the exact prompt and how it was made."""

    job = models.ForeignKey(LlmJudgeJob, on_delete=models.CASCADE, related_name="labels")
    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="+")
    passage_id = models.CharField(max_length=200)
    grade = models.SmallIntegerField()
    probabilities = models.JSONField(default=list, help_text="Probability of grades 0..4.")
    digit_mass = models.FloatField(help_text="Next-token probability the model put on the five digits at all.")
    prompt = models.TextField()
    provenance = models.JSONField(default=dict, help_text="Model id, path, revision, parameters, prompt version.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["job_id", "id"]
        constraints = [models.UniqueConstraint(fields=["job", "turn", "passage_id"], name="uniq_llm_label")]


class ResponseLlmJob(Job):
    """One LLM job over responses (or, for ``baseline``, one built-in run of answers); every label in its own set.

    ``task``: ``create_nuggets`` drafts a nugget bank from the judged-relevant passages of ``qrels_version``;
    ``assign_nuggets`` labels the responses of ``runs`` against ``bank``; ``citation_support`` labels the citations
    of the answer sentences of ``runs``; ``baseline`` answers the collection's turns into ``run``.
    """

    job_kind = "response_llm"

    class Task(models.TextChoices):
        CREATE_NUGGETS = "create_nuggets", "Nugget creation"
        ASSIGN_NUGGETS = "assign_nuggets", "Nugget assignment"
        CITATION_SUPPORT = "citation_support", "Citation support"
        BASELINE = "baseline", "Baseline answers"

    task = models.CharField(max_length=20, choices=Task.choices)
    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="response_llm_jobs")
    # Nugget creation: the version whose judged-relevant passages (grade >= threshold) the nuggets are read from.
    qrels_version = models.ForeignKey(
        QrelsVersion, on_delete=models.PROTECT, null=True, blank=True, related_name="response_llm_jobs"
    )
    threshold = models.PositiveSmallIntegerField(null=True, blank=True)
    # Assignment: the bank read; creation: the bank written ("LLM draft: <model>").
    bank = models.ForeignKey(
        NuggetBank, on_delete=models.SET_NULL, null=True, blank=True, related_name="response_llm_jobs"
    )
    runs = models.ManyToManyField(ResponseRun, blank=True, related_name="llm_jobs_reading")
    label_set = models.ForeignKey(
        ResponseLabelSet, on_delete=models.SET_NULL, null=True, blank=True, related_name="llm_jobs"
    )
    # Baseline: the run written.
    run = models.ForeignKey(ResponseRun, on_delete=models.SET_NULL, null=True, blank=True, related_name="baseline_jobs")
    model = models.CharField(max_length=1000, help_text="'smollm', a local model folder / .gguf, or 'openai'.")
    model_id = models.CharField(max_length=300)
    revision = models.CharField(max_length=300, blank=True)
    params = models.JSONField(default=dict, blank=True)
    provenance = models.JSONField(default=dict, blank=True)
    limit = models.PositiveIntegerField(null=True, blank=True, help_text="Do only the first N items.")
    # Turn ids ("81_2") the job is restricted to; empty: every turn.
    turns = models.JSONField(default=list, blank=True)
    seconds = models.FloatField(default=0.0, help_text="Model time spent (for items per second).")
    # Keys of the items finished where the written rows cannot say so (a turn that drafted no nugget).
    done = models.JSONField(default=list, blank=True)
    api_key = models.CharField(max_length=500, blank=True, editable=False)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.get_task_display()} {self.pk} ({self.model_id})"
