"""The per-turn generation pipeline (ECAsT Fig. 1 and 3): preprocess → CQR → paraphrase (from r_i and m_i)
→ clean → context removal (depth ≥ 2; first turns keep full context). Pure data in, pure data out."""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any

from ecast.pipeline import backends, clean, preprocess

DEFAULT_CONFIG: dict[str, Any] = {
    "cqr": {"backend": "rule", "params": {}},
    "paraphrase": {
        "backend": "smollm",
        "params": {"num_return_sequences": 5, "top_k": 50, "top_p": 0.95},
        "sources": ["r", "m"],
    },
    "cr": {"backend": "rule", "params": {}},
    "clean": {"min_similarity": None},
}


@dataclass
class TurnInput:
    """What the pipeline needs of one turn: its text, manual rewrite, position and earlier raw turns."""

    turn_id: str
    number: int
    raw: str
    manual: str
    history: list[str] = field(default_factory=list)


def turn_seed(seed: int, turn_id: str) -> int:
    """A per-turn seed derived from the job seed, so a turn's outputs do not depend on chunking or retries."""
    return (int(seed) * 1_000_003 + zlib.crc32(turn_id.encode())) % (2**31 - 1)


def _stage(config: dict[str, Any], stage: str) -> tuple[Any, dict[str, Any], str]:
    spec = config.get(stage) or {}
    name = spec.get("backend") or DEFAULT_CONFIG[stage]["backend"]
    return backends.get(stage, name), dict(spec.get("params") or {}), name


def provenance_base(config: dict[str, Any], stage: str) -> dict[str, Any]:
    """Backend, model id/path, revision and parameters of one stage, for every output row's provenance."""
    spec = config.get(stage) or {}
    params = dict(spec.get("params") or {})
    return {
        "backend": spec.get("backend") or DEFAULT_CONFIG[stage]["backend"],
        "model": params.get("model", ""),
        "revision": params.get("revision", ""),
        "params": params,
    }


def run_turn(turn: TurnInput, config: dict[str, Any], *, seed: int, similarity: Any = None) -> dict[str, Any]:
    """Generate cleaned manual/raw paraphrase pairs for one turn; returns outputs plus what was dropped and why."""
    pre = preprocess.preprocess(turn.raw)
    question = pre.final_question or turn.raw
    history = [preprocess.preprocess(h).final_question or h for h in turn.history]
    s = turn_seed(seed, turn.turn_id)

    cqr_backend, cqr_params, _ = _stage(config, "cqr")
    rewrite = question if not history else cqr_backend.cqr([history], [question], {**cqr_params, "seed": s})[0]
    rewrite = clean.strip_control(rewrite) or question

    para_backend, para_params, _ = _stage(config, "paraphrase")
    wanted = (config.get("paraphrase") or {}).get("sources") or ["r", "m"]
    sources: list[tuple[str, str]] = []
    for key in wanted:
        text = rewrite if key == "r" else (turn.manual or "")
        if text and text not in [t for _, t in sources]:
            sources.append((key, text))
    generated = para_backend.paraphrase([t for _, t in sources], {**para_params, "seed": s}) if sources else []

    origin: dict[str, tuple[str, str]] = {}
    candidates: list[str] = []
    for (key, text), outs in zip(sources, generated, strict=True):
        for out in outs:
            candidates.append(out)
            origin.setdefault(clean.strip_control(out), (key, text))
    floor = (config.get("clean") or {}).get("min_similarity")
    cleaned = clean.clean(
        candidates,
        sources=[t for _, t in sources] + [question],
        similarity=similarity if floor is not None else None,
        min_similarity=float(floor) if floor is not None else None,
    )

    cr_backend, cr_params, _ = _stage(config, "cr")
    cr_of_manual = None
    if turn.number >= 2 and (cleaned.kept or turn.manual):
        # CR of m_i itself is batched in: it is what ECAsT Table 9 scores against the real raw turn u_i.
        inputs = list(cleaned.kept) + ([turn.manual] if turn.manual else [])
        raws = cr_backend.cr(inputs, [history] * len(inputs), {**cr_params, "seed": s})
        if turn.manual:
            cr_of_manual, raws = clean.strip_control(raws[-1]) or turn.manual, raws[:-1]
        raws = [clean.strip_control(r) or m for r, m in zip(raws, cleaned.kept, strict=True)]  # never empty
    else:
        raws = list(cleaned.kept)  # first turns carry full context: p^r = p^m
    outputs = []
    for manual, raw in zip(cleaned.kept, raws, strict=True):
        key, source_text = origin[manual]
        outputs.append({"manual": manual, "raw": raw, "source": key, "source_text": source_text})
    return {
        "seed": s,
        "preprocess": pre.as_dict(),
        "question": question,
        "rewrite": rewrite,
        "sources": [{"source": k, "text": t} for k, t in sources],
        "generated": len(candidates),
        "outputs": outputs,
        "dropped": [{"text": t, "reason": r} for t, r in cleaned.dropped],
        "rejected_by_similarity": cleaned.rejected_by_similarity,
        "context_removed": turn.number >= 2,
        "cr_of_manual": cr_of_manual,
    }
