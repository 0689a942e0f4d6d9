"""BLEU reports: paraphrase diversity before/after curation (ECAsT Table 10) and context removal (Table 9)."""

from __future__ import annotations

from typing import Any

from ecast.models import Collection, GenerationJob, GenerationTurn, Paraphrase, Turn
from ecast.pipeline.bleu import PAPER_TABLE9, corpus_bleu
from ecast.pipeline.rules import entity_removal


def _current_descendant(pid: int, children: dict[int, int]) -> int:
    seen = set()
    while pid in children and pid not in seen:
        seen.add(pid)
        pid = children[pid]
    return pid


def diversity_rows(*, collections: list[Collection] | None = None) -> list[dict[str, Any]]:
    """Per collection plus "All": BLEU of generated manual paraphrases vs their source turns, as generated
    (ParaAuto) and in their current curated version (ParaDiverse); rejected chains are left out of both."""
    qs = Paraphrase.objects.filter(origin=Paraphrase.Origin.GENERATED, kind=Paraphrase.Kind.MANUAL)
    if collections is not None:
        qs = qs.filter(turn__collection__in=collections)
    generated = list(qs.values("id", "text", "provenance", "turn__collection_id", "turn__collection__name"))
    children = dict(
        Paraphrase.objects.filter(edited_from__isnull=False, turn__in=qs.values("turn")).values_list(
            "edited_from_id", "id"
        )
    )
    current_ids = {g["id"]: _current_descendant(g["id"], children) for g in generated}
    current = {
        p["id"]: p for p in Paraphrase.objects.filter(id__in=set(current_ids.values())).values("id", "text", "status")
    }
    groups: dict[str, dict[str, list[str]]] = {}
    for g in generated:
        cur = current.get(current_ids[g["id"]])
        source = (g["provenance"] or {}).get("source_text")
        if not cur or not source or cur["status"] == Paraphrase.Status.REJECTED:
            continue
        for key in (g["turn__collection__name"], "All"):
            bucket = groups.setdefault(key, {"auto": [], "diverse": [], "refs": [], "edited": []})
            bucket["auto"].append(g["text"])
            bucket["diverse"].append(cur["text"])
            bucket["refs"].append(source)
            bucket["edited"].append("1" if cur["id"] != g["id"] else "")
    rows = []
    for key in sorted(groups, key=lambda k: (k == "All", k)):
        b = groups[key]
        auto, diverse = corpus_bleu(b["auto"], b["refs"]), corpus_bleu(b["diverse"], b["refs"])
        change = None if not auto or diverse is None else 100.0 * (diverse - auto) / auto
        rows.append(
            {
                "collection": key,
                "paraphrases": len(b["refs"]),
                "edited": sum(1 for e in b["edited"] if e),
                "para_auto": auto,
                "para_diverse": diverse,
                "change_pct": change,
            }
        )
    return rows


# Which turns, as the paper has it ("T5 for context removal (RQ1)"): the systems' outputs "are compared with raw
# turns as our ground truth", every turn of the collection. First turns carry their full context, so context removal
# leaves m_1 as it is (the pipeline's p^r = p^m) and a CR system's output there is m_1 itself. With every CAsT 2020
# turn, "Original manual" is exactly the paper's 44.72 (turns ≥ 2 alone give 39.78).
TABLE9_TURNS = "every turn with a manual rewrite, turn 1 included (ECAsT, “T5 for context removal”)"


def context_removal_rows(*, collection: Collection) -> list[dict[str, Any]]:
    """Table 9 for one collection: BLEU vs the real raw turns u_i (every turn, see TABLE9_TURNS) of "Original
    manual" (m_i), "Entity removal" (POS-based, computed here) and the CR output on m_i of every finished job that
    has one; ``paper`` is ECAsT's figure for the row where the paper reports one."""
    turns = list(
        Turn.objects.filter(collection=collection)
        .exclude(manual_rewrite="")
        .order_by("conversation_id", "number")
        .values_list("id", "number", "raw_utterance", "manual_rewrite")
    )
    refs = [raw for _, _, raw, _ in turns]
    manual = [m for _, _, _, m in turns]
    paper = PAPER_TABLE9.get(collection.year or 0, {})
    rows: list[dict[str, Any]] = [
        {
            "system": "Original manual",
            "turns": len(turns),
            "bleu": corpus_bleu(manual, refs),
            "job": None,
            "paper": paper.get("Original manual"),
        },
        {
            "system": "Entity removal",
            "turns": len(turns),
            "bleu": corpus_bleu([entity_removal(m) for m in manual], refs),
            "job": None,
            "paper": paper.get("Entity removal"),
        },
    ]
    by_turn = {tid: (number, raw, m) for tid, number, raw, m in turns}
    # One query for every job's CR outputs instead of one per job.
    outputs: dict[int, list[tuple[str, str]]] = {}
    has_cr: set[int] = set()
    for job_id, turn_id, details in GenerationTurn.objects.filter(
        job__collection=collection, status=GenerationTurn.Status.DONE, turn_id__in=by_turn
    ).values_list("job_id", "turn_id", "details"):
        number, raw, m = by_turn[turn_id]
        if details.get("cr_of_manual"):
            has_cr.add(job_id)
            outputs.setdefault(job_id, []).append((details["cr_of_manual"], raw))
        elif number == 1:
            outputs.setdefault(job_id, []).append((m, raw))
    for job in GenerationJob.objects.filter(collection=collection, pk__in=has_cr).order_by("id"):
        pairs = outputs[job.pk]
        cr = job.config.get("cr", {})
        label = f"CR {cr.get('backend')}" + (
            f" ({cr.get('params', {}).get('model')})" if cr.get("params", {}).get("model") else ""
        )
        rows.append(
            {
                "system": f"{label} — job {job.pk}",
                "turns": len(pairs),
                "bleu": corpus_bleu([p for p, _ in pairs], [r for _, r in pairs]),
                "job": job.pk,
                "paper": paper.get("T5-CR"),
            }
        )
    return rows
