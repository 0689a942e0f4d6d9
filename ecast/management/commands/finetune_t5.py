"""Fine-tune a t5 backend on JSONL (input, target) pairs: CANARD-style for CQR/CR, QQP duplicates for paraphrase."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from ecast.pipeline.finetune import TrainingDataError, finetune, read_pairs


class Command(BaseCommand):
    help = "Fine-tune a seq2seq model (T5-CQR, T5-Para or T5-CR) on JSONL pairs; uses CUDA when torch sees it."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--train", required=True, type=Path, help="JSONL with one {input, target} object per line")
        parser.add_argument("--base", required=True, help="local model folder or hub id (must be cached when offline)")
        parser.add_argument("--revision", default=None)
        parser.add_argument("--output", required=True, type=Path)
        parser.add_argument("--epochs", type=int, default=1)
        parser.add_argument("--max-steps", type=int, default=None)
        parser.add_argument("--batch-size", type=int, default=8)
        parser.add_argument("--learning-rate", type=float, default=3e-4)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--prefix", default="", help='task prefix added to every input, e.g. "paraphrase: "')
        parser.add_argument("--input-key", default="input")
        parser.add_argument("--target-key", default="target")

    def handle(self, *args: Any, **opts: Any) -> None:
        if not opts["train"].is_file():
            raise CommandError(f"{opts['train']}: no such file")
        try:
            pairs = read_pairs(opts["train"], input_key=opts["input_key"], target_key=opts["target_key"])
        except TrainingDataError as exc:
            raise CommandError(str(exc)) from exc
        try:
            summary = finetune(
                base=opts["base"],
                pairs=pairs,
                output=opts["output"],
                epochs=opts["epochs"],
                max_steps=opts["max_steps"],
                batch_size=opts["batch_size"],
                learning_rate=opts["learning_rate"],
                seed=opts["seed"],
                prefix=opts["prefix"],
                revision=opts["revision"],
                log=self.stdout.write,
            )
        except OSError as exc:
            raise CommandError(f"cannot load base model {opts['base']!r}: {exc}") from exc
        self.stdout.write(
            self.style.SUCCESS(
                f"Trained {summary['steps']} steps on {summary['pairs']} pairs ({summary['device']}); "
                f"loss {summary['losses'][0]:.4f} → {summary['losses'][-1]:.4f}; saved to {opts['output']}"
            )
        )
