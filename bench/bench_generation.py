"""Benchmark of paraphrase generation with the defaults a new user gets.

1. The default pipeline (``ecast.pipeline.run.DEFAULT_CONFIG``: rule CQR → SmolLM2 paraphrases from r_i and m_i,
   5 samples each → MiniLM similarity floor 0.6 → anaphora context removal) on the first N real CAsT 2020
   turns (default 50; the bench reads ../shared/data): the share of raw outputs p^r that fail the grammar check
   (``ecast.pipeline.grammar``; goal 0 %), before and after the stage drops, pairs kept per turn, seconds per
   turn, what each stage dropped and why, and 20 consecutive real outputs (turn id, u_i, m_i, p^m, p^r).
2. With ``--batching``: batched vs one-at-a-time generation, same backend and inputs, measured in the same run
   (SmolLM2 greedy context removal of 20 CAsT 2020 manual rewrites, and a tiny random T5).

Prints figures; asserts nothing about time.
Usage: python bench/bench_generation.py [--turns 50] [--examples 20] [--start 0] [--batching]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
SHARED = Path(os.environ.get("ECAST_SHARED_DATA", REPO.parent / "shared" / "data"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from ecast.pipeline import backends, grammar, hf  # noqa: E402
from ecast.pipeline.run import DEFAULT_CONFIG, TurnInput, run_turn  # noqa: E402
from ecast.pipeline.similarity import cosine  # noqa: E402
from ecast.pipeline.tiny import make_tiny_t5  # noqa: E402


def cast2020_turns(n: int) -> list[TurnInput]:
    """The first n turns of CAsT 2020 (manual topics), in conversation order, with raw and manual histories."""
    topics = json.loads((SHARED / "cast/2020/2020_manual_evaluation_topics_v1.0.json").read_text())
    out: list[TurnInput] = []
    for topic in topics:
        history: list[str] = []
        manual: list[str] = []
        for turn in topic["turn"]:
            out.append(
                TurnInput(
                    f"{topic['number']}_{turn['number']}",
                    turn["number"],
                    turn["raw_utterance"],
                    turn.get("manual_rewritten_utterance", ""),
                    list(history),
                    list(manual),
                )
            )
            history.append(turn["raw_utterance"])
            manual.append(turn.get("manual_rewritten_utterance", ""))
            if len(out) == n:
                return out
    return out


def batched_vs_single(label: str, backend: Any, texts: list[str], params: dict) -> None:
    backend.cr(texts[:2], [[]] * 2, {**params, "batch_size": 2})  # load and warm up
    t0 = time.perf_counter()
    single = [backend.cr([t], [[]], {**params, "batch_size": 1})[0] for t in texts]
    t_single = time.perf_counter() - t0
    t0 = time.perf_counter()
    batched = backend.cr(texts, [[]] * len(texts), {**params, "batch_size": len(texts)})
    t_batched = time.perf_counter() - t0
    same = sum(a == b for a, b in zip(single, batched, strict=True))
    print(
        f"[{label}] {len(texts)} inputs: one-at-a-time {t_single:.2f} s ({len(texts) / t_single:.2f}/s), "
        f"batched {t_batched:.2f} s ({len(texts) / t_batched:.2f}/s); ratio batched/one-at-a-time throughput "
        f"= {t_single / t_batched:.2f}x; identical outputs {same}/{len(texts)}"
    )


def batching(turns: list[TurnInput]) -> None:
    manual = [t.manual for t in turns[:20]]
    with tempfile.TemporaryDirectory() as tmp:
        tiny = make_tiny_t5(Path(tmp) / "tiny")
        batched_vs_single("tiny T5", backends.get("cr", "t5"), manual, {"model": str(tiny), "max_new_tokens": 24})
    batched_vs_single("SmolLM2", backends.get("cr", "smollm"), manual, {"max_new_tokens": 24})


def _pct(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.1f} %" if whole else "n/a"


def default_pipeline(turns: list[TurnInput], *, examples: int, start: int) -> None:
    config = json.loads(json.dumps(DEFAULT_CONFIG))
    print(f"[default pipeline] {json.dumps(config)}")
    print(f"  {len(turns)} CAsT 2020 turns ({turns[0].turn_id} … {turns[-1].turn_id}), seed 0")
    seconds, kept = [], []
    drops: dict[str, dict[str, int]] = {}
    raw_total = raw_bad = kept_bad = para_total = para_bad = 0
    rows: list[tuple[TurnInput, dict[str, str]]] = []
    for turn in turns:
        t0 = time.perf_counter()
        result = run_turn(turn, config, seed=0, similarity=cosine)
        seconds.append(time.perf_counter() - t0)
        kept.append(len(result["outputs"]))
        for stage, reasons in result["drops"].items():
            for reason, n in reasons.items():
                drops.setdefault(stage, {})[reason] = drops.setdefault(stage, {}).get(reason, 0) + n
        # Raw outputs: what context removal wrote (depth ≥ 2) or the first-turn copies, before any stage drop.
        raws = result["cr_outputs"] if result["context_removed"] else [o["raw"] for o in result["outputs"]]
        raw_total += len(raws)
        raw_bad += sum(1 for r in raws if r and not grammar.is_grammatical(r))
        kept_bad += sum(1 for o in result["outputs"] if not grammar.is_grammatical(o["raw"]))
        para_total += result["generated"]
        para_bad += result["drops"].get("paraphrase", {}).get("ungrammatical", 0)
        rows.extend((turn, out) for out in result["outputs"])
        print(f"  {turn.turn_id}: {kept[-1]} pairs kept, {seconds[-1]:.1f} s", flush=True)
    n = len(turns)
    print(f"\n  raw outputs p^r failing the grammar check, before the stage drops: {raw_bad}/{raw_total} = "
          f"{_pct(raw_bad, raw_total)} (goal 0 %)")  # fmt: skip
    kept_total = sum(kept)
    print(f"  kept raw outputs failing the check: {kept_bad}/{kept_total} = {_pct(kept_bad, kept_total)}")
    print(f"  SmolLM2 paraphrases dropped as ungrammatical: {para_bad}/{para_total} = {_pct(para_bad, para_total)}")
    print(f"  pairs kept per turn: {kept_total / n:.2f} (min {min(kept)}, max {max(kept)}; {kept_total} pairs, "
          f"{sum(1 for k in kept if k == 0)} turns with none)")  # fmt: skip
    ordered = sorted(seconds)
    print(f"  seconds per turn: mean {sum(seconds) / n:.2f}, median {ordered[n // 2]:.2f}, max {max(seconds):.2f} "
          f"(model loading excluded; torch threads {os.environ.get('ECAST_TORCH_THREADS') or 'default'})")  # fmt: skip
    print("  dropped, per stage and reason:")
    for stage in ("cqr", "paraphrase", "cr"):
        for reason, count in sorted((drops.get(stage) or {}).items()):
            print(f"    {stage:<10} {reason:<24} {count}")
    print(f"\n  {examples} consecutive outputs (from output {start}):")
    for turn, out in rows[start : start + examples]:
        print(f"  - {turn.turn_id} u: {turn.raw!r}\n    m: {turn.manual!r}")
        print(f"    p^m ({out['source']}): {out['manual']!r}\n    p^r: {out['raw']!r}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--examples", type=int, default=20)
    parser.add_argument("--start", type=int, default=0, help="first output shown among the examples")
    parser.add_argument("--batching", action="store_true", help="also compare batched and one-at-a-time")
    args = parser.parse_args()
    import torch

    threads = os.environ.get("ECAST_TORCH_THREADS")
    print(f"torch {torch.__version__}, device {hf.device()}, threads {threads or torch.get_num_threads()}")
    turns = cast2020_turns(args.turns)
    t0 = time.perf_counter()
    hf.load_smollm()
    cosine(["warm up"], ["warm up"])
    print(f"SmolLM2-135M (GGUF dequantised by transformers) and MiniLM load: {time.perf_counter() - t0:.1f} s")
    if args.batching:
        batching(turns)
    default_pipeline(turns, examples=args.examples, start=args.start)


if __name__ == "__main__":
    main()
