"""Reads for generation pages and APIs."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby
from typing import Any

from django.db.models import Count, Q, QuerySet
from django.utils import timezone

from ecast.core.progress import eta_text
from ecast.models import Collection, GenerationJob, GenerationTurn, Paraphrase, Participant, Passage, Turn
from ecast.pipeline.clean import REASONS
from ecast.pipeline.cqr import CqrTurn
from ecast.pipeline.fewshot import Example
from ecast.pipeline.run import STAGE_LABELS
from ecast.selectors import turn_paths


def generation_job_list() -> QuerySet[GenerationJob]:
    """Jobs, newest first, with the collection joined."""
    return GenerationJob.objects.select_related("collection", "created_by")


def generation_job_progress(*, job: GenerationJob) -> dict[str, Any]:
    """Turns done / failed / pending / total, outputs, and an ETA from the elapsed time per finished turn."""
    counts = job.turns.aggregate(
        done=Count("id", filter=Q(status=GenerationTurn.Status.DONE)),
        failed=Count("id", filter=Q(status=GenerationTurn.Status.FAILED)),
        cancelled=Count("id", filter=Q(status=GenerationTurn.Status.CANCELLED)),
        pending=Count("id", filter=Q(status=GenerationTurn.Status.PENDING)),
    )
    outputs = sum(job.turns.values_list("outputs", flat=True))
    finished = counts["done"] + counts["failed"]
    eta = None
    if job.status == GenerationJob.Status.RUNNING and job.started_at and finished and counts["pending"]:
        finishes = job.turns.filter(finished_at__isnull=False).exclude(status=GenerationTurn.Status.CANCELLED)
        times = sorted(t for t in finishes.values_list("finished_at", flat=True) if t is not None)
        per_turn = turn_pace(times, started=job.started_at)
        since_last = (timezone.now() - times[-1]).total_seconds() if times else 0.0
        # The turns in flight finish together (BATCH_TURNS at a time): the clock runs down at most by one batch's
        # time between finishes, so the estimate does not reach 0 s while a batch is still computing.
        in_flight = per_turn * min(BATCH_TURNS, counts["pending"])
        eta = round(max(0.0, per_turn * counts["pending"] - min(since_last, in_flight)), 1)
    total = job.progress_total or 1
    return {
        "id": job.pk,
        "status": job.status,
        "total": job.progress_total,
        **counts,
        "paraphrase_pairs": outputs,
        "percent": round(100.0 * finished / total, 1),
        "eta_seconds": eta,
        "eta_text": eta_text(eta),
        "error": job.error,
        "cancel_requested": job.cancel_requested,
    }


# Turns of a chunk sampled in one batch when the paraphrase backend seeds each prompt on its own (the shipped chat
# model: ecast.pipeline.run.run_turns; ecast.generation.processing). Small, so progress and the ETA move every few
# seconds.
BATCH_TURNS = 4
# Turns committed this close together finished in one batch (a chunk samples a few turns at once).
BATCH_GAP_S = 1.0


def turn_pace(times: Sequence[Any], *, started: Any) -> float:
    """Seconds per turn from the sorted finish times of a job's turns, for its ETA. The first batch to finish is
    left out (a worker's first batch also loads the models: a minute on a laptop for seconds-long turns, which
    would inflate the estimate for the whole job): the pace is the time from its end to the last finish over
    the turns finished since. Turns of a batch are committed together, so counting from the first *turn* (not
    batch) would read their near-zero gaps as the pace. Until a second batch finishes: elapsed since the start
    over the turns finished."""
    if not times:
        return 0.0
    end = 0
    while end + 1 < len(times) and (times[end + 1] - times[end]).total_seconds() <= BATCH_GAP_S:
        end += 1
    later = len(times) - end - 1
    if later <= 0:
        return max(0.0, (times[-1] - started).total_seconds()) / len(times)
    return max(0.0, (times[-1] - times[end]).total_seconds()) / later


def generation_turn_drops(*, details: dict[str, Any]) -> dict[str, dict[str, int]]:
    """One finished turn's dropped outputs per stage and reason. Turns finished before the stages counted their
    drops have only the paraphrase stage's list."""
    drops = details.get("drops")
    if isinstance(drops, dict):
        return drops
    counts: dict[str, int] = {}
    for d in details.get("dropped") or []:
        counts[d.get("reason", "")] = counts.get(d.get("reason", ""), 0) + 1
    return {"paraphrase": counts} if counts else {}


def generation_drop_rows(drops: dict[str, dict[str, int]]) -> list[dict[str, Any]]:
    """Drop counts as rows in pipeline order: stage, stage label, reason, count."""
    rows = []
    for stage in STAGE_LABELS:
        for reason in sorted(drops.get(stage) or {}, key=lambda r: (REASONS.index(r) if r in REASONS else 99, r)):
            rows.append({"stage": stage, "label": STAGE_LABELS[stage], "reason": reason, "count": drops[stage][reason]})
    return rows


def generation_job_drops(*, job: GenerationJob) -> dict[str, Any]:
    """Dropped outputs over the job's finished turns, per stage and reason, plus pairs kept and raw outputs."""
    totals: dict[str, dict[str, int]] = {}
    for details in job.turns.filter(status=GenerationTurn.Status.DONE).values_list("details", flat=True):
        for stage, reasons in generation_turn_drops(details=details or {}).items():
            bucket = totals.setdefault(stage, {})
            for reason, n in reasons.items():
                bucket[reason] = bucket.get(reason, 0) + n
    rows = generation_drop_rows(totals)
    return {
        "by_stage": totals,
        "rows": rows,
        "total": sum(r["count"] for r in rows),
        "paraphrase_summary": paraphrase_drop_summary(totals),
        "summary": drop_summary(totals),
    }


def generation_turn_dropped_grouped(*, details: dict[str, Any]) -> list[dict[str, Any]]:
    """One turn's dropped outputs for its page, in the order dropped, the same text dropped for the same reason
    from the same source shown once with its count (a small model often copies its source several times)."""
    groups: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    for d in details.get("dropped") or []:
        if not isinstance(d, dict):
            continue
        key = (d.get("stage") or "paraphrase", d.get("reason", ""), d.get("text", ""), d.get("source", ""))
        if key in groups:
            groups[key]["count"] += 1
        else:
            groups[key] = {**d, "stage": key[0], "count": 1}
    return list(groups.values())


def generation_job_dropped(
    *, job: GenerationJob, turn_id: str = "", stage: str = "", reason: str = ""
) -> list[dict[str, Any]]:
    """The texts the job's finished turns dropped, in turn order then pipeline order, each with its turn, stage,
    reason, the source it was made from and the grammar rules that fired; filtered by turn id, stage, reason."""
    turns = job.turns.filter(status=GenerationTurn.Status.DONE).select_related("turn").order_by("position")
    if turn_id:
        turns = turns.filter(turn__turn_id=turn_id)
    order = list(STAGE_LABELS)
    out: list[dict[str, Any]] = []
    for gt in turns:
        rows = [d for d in (gt.details or {}).get("dropped") or [] if isinstance(d, dict)]
        rows.sort(
            key=lambda d: order.index(d.get("stage", "paraphrase")) if d.get("stage", "paraphrase") in order else 9
        )
        for d in rows:
            row_stage = d.get("stage") or "paraphrase"  # turns finished before stages were recorded: paraphrase
            if (stage and row_stage != stage) or (reason and d.get("reason") != reason):
                continue
            out.append(
                {
                    "turn": gt.turn.turn_id,
                    "stage": row_stage,
                    "stage_label": STAGE_LABELS.get(row_stage, row_stage),
                    "reason": d.get("reason", ""),
                    "text": d.get("text", ""),
                    "made_from": d.get("source", ""),
                    "rules": list(d.get("rules") or []),
                }
            )
    return out


def response_passages(turns: Sequence[Turn]) -> dict[str, str]:
    """Text of the canonical response passages of turns whose response is a passage id alone (CAsT 2019–2021)."""
    ids = {t.canonical_response_id for t in turns if t.canonical_response_id and not t.canonical_response_text}
    return dict(Passage.objects.filter(passage_id__in=ids).values_list("passage_id", "text")) if ids else {}


def cqr_context(path: Sequence[Turn], passages: dict[str, str]) -> tuple[list[str], list[str], list[str]]:
    """The user's earlier turns on a path (the turn itself left out) as raw utterances, manual rewrites and
    canonical responses, aligned: a response is the turn's own text or passage, or, in a conversation tree, the
    System turn that answers it; "" when unknown."""
    raws: list[str] = []
    manuals: list[str] = []
    responses: list[str] = []
    for t in path:
        if t.is_system:
            if responses and not responses[-1]:
                responses[-1] = t.canonical_response_text
            continue
        raws.append(t.raw_utterance)
        manuals.append(t.manual_rewrite)
        responses.append(t.canonical_response_text or passages.get(t.canonical_response_id, ""))
    return raws, manuals, responses


def collection_cqr_turns(*, collection: Collection) -> list[CqrTurn]:
    """Every User turn of a collection as CQR sees it (history, responses, automatic and manual rewrite)."""
    turns = list(Turn.objects.filter(collection=collection).order_by("conversation_id", "number"))
    passages = response_passages(turns)
    out: list[CqrTurn] = []
    for _, group in groupby(turns, key=lambda t: t.conversation_id):
        members = list(group)
        paths = turn_paths(members)
        for t in members:
            if t.is_system:
                continue
            raws, _, responses = cqr_context(paths[t.pk][:-1], passages)
            out.append(CqrTurn(raws, t.raw_utterance, responses, t.automatic_rewrite, t.manual_rewrite))
    return out


def collection_has_automatic_rewrites(*, collection: Collection | None) -> bool:
    """Whether any User turn of the collection (of any collection, for None) carries an imported automatic
    rewrite, the imported CQR's input."""
    turns = Turn.objects.exclude(participant=Participant.SYSTEM).exclude(automatic_rewrite="")
    return (turns.filter(collection=collection) if collection is not None else turns).exists()


def approved_examples(*, collection: Collection) -> list[Example]:
    """The collection's approved, current manual paraphrases with the manual rewrite they paraphrase and their
    conversation's topic id: the pool the paraphrase prompt's few-shot pairs are drawn from (the pipeline never
    draws from the turn's own conversation). Turns without a manual rewrite have no source to show."""
    rows = (
        Paraphrase.objects.filter(
            turn__collection=collection,
            kind=Paraphrase.Kind.MANUAL,
            status=Paraphrase.Status.APPROVED,
            is_current=True,
        )
        .exclude(turn__manual_rewrite="")
        .order_by("turn__conversation_id", "turn__number", "id")
        .values_list("turn__manual_rewrite", "text", "turn__conversation__topic_id")
    )
    return [Example(source, text, str(topic)) for source, text, topic in rows]


def drop_summary(drops: dict[str, dict[str, int]]) -> str:
    """Every stage's drops in one line, in pipeline order, most frequent reason first: "CQR: 7 identical to
    source · Paraphrase: 4 polarity flip, 2 prompt echo · Context removal: 1 ungrammatical"."""
    parts = []
    for stage, label in STAGE_LABELS.items():
        reasons = sorted((drops.get(stage) or {}).items(), key=lambda kv: (-kv[1], kv[0]))
        if reasons:
            parts.append(f"{label}: " + ", ".join(f"{n} {reason}" for reason, n in reasons))
    return " · ".join(parts)


def paraphrase_drop_summary(drops: dict[str, dict[str, int]]) -> str:
    """The paraphrase stage's drops in one line, most frequent first: "4 polarity flip, 2 prompt echo, …"."""
    reasons = sorted((drops.get("paraphrase") or {}).items(), key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(f"{n} {reason}" for reason, n in reasons)
