"""Benchmark of the LLM relevance judge (judging.llm.judge): pairs per second and CPU seconds per pair.

The baseline, measured in the same run on the same pairs and batch size, is the whole-prompt computation
(``Judge(..., reuse_prefix=False)``: every prompt run whole, full logits, pairs in the order given); "after" is the
default one, which computes the shared prompt prefix's key/value cache once, extends it by what a batch's prompts of
one turn share, batches by length and computes only the last position's logits (judging.llm.scoring). The labels of
both are compared: same grades, and the largest difference of a grade probability.
Pairs: the first N crowd-annotated CAsT 2020 passages with text (../shared/data/crowd/, as the agreement tests read
them), with their turns' utterances, rewrites and histories; in that file order, a turn's pairs are together, as a
job's are. Model: the shipped SmolLM2-135M-Instruct by default, or --model (a transformers folder or .gguf file),
or --tiny (a random 2-layer model, no weights needed). --threads sets torch's intra-op threads (default: torch's).

``--responses N``: instead, response labelling (nugget assignment) through
``judging.llm.response_labellers.LocalLabeller.classify`` (the shared-prefix cache: a batch's prompts of one answer
share the instructions, the question and the answer) against the same prompts run whole through
``Judge.digit_probabilities``, batch by batch: one TREC RAG 2024 answer (../shared/data/rag/, the first row of the
topic with the most nuggets, cut as the app cuts it) × N nuggets (the topic's own, then other topics' in file
order), warmed up on another answer's prompts. Same comparison of labels and probabilities.

Prints figures, CPU time and the load average (a shared machine's wall time says little alone); asserts nothing.
Usage: python bench/bench_llm_judge.py [--pairs 24] [--batches 8] [--model smollm|PATH] [--tiny] [--threads N]
       [--responses 32]
"""

from __future__ import annotations

import argparse
import gzip
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
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from bench.common import load_average, row  # noqa: E402
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


def timed(model: str, items: list[judge.Pair], batch: int, *, reuse: bool) -> tuple[float, float, list[judge.Label]]:
    """(wall seconds, CPU seconds of this process, labels) of labelling ``items`` after a one-batch warm-up (the
    first call's allocations, and the cached prefix's one-off computation, are not the steady rate)."""
    j = judge.Judge(judge.ModelSpec(model=model, params={"batch_size": batch}), reuse_prefix=reuse)
    j.label(items[:batch])
    began, cpu = time.perf_counter(), time.process_time()
    labels = j.label(items)
    return time.perf_counter() - began, time.process_time() - cpu, labels


def nugget_chats(labeller, n: int) -> tuple[list[list[dict[str, str]]], list[list[dict[str, str]]]]:
    """(the measured chats: one answer × ``n`` nuggets, the warm-up chats: another answer × its topic's nuggets)."""
    from judging.llm import response_prompts as rp

    path = SHARED / "rag" / "trec_rag_2024" / "nugget_assignment.20241108.jl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh]
    top = max(rows, key=lambda r: len(r["nuggets"]))
    nuggets = [x["text"] for x in top["nuggets"]]
    for r in rows:
        for x in r["nuggets"]:
            if len(nuggets) < n and x["text"] not in nuggets:
                nuggets.append(x["text"])
    other = next(r for r in rows if r["qid"] != top["qid"])

    def chats(r: dict, texts: list[str]) -> list[list[dict[str, str]]]:
        answer = labeller.cut(r["answer_text"], "max_answer_tokens")
        return [rp.assign_messages(question=rp.question_text(r["query"]), answer=answer, nugget=t) for t in texts]

    return chats(top, nuggets[:n]), chats(other, [x["text"] for x in other["nuggets"]])


def responses(model: str, n: int, sizes: list[int]) -> None:
    from judging.llm import response_labellers as rl
    from judging.llm import response_prompts as rp

    for size in sizes:
        labeller = rl.LocalLabeller(judge.ModelSpec(model=model), {"batch_size": size})
        measured, warm = nugget_chats(labeller, n)
        labeller.classify(warm[:size], rp.ASSIGN)
        prompts = [
            labeller.tok.apply_chat_template(c, tokenize=False, add_generation_prompt=True) + rp.ANSWER_PREFIX
            for c in measured
        ]
        lengths = [len(labeller.tok.encode(p, add_special_tokens=False)) for p in prompts]
        labeller.judge.digit_probabilities(prompts[:size])
        began, cpu = time.perf_counter(), time.process_time()
        whole: list[list[float]] = []
        for start in range(0, len(prompts), size):
            whole.extend(labeller.judge.digit_probabilities(prompts[start : start + size]))
        base_s, base_cpu = time.perf_counter() - began, time.process_time() - cpu
        base_load = load_average()
        began, cpu = time.perf_counter(), time.process_time()
        labelled = labeller.classify(measured, rp.ASSIGN)
        secs, cpu_s = time.perf_counter() - began, time.process_time() - cpu
        assert [x.prompt for x in labelled] == prompts
        same = sum(x.label == rp.label_probabilities(p, rp.ASSIGN)[0] for x, p in zip(labelled, whole, strict=True))
        diff = max(
            abs(a - b)
            for x, p in zip(labelled, whole, strict=True)
            for a, b in zip(x.probabilities, rp.label_probabilities(p, rp.ASSIGN)[1], strict=True)
        )
        print(
            f"{n} nugget labels of one answer, prompts {min(lengths)}–{max(lengths)} tokens, batch {size}, "
            f"torch threads {hf.torch_module().get_num_threads()}"
        )
        print(
            f"  whole prompts: {base_s:6.1f} s wall, {base_cpu:6.2f} CPU s ({base_cpu / n:.3f} CPU s/label) {base_load}"
        )
        print(f"  cached prefix: {secs:6.1f} s wall, {cpu_s:6.2f} CPU s ({cpu_s / n:.3f} CPU s/label) {load_average()}")
        print(f"  CPU ratio cached/whole {cpu_s / base_cpu:.2f}; same labels {same}/{n}; max |Δp| {diff:.1e}")
        row(
            f"LLM response labels, {judge.ModelSpec(model=model).model_id()}, one answer × {n} nuggets, batch {size}",
            f"{n / secs:.2f} labels/s ({cpu_s:.2f} CPU s)",
            f"{n / base_s:.2f} labels/s ({base_cpu:.2f} CPU s) whole prompts",
            f"×{base_s / secs:.2f} wall",
            "–",
            cpu=f"{cpu_s / base_cpu:.2f}x",
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=24)
    ap.add_argument("--batches", default="8")
    ap.add_argument("--model", default=judge.DEFAULT_MODEL)
    ap.add_argument("--tiny", action="store_true")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--responses", type=int, default=0, help="time N nugget labels of one answer instead of pairs")
    args = ap.parse_args()
    if args.threads:
        os.environ["ECAST_TORCH_THREADS"] = str(args.threads)
    model = args.model
    if args.tiny:
        model = str(make_tiny_causal(Path(tempfile.mkdtemp(prefix="tiny-causal-")), seed=0))
    if args.responses:
        responses(model, args.responses, [int(b) for b in args.batches.split(",")])
        return
    items = pairs(args.pairs)
    torch = hf.torch_module()
    began = time.perf_counter()
    judge.Judge(judge.ModelSpec(model=model))
    print(f"model {judge.ModelSpec(model=model).model_id()}: loaded in {time.perf_counter() - began:.1f} s")
    print(f"{len(items)} crowd CAsT 2020 pairs, device {hf.device()}, torch threads {torch.get_num_threads()}")
    print(
        f"{'batch':>5} {'computation':>12} {'wall s':>7} {'pairs/s':>8} {'CPU s/pair':>10} {'speed-up':>8} "
        f"{'same grades':>11} {'max |Δp|':>9}  load"
    )
    for size in (int(b) for b in args.batches.split(",")):
        base_s, base_cpu, base = timed(model, items, size, reuse=False)
        print(
            f"{size:>5} {'whole prompt':>12} {base_s:7.1f} {len(items) / base_s:8.3f} {base_cpu / len(items):10.2f} "
            f"{1.0:8.2f} {'(baseline)':>11} {'':>9}  {load_average()}"
        )
        secs, cpu, labels = timed(model, items, size, reuse=True)
        same = sum(a.grade == b.grade for a, b in zip(labels, base, strict=True))
        diff = max(
            abs(p - q)
            for a, b in zip(labels, base, strict=True)
            for p, q in zip(a.probabilities, b.probabilities, strict=True)
        )
        print(
            f"{size:>5} {'cached pref.':>12} {secs:7.1f} {len(items) / secs:8.3f} {cpu / len(items):10.2f} "
            f"{base_s / secs:8.2f} {f'{same}/{len(items)}':>11} {diff:9.1e}  {load_average()}"
        )
        row(
            f"LLM pre-judgments, {judge.ModelSpec(model=model).model_id()}, batch {size}",
            f"{len(items) / secs:.2f} pairs/s ({cpu / len(items):.2f} CPU s/pair)",
            f"{len(items) / base_s:.2f} pairs/s ({base_cpu / len(items):.2f} CPU s/pair) whole prompts",
            f"×{base_s / secs:.2f} wall, ×{base_cpu / cpu:.2f} CPU",
            "≥ 1 pair/s on 2 idle cores",
        )
    grades = [lb.grade for lb in base]
    print("grades given (whole prompts):", {g: grades.count(g) for g in judge.GRADES})


if __name__ == "__main__":
    main()
