"""Rating items from paraphrases: what raters see, the paraphrase source, stratified sampling, gold specs.

Used by ``judging.rating.services`` to build campaigns; reads only, no writes.
"""

from __future__ import annotations

import random
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from django.core.exceptions import ValidationError

from ecast.models import Collection, Paraphrase, Participant, Passage, Turn
from ecast.selectors import path_entry, turn_history
from judging.models import MEASURES, Campaign, RatingItem

SCALE_MIN, SCALE_MAX = 1, 5


def paraphrase_source(provenance: dict | None) -> str:
    """Which source turn a generated paraphrase came from: "r" (automatic reformulation r_i), "m" (manual m_i).

    The generation pipeline records ``provenance["source"]`` = "r" | "m" on manual members (raw members carry
    ``paraphrase_source``); a few other spellings are accepted. Imported ECAsT paraphrases carry none and are
    "unknown" (one stratum per year).
    """
    prov = provenance or {}
    for key in ("source", "paraphrase_source", "source_kind", "source_turn", "input", "source_type"):
        value = prov.get(key)
        if isinstance(value, dict):
            value = value.get("kind") or value.get("name")
        if not isinstance(value, str):
            continue
        v = value.strip().lower()
        if v in {"r", "r_i", "automatic", "automatic_rewrite", "reformulated", "reformulation", "cqr", "auto"}:
            return "r"
        if v in {"m", "m_i", "manual", "manual_rewrite", "resolved"}:
            return "m"
    return "unknown"


def _passage_for(turn: Turn) -> tuple[str, str]:
    """The passage shown for passage relevance: canonical response, or the replacement when it is unreliable."""
    if turn.canonical_response_unreliable and turn.replacement_response_id:
        text = Passage.objects.filter(passage_id=turn.replacement_response_id).values_list("text", flat=True).first()
        if text:
            return turn.replacement_response_id, text
    if turn.canonical_response_text:
        return turn.canonical_response_id, turn.canonical_response_text
    if turn.canonical_response_id:
        text = Passage.objects.filter(passage_id=turn.canonical_response_id).values_list("text", flat=True).first()
        return turn.canonical_response_id, text or ""
    # A User turn of a conversation tree (CAsT 2022) has no response of its own: the System turn that answers it is
    # its c_i (a written answer, no passage id); of alternative System turns, the first that answers rather than
    # asks back.
    answer = (
        turn.children.filter(participant=Participant.SYSTEM, mixed_initiative="")
        .order_by("number")
        .values_list("canonical_response_text", flat=True)
        .first()
    )
    return "", answer or ""


def _paraphrase_context(p: Paraphrase) -> dict[str, Any]:
    turn = p.turn
    # The conversation so far is the path to the turn: in a tree (CAsT 2022) its User and System ancestors only.
    history = [path_entry(h) for h in turn_history(turn=turn)]
    pair = p.pair.text if p.pair_id and p.pair else ""
    context = {
        "turn_id": turn.turn_id,
        "collection": turn.collection.name,
        "year": turn.collection.year,
        "conversation": turn.conversation.title,
        "history": history,
        "raw_utterance": turn.raw_utterance,
        "manual_rewrite": turn.manual_rewrite,
        "paraphrase_manual": p.text,
        "paraphrase_raw": pair if pair else (p.text if turn.number == 1 else ""),
    }
    # iKAT conversations carry the user's PTKB: part of what a rater reads the question against, so it is in the
    # item's snapshot too ({number, text, cited}); CAsT items have none and no key.
    # ``.all()`` reads the rows ``paraphrase_pool`` prefetched (one query per campaign, not one per item).
    cited = set(turn.ptkb_provenance or [])
    statements = sorted(turn.conversation.ptkb.all(), key=lambda s: s.number)
    if statements:
        context["ptkb"] = [{"number": s.number, "text": s.text, "cited": s.number in cited} for s in statements]
    return context


def item_from_paraphrase(campaign: Campaign, p: Paraphrase, *, position: int, gold: dict | None = None) -> RatingItem:
    passage_id, passage_text = _passage_for(p.turn)
    source = paraphrase_source(p.provenance)
    return RatingItem(
        campaign=campaign,
        paraphrase=p,
        turn=p.turn,
        turn_key=p.turn.turn_id,
        context=_paraphrase_context(p),
        passage_id=passage_id,
        passage_text=passage_text,
        stratum=f"{p.turn.collection.year}/{source}",
        source=source,
        is_gold=gold is not None,
        gold_expected=gold or {},
        position=position,
    )


def pool_statuses(*, include_candidates: bool = False) -> list[str]:
    """Statuses a campaign samples from: approved only, unless the admin asks for candidates too."""
    statuses = [Paraphrase.Status.APPROVED]
    if include_candidates:
        statuses.append(Paraphrase.Status.CANDIDATE)
    return [str(s) for s in statuses]


def paraphrase_pool(*, collections: Iterable[Collection], include_candidates: bool = False) -> list[Paraphrase]:
    """Paraphrases eligible for rating: current, manual kind (each carries its raw pair), approved by a curator;
    generated candidates nobody has checked only with ``include_candidates``. Rejected ones never."""
    return list(
        Paraphrase.objects.filter(
            turn__collection__in=list(collections),
            kind=Paraphrase.Kind.MANUAL,
            is_current=True,
            status__in=pool_statuses(include_candidates=include_candidates),
        )
        .select_related("turn", "turn__collection", "turn__conversation", "pair")
        .prefetch_related("turn__conversation__ptkb")
        .order_by("pk")
    )


def stratified_sample(pool: Sequence[Paraphrase], *, size: int, seed: int) -> tuple[list[Paraphrase], dict[str, int]]:
    """Equal allocation over strata (year × source; ECAsT "sampled equally"); a short stratum's share goes elsewhere."""
    strata: dict[str, list[Paraphrase]] = defaultdict(list)
    for p in pool:
        strata[f"{p.turn.collection.year}/{paraphrase_source(p.provenance)}"].append(p)
    rng = random.Random(seed)
    quota = {k: 0 for k in strata}
    remaining = min(size, len(pool))
    open_strata = sorted(strata)
    while remaining > 0 and open_strata:
        share, extra = divmod(remaining, len(open_strata))
        for i, key in enumerate(open_strata):
            quota[key] += min(share + (1 if i < extra else 0), len(strata[key]) - quota[key])
        remaining = min(size, len(pool)) - sum(quota.values())
        open_strata = [k for k in open_strata if quota[k] < len(strata[k])]
    sample: list[Paraphrase] = []
    for key in sorted(strata):
        sample.extend(rng.sample(strata[key], quota[key]))
    return sample, {k: v for k, v in sorted(quota.items()) if v}


def measures_for(keys: Sequence[str]) -> list[dict]:
    """Full measure definitions for registry keys; unknown keys are a validation error."""
    unknown = [k for k in keys if k not in MEASURES]
    if unknown:
        raise ValidationError(f"unknown measure(s): {', '.join(unknown)}; known: {', '.join(MEASURES)}")
    if not keys:
        raise ValidationError("choose at least one measure")
    return [{"key": k, **MEASURES[k]} for k in keys]


GOLD_LINE = re.compile(r"^\s*(\d+)\s*:\s*(.+)$")


def parse_gold_spec(text: str, *, measure_keys: Sequence[str]) -> list[tuple[int, dict[str, int]]]:
    """Parse gold lines ``<paraphrase id>: measure=score, measure=score``; errors name the line."""
    out, errors = [], []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = GOLD_LINE.match(line)
        if not m:
            errors.append(f"gold line {n}: expected '<paraphrase id>: measure=score, ...'")
            continue
        expected: dict[str, int] = {}
        for part in m.group(2).split(","):
            key, _, value = part.partition("=")
            key = key.strip()
            if key not in measure_keys:
                errors.append(f"gold line {n}: measure {key!r} is not asked in this campaign")
            elif not value.strip().isdigit() or not SCALE_MIN <= int(value) <= SCALE_MAX:
                errors.append(f"gold line {n}: score for {key} must be {SCALE_MIN}..{SCALE_MAX}")
            else:
                expected[key] = int(value)
        out.append((int(m.group(1)), expected))
    if errors:
        raise ValidationError(errors)
    return out
