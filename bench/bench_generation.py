"""Benchmark of paraphrase generation.

1. Batched vs one-at-a-time generation, same backend and inputs, measured in the same run: the offline
   SmolLM2 backend (greedy context removal of 20 CAsT 2020 manual rewrites) and a tiny random T5. Outputs of
   both modes are compared too (greedy decoding: batching should not change them).
2. The offline default pipeline (rule CQR → SmolLM2 paraphrases from r_i and m_i, 5 samples each, MiniLM
   similarity floor 0.6 → rule CR) on 20 CAsT 2020 turns: paraphrases kept per turn after cleaning, share
   rejected by the similarity filter, corpus BLEU of kept paraphrases to their source (lower = more diverse),
   seconds per turn.

Prints figures and ratios; asserts nothing about time. Usage: python bench/bench_generation.py [--turns 20]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
SHARED = Path(os.environ.get("ECAST_SHARED_DATA", REPO.parent / "shared" / "data"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from ecast.pipeline import backends, hf  # noqa: E402
from ecast.pipeline.bleu import corpus_bleu  # noqa: E402
from ecast.pipeline.run import TurnInput, run_turn  # noqa: E402
from ecast.pipeline.similarity import cosine  # noqa: E402
from ecast.pipeline.tiny import make_tiny_t5  # noqa: E402


def cast2020_turns(n: int) -> list[TurnInput]:
    """The first n turns of CAsT 2020 (manual topics), in conversation order, with their raw histories."""
    topics = json.loads((SHARED / "cast/2020/2020_manual_evaluation_topics_v1.0.json").read_text())
    out: list[TurnInput] = []
    for topic in topics:
        history: list[str] = []
        for turn in topic["turn"]:
            out.append(
                TurnInput(
                    f"{topic['number']}_{turn['number']}",
                    turn["number"],
                    turn["raw_utterance"],
                    turn.get("manual_rewritten_utterance", ""),
                    list(history),
                )
            )
            history.append(turn["raw_utterance"])
            if len(out) == n:
                return out
    return out


def batched_vs_single(label: str, backend: object, texts: list[str], params: dict) -> None:
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=20)
    args = parser.parse_args()
    threads = os.environ.get("ECAST_TORCH_THREADS")
    import torch

    print(f"torch {torch.__version__}, device {hf.device()}, threads {threads or torch.get_num_threads()}")
    turns = cast2020_turns(args.turns)
    manual = [t.manual for t in turns]

    with tempfile.TemporaryDirectory() as tmp:
        tiny = make_tiny_t5(Path(tmp) / "tiny")
        batched_vs_single("tiny T5", backends.get("cr", "t5"), manual, {"model": str(tiny), "max_new_tokens": 24})

    t0 = time.perf_counter()
    hf.load_smollm()
    print(f"SmolLM2-135M load (GGUF dequantised by transformers): {time.perf_counter() - t0:.1f} s")
    batched_vs_single("SmolLM2", backends.get("cr", "smollm"), manual, {"max_new_tokens": 24})

    cosine(["warm up"], ["warm up"])
    config = {
        "cqr": {"backend": "rule"},
        "paraphrase": {
            "backend": "smollm",
            "params": {"num_return_sequences": 5, "top_k": 50, "top_p": 0.95, "max_new_tokens": 32},
            "sources": ["r", "m"],
        },
        "cr": {"backend": "rule"},
        "clean": {"min_similarity": 0.6},
    }
    kept, generated, rejected_sim, seconds = [], 0, 0, []
    hyps, refs = [], []
    for turn in turns:
        t0 = time.perf_counter()
        result = run_turn(turn, config, seed=0, similarity=cosine)
        seconds.append(time.perf_counter() - t0)
        kept.append(len(result["outputs"]))
        generated += result["generated"]
        rejected_sim += result["rejected_by_similarity"]
        for out in result["outputs"]:
            hyps.append(out["manual"])
            refs.append(out["source_text"])
    print(
        f"[offline default: rule CQR, SmolLM2 (2 sources x 5), MiniLM floor 0.6, rule CR] {len(turns)} CAsT 2020 turns"
    )
    print(
        f"  generated {generated}, kept {sum(kept)}: {sum(kept) / len(turns):.2f} paraphrases kept per turn "
        f"(min {min(kept)}, max {max(kept)})"
    )
    print(f"  rejected by the similarity filter: {rejected_sim} = {100.0 * rejected_sim / max(generated, 1):.1f}%")
    bleu = corpus_bleu(hyps, refs)
    print(
        f"  corpus BLEU of kept paraphrases to their source: {bleu:.2f}"
        if bleu is not None
        else "  no paraphrases kept"
    )
    print(f"  seconds per turn: mean {sum(seconds) / len(seconds):.2f}, max {max(seconds):.2f}")
    for out in result["outputs"][:3]:
        print(f"  example ({turns[-1].turn_id}): {out['source_text']!r} -> {out['manual']!r} -> raw {out['raw']!r}")


if __name__ == "__main__":
    main()
