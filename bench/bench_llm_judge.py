"""Benchmark of the LLM relevance judge (judging.llm.judge): pairs per second by batch size.

The baseline, measured in the same run on the same pairs, is the plain loop that labels one pair at a time
(batch size 1); each batched run is reported as a ratio to it, and its labels are checked equal to the loop's.
Pairs: the first N crowd-annotated CAsT 2020 passages with text (../shared/data/crowd/, as the agreement tests read
them), with their turns' utterances, rewrites and histories. Model: the shipped SmolLM2-135M-Instruct by default,
or --model (a transformers folder or .gguf file), or --tiny (a random 2-layer model, no weights needed).

Prints figures; asserts nothing about time.
Usage: python bench/bench_llm_judge.py [--pairs 48] [--batches 4,8,16] [--model smollm|PATH] [--tiny]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
SHARED = Path(os.environ.get("ECAST_SHARED_DATA", REPO.parent / "shared" / "data"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from ecast.pipeline import hf  # noqa: E402
from ecast.pipeline.tiny import make_tiny_causal  # noqa: E402
from judging.llm import judge  # noqa: E402
from tests.judging.llm.crowd_helpers import cast2020_turns, crowd_pairs  # noqa: E402


def pairs(n: int) -> list[judge.Pair]:
    turns = cast2020_turns(SHARED)
    out = []
    for p in crowd_pairs(SHARED)[:n]:
        raw, rewrite, history = turns[p.turn_id]
        out.append(judge.Pair(p.turn_id, p.passage_id, raw, p.text, rewrite=rewrite, history=history))
    return out


def timed(model: str, items: list[judge.Pair], batch: int) -> tuple[float, list[judge.Label]]:
    j = judge.Judge(judge.ModelSpec(model=model, params={"batch_size": batch}))
    j.label(items[:batch])  # warm-up: first-call allocations are not the steady rate
    began = time.perf_counter()
    labels = j.label(items)
    return time.perf_counter() - began, labels


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=48)
    ap.add_argument("--batches", default="4,8,16")
    ap.add_argument("--model", default=judge.DEFAULT_MODEL)
    ap.add_argument("--tiny", action="store_true")
    args = ap.parse_args()
    model = args.model
    if args.tiny:
        model = str(make_tiny_causal(Path(tempfile.mkdtemp(prefix="tiny-causal-")), seed=0))
    items = pairs(args.pairs)
    torch = hf.torch_module()
    began = time.perf_counter()
    judge.Judge(judge.ModelSpec(model=model))
    print(f"model {judge.ModelSpec(model=model).model_id()}: loaded in {time.perf_counter() - began:.1f} s")
    print(f"{len(items)} crowd CAsT 2020 pairs, device {hf.device()}, torch threads {torch.get_num_threads()}")
    base_s, base = timed(model, items, 1)
    base_rate = len(items) / base_s
    print(f"{'batch':>6} {'seconds':>8} {'pairs/s':>8} {'vs loop':>8} {'same labels':>12}")
    print(f"{'1 loop':>6} {base_s:8.2f} {base_rate:8.2f} {1.0:8.2f} {'(baseline)':>12}")
    for size in (int(b) for b in args.batches.split(",")):
        secs, labels = timed(model, items, size)
        same = sum(a.grade == b.grade for a, b in zip(labels, base, strict=True))
        print(f"{size:>6} {secs:8.2f} {len(items) / secs:8.2f} {base_s / secs:8.2f} {same:>8}/{len(items)}")
    grades = [lb.grade for lb in base]
    print("grades given by the loop:", {g: grades.count(g) for g in judge.GRADES})


if __name__ == "__main__":
    main()
