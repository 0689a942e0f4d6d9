"""Benchmark of the default generation pipeline's speed: seconds per turn (wall and CPU) on CAsT 2021 turns.

The baseline, measured in the same run on the same turns and seed, generates every reply to ``max_new_tokens``
(the stop at the end of a reply's first line, ``ecast.pipeline.hf.FirstLineDone``, switched off); "after" is the
shipped pipeline. Both keep the same outputs (checked: same kept pairs per turn). The models load once per process
(``ecast.pipeline.hf``'s cache) before either is timed; the load time is printed apart.
Turns: the first N turns of the CAsT 2021 manual topics (../shared/data/cast/2021), with raw and manual histories.

Prints figures, CPU time and the load average (a shared machine's wall time says little alone); asserts nothing.
Usage: python bench/bench_generation_speed.py [--turns 6] [--threads N]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
SHARED = Path(os.environ.get("ECAST_SHARED_DATA", REPO.parent / "shared" / "data"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from bench.common import load_average, row  # noqa: E402
from ecast.pipeline import hf  # noqa: E402
from ecast.pipeline.run import DEFAULT_CONFIG, TurnInput, run_turn  # noqa: E402
from ecast.pipeline.similarity import cosine  # noqa: E402

TOPICS = "cast/2021/2021_manual_evaluation_topics_v1.0.json"


def cast2021_turns(n: int) -> list[TurnInput]:
    out: list[TurnInput] = []
    for topic in json.loads((SHARED / TOPICS).read_text()):
        history: list[str] = []
        manual: list[str] = []
        for turn in topic["turn"]:
            rewrite = turn.get("manual_rewritten_utterance", "")
            tid = f"{topic['number']}_{turn['number']}"
            out.append(TurnInput(tid, turn["number"], turn["raw_utterance"], rewrite, list(history), list(manual)))
            history.append(turn["raw_utterance"])
            manual.append(rewrite)
            if len(out) == n:
                return out
    return out


def timed(turns: list[TurnInput]) -> tuple[list[float], list[float], list[Any]]:
    """Wall and CPU seconds of each turn, and its outputs."""
    config = json.loads(json.dumps(DEFAULT_CONFIG))
    walls, cpus, outs = [], [], []
    for turn in turns:
        began, cpu = time.perf_counter(), time.process_time()
        result = run_turn(turn, config, seed=0, similarity=cosine)
        walls.append(time.perf_counter() - began)
        cpus.append(time.process_time() - cpu)
        outs.append(result["outputs"])
    return walls, cpus, outs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=6)
    ap.add_argument("--threads", type=int, default=0)
    args = ap.parse_args()
    if args.threads:
        os.environ["ECAST_TORCH_THREADS"] = str(args.threads)
    torch = hf.torch_module()
    turns = cast2021_turns(args.turns)
    began = time.perf_counter()
    hf.load_smollm()
    cosine(["warm up"], ["warm up"])
    print(f"SmolLM2-135M and MiniLM loaded in {time.perf_counter() - began:.1f} s (once per process); {load_average()}")
    print(f"{len(turns)} CAsT 2021 turns ({turns[0].turn_id} … {turns[-1].turn_id}), torch threads "
          f"{torch.get_num_threads()}")  # fmt: skip
    stop = hf.FirstLineDone.__call__
    hf.FirstLineDone.__call__ = lambda self, ids, scores, **kw: torch.zeros(len(ids), dtype=torch.bool)  # type: ignore[method-assign]
    base_wall, base_cpu, base_out = timed(turns)
    print(f"  to max_new_tokens: {sum(base_wall) / len(turns):.2f} s/turn wall, {sum(base_cpu) / len(turns):.2f} "
          f"CPU s/turn; {load_average()}")  # fmt: skip
    hf.FirstLineDone.__call__ = stop  # type: ignore[method-assign]
    wall, cpu, out = timed(turns)
    print(f"  first line only:   {sum(wall) / len(turns):.2f} s/turn wall, {sum(cpu) / len(turns):.2f} "
          f"CPU s/turn; {load_average()}")  # fmt: skip
    same = sum(a == b for a, b in zip(out, base_out, strict=True))
    print(
        f"  same outputs: {same}/{len(turns)} turns; per turn (wall s): "
        + ", ".join(f"{t.turn_id} {b:.1f}→{a:.1f}" for t, b, a in zip(turns, base_wall, wall, strict=True))
    )
    row(
        "default generation pipeline, SmolLM2-135M, s/turn",
        f"{sum(wall) / len(turns):.2f} s/turn ({sum(cpu) / len(turns):.2f} CPU s)",
        f"{sum(base_wall) / len(turns):.2f} s/turn ({sum(base_cpu) / len(turns):.2f} CPU s) generating to the cap",
        f"×{sum(base_wall) / sum(wall):.2f} wall, ×{sum(base_cpu) / sum(cpu):.2f} CPU",
        "≤ 5 s/turn on 2 idle cores",
    )


if __name__ == "__main__":
    main()
