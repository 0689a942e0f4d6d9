"""The per-turn generation pipeline (ECAsT Fig. 1 and 3): preprocess → CQR → paraphrase (from r_i and m_i)
→ clean → rank → context removal (depth ≥ 2; first turns keep full context). Pure data in, pure data out.

Chat backends (smollm, openai) are prompted with few-shot pairs retrieved per source from the curated pairs the
caller passes (``examples``; never of the turn's own conversation), else a fixed set
(:mod:`ecast.pipeline.fewshot`). They over-generate; after the drops the paraphrases are ranked by the documented
score and context removal takes them best first: one whose context removal fails gives its place to the next best,
until ``clean.keep`` pairs passed every stage; the rest are dropped as "ranked out". m_i is paraphrased without
the reaction that opens it ("What? No.", "Cool name!") when what is left asks on its own
(:func:`standalone_question`).

Every stage drops what it should not pass on and counts it by reason (:mod:`ecast.pipeline.clean`):

- CQR (turns with history): r_i is not paraphrased when it is empty, ungrammatical, identical to u_i (it
  resolved nothing; m_i is paraphrased instead, so this applies only when the turn has a manual rewrite), lost
  more than half of u_i's content words (a rewrite adds referents, it keeps the question), or, with a floor,
  less similar to m_i than the floor.
- Paraphrase: empty, identical to a source, ungrammatical, failing a meaning rule of
  :mod:`ecast.pipeline.filters` (prompt echo, a statement where the source asks, a polarity flip, lost or swapped
  entities, additions), a near duplicate, below the floor to its source, or ranked out.
- Context removal (depth ≥ 2; the conversation is the earlier raw turns, their manual rewrites and the previous
  canonical response, which a user refers to as readily as to their own words): the pair is dropped when p^r is
  empty, ungrammatical, identical to p^m although the turn depends on its context (u_i ≠ m_i), the same raw turn
  as a pair already kept (near duplicate), lost a content word of p^m that the conversation never said
  (only words it said may give way to a pronoun), or, with a floor, less similar to p^m than the floor *in the
  conversation*: both are read after the first and the previous raw turn, so a pronoun that stands for the
  topic is not mistaken for lost meaning ("What are its symptoms?" vs "What are the symptoms of throat cancer?"
  has cosine 0.48 alone, 0.98 in context).
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ecast.pipeline import backends, clean, cqr, fewshot, filters, grammar, preprocess, sampling

DEFAULT_CONFIG: dict[str, Any] = {
    "cqr": {"backend": "best", "params": {}},
    "paraphrase": {
        "backend": "smollm",
        # Over-generate (the ranking keeps the best clean.keep); a temperature below 1 keeps closer to the meaning.
        "params": {"num_return_sequences": 8, "top_k": 50, "top_p": 0.95, "temperature": 0.7},
        "sources": ["r", "m"],
    },
    "cr": {"backend": "anaphora", "params": {}},
    # keep: the best k paraphrases of a turn survive the ranking (None keeps every one that passed the checks);
    # meaning_checks: the rules of ecast.pipeline.filters (off only to measure without them, or for random models).
    # meaning_floor: a paraphrase's MiniLM cosine to m_i must reach it (ecast.pipeline.fewshot.rank).
    "clean": {"min_similarity": 0.6, "keep": 4, "meaning_checks": True, "meaning_floor": 0.75},
}
# Parameters a caller adds when it runs a job (the endpoint's key, limits, reply cache): never stored with the job,
# never in provenance.
RUNTIME_PARAMS = frozenset({"api_key", "timeout", "retries", "concurrency", "backoff", "reply_cache"})
STAGE_LABELS = {"cqr": "CQR", "paraphrase": "Paraphrase", "cr": "Context removal"}


@dataclass
class TurnInput:
    """What the pipeline needs of one turn: its text, manual rewrite, position and earlier raw turns (and,
    when known, the earlier turns' manual rewrites and canonical responses, aligned with ``history``, and the
    turn's own imported automatic rewrite)."""

    turn_id: str
    number: int
    raw: str
    manual: str
    history: list[str] = field(default_factory=list)
    history_manual: list[str] = field(default_factory=list)
    history_responses: list[str] = field(default_factory=list)
    automatic_rewrite: str = ""
    conversation: str = ""  # its topic id: few-shot examples never come from it ("" → the turn id before "_")

    @property
    def topic(self) -> str:
        return self.conversation or self.turn_id.rsplit("_", 1)[0]


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
    params = {k: v for k, v in (spec.get("params") or {}).items() if k not in RUNTIME_PARAMS}
    backend = spec.get("backend") or DEFAULT_CONFIG[stage]["backend"]
    out = {
        "backend": backend,
        "model": params.get("model", ""),
        "revision": params.get("revision", ""),
        "params": params,
    }
    if backend in backends.CHAT_BACKENDS:
        out["prompt_template"] = backends.prompt_template(stage)
    if params.get("base_url"):
        out["base_url"] = params["base_url"]
    return out


def min_similarity(config: dict[str, Any]) -> float | None:
    """The configured similarity floor; a config without a ``clean`` section gets the default one."""
    spec = config.get("clean")
    if spec is None:
        spec = DEFAULT_CONFIG["clean"]
    floor = spec.get("min_similarity")
    return None if floor is None or floor == "" else float(floor)


def keep_count(config: dict[str, Any]) -> int | None:
    """How many paraphrases of a turn the ranking keeps; None keeps all (a config without ``keep``)."""
    spec = config.get("clean")
    if spec is None:
        spec = DEFAULT_CONFIG["clean"]
    keep = spec.get("keep")
    return None if keep is None or keep == "" else int(keep)


def meaning_floor(config: dict[str, Any]) -> float | None:
    """The floor a paraphrase's cosine to m_i must reach; None (a config whose clean section lacks it) for none."""
    spec = config.get("clean")
    if spec is None:
        spec = DEFAULT_CONFIG["clean"]
    floor = spec.get("meaning_floor")
    return None if floor is None or floor == "" else float(floor)


def meaning_checks(config: dict[str, Any]) -> bool:
    """Whether the paraphrase stage runs the meaning rules (on unless the config turns them off)."""
    spec = config.get("clean")
    return True if spec is None else bool(spec.get("meaning_checks", True))


def drop_counts(dropped: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Dropped outputs counted per stage and reason: {"paraphrase": {"ungrammatical": 2, ...}, ...}."""
    counts: dict[str, dict[str, int]] = {}
    for d in dropped:
        stage = counts.setdefault(d["stage"], {})
        stage[d["reason"]] = stage.get(d["reason"], 0) + 1
    return counts


def _drop(stage: str, text: str, reason: str, source: str, rules: list[str] | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"stage": stage, "text": text, "reason": reason, "source": source}
    if rules:
        entry["rules"] = rules
    return entry


def run_turn(
    turn: TurnInput,
    config: dict[str, Any],
    *,
    seed: int,
    similarity: Callable[[list[str], list[str]], list[float]] | None = None,
    examples: Sequence[fewshot.Example] | None = None,
) -> dict[str, Any]:
    """Generate cleaned manual/raw paraphrase pairs for one turn; returns outputs plus what each stage dropped
    and why (module docstring). ``examples``: curated pairs the chat backends' prompts draw their shots from."""
    return run_turns([turn], config, seed=seed, similarity=similarity, examples=examples)[0]


def run_turns(
    turns: Sequence[TurnInput],
    config: dict[str, Any],
    *,
    seed: int,
    similarity: Callable[[list[str], list[str]], list[float]] | None = None,
    examples: Sequence[fewshot.Example] | None = None,
) -> list[dict[str, Any]]:
    """:func:`run_turn` for several turns, with their paraphrases sampled in one batch when the backend seeds each
    prompt on its own (``batches_turns``; the shipped chat model): a turn's outputs are then the ones it gets
    alone, and the batch reads the model's weights once per decoding step for every turn.

    A turn that keeps no pair although most of its samples only copied their source ("How fast can the unmodified
    base Lotus Elise/Exige go?" eight times) is sampled once more, hotter (:data:`RESAMPLE_TEMPERATURE`) and with
    seeds of its own, and finished again over both rounds' samples (``resampled`` says so)."""
    states = [_prepare(t, config, seed=seed, similarity=similarity, examples=examples) for t in turns]
    para_backend, para_params, _ = _stage(config, "paraphrase")
    generated = _sample(states, para_backend, para_params, seed_of=lambda st: st["seed"])
    results = [
        _finish(t, {**st, "dropped": list(st["dropped"])}, outs, config, similarity=similarity)
        for t, st, outs in zip(turns, states, generated, strict=True)
    ]
    again = [i for i, r in enumerate(results) if _copied_out(r) and states[i]["sources"]]
    if again and getattr(para_backend, "samples", False):
        hotter = {**para_params, "temperature": max(RESAMPLE_TEMPERATURE, float(para_params.get("temperature", 1.0)))}
        more = _sample([states[i] for i in again], para_backend, hotter, seed_of=lambda st: st["seed"] + RESAMPLE_SEED)
        for i, extra in zip(again, more, strict=True):
            both = [a + b for a, b in zip(generated[i], extra, strict=True)]
            st = {**states[i], "dropped": list(states[i]["dropped"])}
            results[i] = {**_finish(turns[i], st, both, config, similarity=similarity), "resampled": True}
    return results


# A second, hotter round for a turn whose samples copied their source (run_turns); its seeds differ from the first.
RESAMPLE_TEMPERATURE = 1.0
RESAMPLE_SEED = 7_919


def _copied_out(result: dict[str, Any]) -> bool:
    """The turn kept nothing and at least half of its samples were copies of a source."""
    if result["outputs"] or not result["generated"]:
        return False
    copies = sum(
        1
        for d in result["dropped"]
        if d["stage"] == "paraphrase" and d["reason"] in (clean.IDENTICAL, clean.NEAR_DUPLICATE)
    )
    return 2 * copies >= result["generated"]


def _sample(
    states: list[dict[str, Any]], backend: Any, params: dict[str, Any], *, seed_of: Callable[[dict[str, Any]], int]
) -> list[list[list[str]]]:
    """Each state's samples per source: in one batch when the backend seeds each prompt on its own."""
    if getattr(backend, "batches_turns", False) and len(states) > 1:
        texts = [text for st in states for _, text in st["sources"]]
        shots = [sh for st in states for sh in st["shots"]]
        seeds = [x for st in states for x in sampling.prompt_seeds(seed_of(st), len(st["sources"]))]
        runtime = {"seed": seed_of(states[0]), "seeds": seeds, **({"shots": shots} if shots else {})}
        flat = backend.paraphrase(texts, {**params, **runtime}) if texts else []
        generated, at = [], 0
        for st in states:
            generated.append(flat[at : at + len(st["sources"])])
            at += len(st["sources"])
        return generated
    generated = []
    for st in states:
        runtime = {
            "seed": seed_of(st),
            "seeds": sampling.prompt_seeds(seed_of(st), len(st["sources"])),
            **({"shots": st["shots"]} if st["shots"] else {}),
        }
        texts = [t for _, t in st["sources"]]
        generated.append(backend.paraphrase(texts, {**params, **runtime}) if texts else [])
    return generated


_POINTS_BACK = re.compile(r"\b(?:it|its|they|them|their|this|that|these|those)\b", re.I)


def standalone_question(text: str) -> str:
    """m_i without the feedback that opens it ("What? No.", "Cool name!", "Really?"), when what is left asks on its
    own: it has a content word and nothing pointing back ("How are they related?" after "Permaculture sounds like
    organic farming" keeps the whole). The model is then asked to reword the question, not the reaction."""
    pre = preprocess.preprocess(text)
    question = pre.final_question
    if not pre.feedback or pre.other or pre.revealment or not question or question == text.strip():
        return text
    if _POINTS_BACK.search(question) or not filters.content_stems(question):
        return text
    return question


def _prepare(
    turn: TurnInput,
    config: dict[str, Any],
    *,
    seed: int,
    similarity: Callable[[list[str], list[str]], list[float]] | None,
    examples: Sequence[fewshot.Example] | None,
) -> dict[str, Any]:
    """Preprocess and CQR one turn and choose its paraphrase sources and shots (everything before sampling)."""
    pre = preprocess.preprocess(turn.raw)
    question = pre.final_question or turn.raw
    history = [preprocess.preprocess(h).final_question or h for h in turn.history]
    s = turn_seed(seed, turn.turn_id)
    floor = min_similarity(config) if similarity is not None else None
    dropped: list[dict[str, Any]] = []
    norm = clean.normalise

    # --- CQR
    cqr_backend, cqr_params, _ = _stage(config, "cqr")
    turn_params = {"responses": [list(turn.history_responses)], "automatic_rewrites": [turn.automatic_rewrite]}
    rewrite = (
        question if not history else cqr_backend.cqr([history], [question], {**cqr_params, "seed": s, **turn_params})[0]
    )
    rewrite = clean.strip_control(rewrite)
    rewrite_usable = True
    if history:
        problems = grammar.problems(rewrite) if norm(rewrite) else []
        reason = ""
        if not norm(rewrite):
            reason = clean.EMPTY
        elif norm(rewrite) == norm(question) and turn.manual:
            reason = clean.IDENTICAL
        elif problems:
            reason = clean.UNGRAMMATICAL
        elif 2 * len(filters.lost_words(rewrite, question)) > len(filters.content_stems(question)):
            reason = clean.LOST_WORDS  # "Why are so many dying?" → "Why do bees not spoil?"
        elif floor is not None and turn.manual and similarity is not None:
            if similarity([rewrite], [turn.manual])[0] < floor:
                reason = clean.BELOW_FLOOR
        if reason:
            dropped.append(_drop("cqr", rewrite, reason, question, problems))
            rewrite_usable = False
    rewrite = rewrite or question

    # --- paraphrase sources and their shots
    wanted = (config.get("paraphrase") or {}).get("sources") or ["r", "m"]
    sources: list[tuple[str, str]] = []
    for key in wanted:
        text = (rewrite if rewrite_usable else "") if key == "r" else standalone_question(turn.manual or "")
        if text and text not in [t for _, t in sources]:
            sources.append((key, text))
    shots: list[list[tuple[str, str]]] = []
    if backends.uses_shots(config):
        shots = [fewshot.select(t, examples or (), conversation=turn.topic) for _, t in sources]
    return {
        "pre": pre,
        "question": question,
        "history": history,
        "seed": s,
        "floor": floor,
        "dropped": dropped,
        "rewrite": rewrite,
        "sources": sources,
        "shots": shots,
    }


def _finish(
    turn: TurnInput,
    state: dict[str, Any],
    generated: list[list[str]],
    config: dict[str, Any],
    *,
    similarity: Callable[[list[str], list[str]], list[float]] | None,
) -> dict[str, Any]:
    """Clean, rank and context-remove one turn's sampled paraphrases (everything after sampling)."""
    pre, question, history, s = state["pre"], state["question"], state["history"], state["seed"]
    floor, dropped, rewrite = state["floor"], state["dropped"], state["rewrite"]
    sources, shots = state["sources"], state["shots"]
    origin: dict[str, tuple[str, str]] = {}
    candidates: list[str] = []
    for (key, text), outs in zip(sources, generated, strict=True):
        for out in outs:
            out = clean.restore_case(clean.strip_control(out), [text, turn.manual])
            candidates.append(out)
            origin.setdefault(out, (key, text))
    context = " ".join([*turn.history, *turn.history_manual])
    shots_of = {text: sh for (_, text), sh in zip(sources, shots, strict=False)}
    cleaned = clean.clean(
        candidates,
        sources=[t for _, t in sources] + [question],
        similarity=similarity if floor is not None else None,
        min_similarity=floor,
        check=(
            lambda text: filters.first_failure(
                text, origin.get(text, ("", question))[1], context, shots_of.get(origin.get(text, ("", ""))[1], ())
            )
        )
        if meaning_checks(config)
        else None,
    )
    ordered, below, _ = fewshot.best_first(
        cleaned.kept,
        [origin[t][1] for t in cleaned.kept],
        reference=turn.manual,
        similarity=similarity,
        floor=meaning_floor(config) if floor is not None else None,
    )
    cleaned.dropped += [(t, clean.BELOW_FLOOR) for t in below]
    keep = keep_count(config)
    context_removed = turn.number >= 2
    cr_outputs: list[str] = []
    cr_of_manual = None
    chosen: dict[str, str] = {}  # p^m → p^r, the best k whose context removal passed
    if context_removed:
        # Best first, a batch at a time: a paraphrase whose context removal fails gives its place to the next
        # best, so a turn keeps k pairs when k of its paraphrases survive every stage.
        pending = list(ordered)
        first = True
        while first or (pending and (keep is None or len(chosen) < keep)):
            batch = pending if keep is None else pending[: keep - len(chosen)]
            pending = pending[len(batch) :]
            outs, manual_out, cr_drops = _context_removal(
                turn, batch, history, config, seed=s, floor=floor, similarity=similarity, with_manual=first
            )
            if first:
                cr_of_manual = manual_out
            first = False
            cr_outputs += outs
            dropped.extend(cr_drops)
            failed = {d["source"] for d in cr_drops}
            for manual, raw in zip(batch, outs, strict=True):
                if manual in failed:
                    continue
                if any(clean.near_duplicate(raw, other) for other in chosen.values()):
                    # two pairs that ask the same raw turn give a curator one pair to read twice
                    dropped.append(_drop("cr", raw, clean.NEAR_DUPLICATE, manual))
                    continue
                chosen[manual] = raw
        ranked_out = pending
    else:  # first turns carry full context: p^r = p^m
        chosen = {m: m for m in (ordered if keep is None else ordered[: max(keep, 0)])}
        ranked_out = [t for t in ordered if t not in chosen]
    cleaned.dropped += [(t, clean.RANKED_OUT) for t in ranked_out]
    for text, reason in cleaned.dropped:
        dropped.append(_drop("paraphrase", text, reason, origin.get(text, ("", ""))[1], cleaned.rules.get(text)))
    outputs = []
    for manual in cleaned.kept:  # in generation order
        if manual in chosen:
            key, source_text = origin[manual]
            outputs.append({"manual": manual, "raw": chosen[manual], "source": key, "source_text": source_text})
    return {
        "seed": s,
        "preprocess": pre.as_dict(),
        "question": question,
        "rewrite": rewrite,
        "rewrite_from": cqr.source(config, turn.automatic_rewrite, question) if history else "",
        "sources": [{"source": k, "text": t} for k, t in sources],
        "generated": len(candidates),
        "shots": shots,
        "outputs": outputs,
        "dropped": dropped,
        "drops": drop_counts(dropped),
        "cr_outputs": cr_outputs,
        "rejected_by_similarity": cleaned.rejected_by_similarity,
        "context_removed": context_removed,
        "cr_of_manual": cr_of_manual,
    }


def _context_removal(
    turn: TurnInput,
    texts: list[str],
    history: list[str],
    config: dict[str, Any],
    *,
    seed: int,
    floor: float | None,
    similarity: Callable[[list[str], list[str]], list[float]] | None,
    with_manual: bool,
) -> tuple[list[str], str | None, list[dict[str, Any]]]:
    """p^r for each p^m of ``texts`` (and, ``with_manual``, for m_i itself: ECAsT Table 9 scores it against the
    real raw turn u_i), and the drops of the ones that fail (module docstring), each with its p^m as source."""
    cr_backend, cr_params, _ = _stage(config, "cr")
    norm = clean.normalise
    inputs = list(texts) + ([turn.manual] if with_manual and turn.manual else [])
    if not inputs:
        return [], None, []
    params = {
        **cr_params,
        "seed": seed,
        "manual_history": list(turn.history_manual),
        "responses": list(turn.history_responses),
    }
    outs = [clean.strip_control(o) for o in cr_backend.cr(inputs, [history] * len(inputs), params)]
    manual_out = None
    if with_manual and turn.manual:
        manual_out, outs = outs[-1] or turn.manual, outs[:-1]
    needs_context = bool(turn.manual) and norm(turn.manual) != norm(turn.raw)
    said = " ".join([*history, *turn.history_manual, *[r for r in turn.history_responses[-1:] if r]])
    context = " ".join(dict.fromkeys([history[0], history[-1]])) if history else ""
    scores: list[float] = []
    if floor is not None and similarity is not None and outs:
        scores = similarity([f"{context} {o}" for o in outs], [f"{context} {m}" for m in texts])
    drops = []
    for i, (manual, raw) in enumerate(zip(texts, outs, strict=True)):
        problems = grammar.problems(raw) if norm(raw) else []
        reason = ""
        if not norm(raw):
            reason = clean.EMPTY
        elif problems:
            reason = clean.UNGRAMMATICAL
        elif norm(raw) == norm(manual) and needs_context:
            reason = clean.IDENTICAL
        elif filters.lost_words(raw, manual, said):
            reason = clean.LOST_WORDS
        elif scores and floor is not None and scores[i] < floor:
            reason = clean.BELOW_FLOOR
        if reason:
            drops.append(_drop("cr", raw, reason, manual, problems))
    return outs, manual_out, drops
