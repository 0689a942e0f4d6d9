"""Reads for response-LLM jobs: the list, what a job wrote (label counts, first labels or nuggets or answers)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from django.db.models import QuerySet

from evaluation.models import CitationLabel, Nugget, NuggetAssignment, Response
from judging.llm import response_prompts as rp
from judging.models import ResponseLlmJob

Task = ResponseLlmJob.Task


def response_job_list() -> QuerySet[ResponseLlmJob]:
    return ResponseLlmJob.objects.select_related("collection", "bank", "label_set", "run", "qrels_version")


def response_job_label_counts(*, job: ResponseLlmJob) -> list[dict[str, Any]]:
    """Rows per label (every label of the task shown, even one the model never gave)."""
    values: Any
    if job.task == Task.ASSIGN_NUGGETS:
        values = NuggetAssignment.objects.filter(label_set_id=job.label_set_id).values_list("label", flat=True)
        labels: tuple[str, ...] = rp.ASSIGN_LABELS
    elif job.task == Task.CITATION_SUPPORT:
        values = CitationLabel.objects.filter(label_set_id=job.label_set_id).values_list("support", flat=True)
        labels = rp.CITE_LABELS
    elif job.task == Task.CREATE_NUGGETS:
        values = Nugget.objects.filter(bank_id=job.bank_id).values_list("importance", flat=True)
        labels = ("vital", "okay")
    else:
        return []
    counts = Counter(values)
    return [{"label": label, "count": counts.get(label, 0)} for label in labels]


def response_job_rows(*, job: ResponseLlmJob, limit: int = 50) -> list[dict[str, Any]]:
    """The first rows the job wrote, in words."""
    if job.task == Task.ASSIGN_NUGGETS:
        qs = NuggetAssignment.objects.filter(label_set_id=job.label_set_id).select_related(
            "response__run", "response__turn", "nugget"
        )[:limit]
        return [
            {"where": f"{a.response.run.name} / {a.response.turn.turn_id}", "what": a.nugget.text, "label": a.label}
            for a in qs
        ]
    if job.task == Task.CITATION_SUPPORT:
        cl = CitationLabel.objects.filter(label_set_id=job.label_set_id).select_related(
            "sentence__response__run", "sentence__response__turn"
        )[:limit]
        return [
            {
                "where": f"{c.sentence.response.run.name} / {c.sentence.response.turn.turn_id} · {c.passage_id}",
                "what": c.sentence.text,
                "label": c.support,
            }
            for c in cl
        ]
    if job.task == Task.CREATE_NUGGETS:
        ns = Nugget.objects.filter(bank_id=job.bank_id).select_related("turn")[:limit]
        return [{"where": n.turn.turn_id, "what": n.text, "label": n.importance} for n in ns]
    rs = Response.objects.filter(run_id=job.run_id).select_related("turn").prefetch_related("sentences")[:limit]
    return [
        {
            "where": r.turn.turn_id,
            "what": r.text,
            # What an admin checks first of a model's answer: did it cite (the extractive one always does).
            "label": f"{sum(1 for s in r.sentences.all() if s.citations)} of {len(r.sentences.all())} sentences cited",
        }
        for r in rs
    ]
