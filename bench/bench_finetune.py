"""Benchmark: LoRA fine-tuning of the shipped SmolLM2 on curated ECAsT pairs (CAsT 2019 eval + 2020), the adapter the
generation bench then uses (``bench/bench_generation.py --adapter``).

Training pairs: m_i (the CAsT 2019 resolved TSV / the 2020 manual topics) → p^m (the ECAsT release's manual
paraphrases of that turn), for the paraphrase stage; ``--stage cr`` trains p^m → p^r on turns ≥ 2. CAsT 2021
conversations are never used, so the generation bench's 50 CAsT 2021 turns stay unseen. ``--pairs`` pairs are drawn
(seeded) from whole conversations; ``lora.train`` holds out 15 % of the conversations and measures their loss before
training and after each epoch.

Prints: pairs, optimiser steps, held-out loss before → after, wall and CPU seconds (and CPU seconds per step) with
the load average; writes the adapter (weights + configuration + metrics) to ``--out`` for the generation bench.
Asserts nothing about time.

Usage: python bench/bench_finetune.py [--pairs 256] [--epochs 1] [--stage paraphrase] [--out /tmp/ecast-adapter]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import resource
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
SHARED = Path(os.environ.get("ECAST_SHARED_DATA", REPO.parent / "shared" / "data"))

from bench.common import cpu_model, load_average  # noqa: E402
from ecast.pipeline import lora  # noqa: E402


def manual_rewrites() -> dict[str, str]:
    """CAsT 2019 eval and 2020 turn id → manual rewrite m_i."""
    out: dict[str, str] = {}
    with (SHARED / "cast/2019/evaluation_topics_annotated_resolved_v1.0.tsv").open(encoding="utf-8") as f:
        for line in f:
            tid, _, text = line.rstrip("\r\n").partition("\t")
            if tid and text:
                out[tid] = text
    for topic in json.loads((SHARED / "cast/2020/2020_manual_evaluation_topics_v1.0.json").read_text()):
        for turn in topic["turn"]:
            out[f"{topic['number']}_{turn['number']}"] = turn["manual_rewritten_utterance"]
    return out


def examples(stage: str) -> list[lora.Example]:
    """Every usable ECAsT pair of the CAsT 2019 eval and 2020 turns for ``stage``."""
    rewrites = manual_rewrites()
    out = []
    with (SHARED / "ecast/ECAsT.csv").open(encoding="utf-8") as f:
        for row in csv.DictReader(f):
            tid, manual, raw = row["TURN_ID"], row["MANUAL PARAPHRASE"].strip(), row["RAW PARAPHRASE"].strip()
            if tid not in rewrites:
                continue
            topic, number = tid.split("_")
            if stage == "paraphrase" and manual and manual != rewrites[tid]:
                out.append(lora.Example(source=rewrites[tid], target=manual, group=topic))
            elif stage == "cr" and int(number) >= 2 and manual and raw and manual != raw:
                out.append(lora.Example(source=manual, target=raw, group=topic))
    return out


def sample(pool: list[lora.Example], n: int, seed: int) -> list[lora.Example]:
    """About ``n`` pairs from whole conversations (seeded), so held-out conversations stay whole."""
    groups = sorted({e.group for e in pool})
    random.Random(seed).shuffle(groups)
    chosen: list[lora.Example] = []
    for g in groups:
        if len(chosen) >= n:
            break
        chosen.extend(e for e in pool if e.group == g)
    return chosen[: max(n, 1)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=256)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--learning-rate", type=float, default=1e-3)
    ap.add_argument("--stage", choices=lora.STAGES, default="paraphrase")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=Path("/tmp/ecast-adapter"))
    args = ap.parse_args()
    pool = examples(args.stage)
    chosen = sample(pool, args.pairs, args.seed)
    params = lora.TrainParams(
        epochs=args.epochs, batch_size=args.batch_size, learning_rate=args.learning_rate, seed=args.seed
    )
    print(f"# bench_finetune — {cpu_model()}; {load_average()}")
    print(
        f"{len(pool)} ECAsT pairs for {args.stage} (CAsT 2019 eval + 2020); "
        f"{len(chosen)} drawn from whole conversations"
    )
    base = lora.base_model("smollm")
    w0, c0 = time.perf_counter(), time.process_time()
    steps: list[int] = []
    trained = lora.train(base, args.stage, chosen, params, progress=lambda d, t, m: steps.append(d))
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    m = trained.metrics
    n_steps = max(steps) if steps else 0
    losses = " → ".join(f"{v:.4f}" for v in m["heldout_loss"])
    print(
        f"train pairs {m['train_pairs']}, held-out pairs {m['heldout_pairs']} "
        f"({len(m['heldout_conversations'])} conversations)"
    )
    print(f"held-out loss {losses}; training loss per epoch {', '.join(f'{v:.4f}' for v in m['train_loss'])}")
    print(
        f"{n_steps} optimiser steps: {wall:.1f} s wall, {cpu:.1f} s CPU ({cpu / max(n_steps, 1):.1f} s CPU a step, "
        f"held-out loss included); peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB; "
        f"{load_average()}"
    )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "adapter.safetensors").write_bytes(trained.weights)
    (args.out / "adapter.json").write_text(
        json.dumps({"stage": args.stage, "config": trained.config, "metrics": m, "sha256": trained.sha256}, indent=1)
    )
    print(f"adapter written to {args.out} (sha256 {trained.sha256[:12]}…)")


def stored_from(folder: Path, adapter_id: int = 1) -> lora.StoredAdapter:
    """The adapter this bench wrote, as the generation backend loads it (``--adapter`` of the generation bench)."""
    meta = json.loads((folder / "adapter.json").read_text())
    return lora.StoredAdapter(
        adapter_id=adapter_id,
        base_model="smollm",
        weights=(folder / "adapter.safetensors").read_bytes(),
        config=meta["config"],
        sha256=meta["sha256"],
        label=f"SmolLM2 + ECAsT 2019/2020 adapter ({meta['stage']})",
    )


if __name__ == "__main__":
    main()
