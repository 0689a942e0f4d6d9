"""Benchmark of paraphrase generation with the defaults a new user gets (issue 38).

1. The default pipeline (``ecast.pipeline.run.DEFAULT_CONFIG``: best CQR → SmolLM2 paraphrases of r_i and m_i,
   over-generated with few-shot examples retrieved from curated pairs → grammar and meaning checks → MiniLM floor →
   ranking, best k kept → anaphora context removal) on the first N CAsT 2021 turns (default 50; the bench reads
   ../shared/data). The few-shot pool is the ECAsT pairs of CAsT 2019 and 2020, so no conversation of the measured
   turns gives an example. Figures: the share of raw outputs p^r failing the grammar check (goal 0 %); the share of
   kept p^m whose MiniLM cosine to m_i is ≥ 0.75 (goal ≥ 90 %); diversity, corpus BLEU(p^m vs m_i) (goal ≤ 40;
   ECAsT Table 10's ParaAuto is 32.06); pairs kept per turn; seconds per turn (wall and CPU); what each stage
   dropped and why.
2. The baseline, measured in the same run on the first ``--baseline-turns`` of those turns: the previous defaults
   (5 samples per source, the fixed shots, no meaning checks, no ranking), and the ratios.
3. CQR BLEU vs m_i per CAsT year 2019–2021 (raw utterance, organisers' rewrite, rule, best; bench/bench_cqr.py).
4. ECAsT Table 9 (context-removal BLEU vs the raw turns, every turn) on CAsT 2020 and 2021 beside the paper.
5. ``--samples N`` consecutive real outputs (turn, u_i, m_i, r_i, p^m, p^r), printed, and written as JSON lines to
   ``--samples-file`` when given.

``--clean key=value`` changes the checks (``meaning_floor=0.85``); ``--backend`` / ``--adapter`` /
``--param key=value`` change the paraphrase stage (``--adapter FOLDER``: the LoRA
adapter ``bench/bench_finetune.py`` trained on CAsT 2019/2020 ECAsT pairs, through the ``adapter`` backend).
Prints figures; asserts nothing about time.
Usage: python bench/bench_generation.py [--turns 50] [--baseline-turns 10] [--samples 30 --samples-file out.jsonl]
       [--backend smollm] [--adapter PATH] [--param temperature=0.8] [--max-minutes 60] [--skip-tables]
``--max-minutes``: no turn starts after that time (a loaded machine); the figures say how many turns they cover.
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

from bench.bench_cqr import cqr_rows, print_cqr_rows  # noqa: E402
from bench.common import load_average, row  # noqa: E402
from ecast.pipeline import backends, cqr, grammar, hf  # noqa: E402
from ecast.pipeline.bleu import PAPER_TABLE9, PAPER_TABLE10_PARA_AUTO, corpus_bleu  # noqa: E402
from ecast.pipeline.fewshot import Example  # noqa: E402
from ecast.pipeline.rules import entity_removal  # noqa: E402
from ecast.pipeline.run import DEFAULT_CONFIG, TurnInput, run_turns  # noqa: E402
from ecast.pipeline.similarity import cosine  # noqa: E402
from tests.ecast.pipeline.cqr_helpers import cast_turns  # noqa: E402
from tests.ecast.pipeline.ecast_helpers import cast_topics, ecast_pairs  # noqa: E402

MEANING_FLOOR = 0.75


def turn_inputs(year: int, n: int) -> list[TurnInput]:
    """The first n turns of a CAsT year in conversation order, with histories, responses and organisers' rewrite."""
    out: list[TurnInput] = []
    for conv in cast_topics(SHARED, year):
        for i, t in enumerate(conv):
            before = conv[:i]
            out.append(
                TurnInput(
                    t.turn_id,
                    t.number,
                    t.raw,
                    t.manual,
                    [b.raw for b in before],
                    [b.manual for b in before],
                    [b.response for b in before],
                    t.automatic,
                    conversation=t.turn_id.split("_")[0],
                )
            )
            if len(out) == n:
                return out
    return out


def config_for(args: argparse.Namespace, year: int) -> dict[str, Any]:
    """The defaults, the best CQR chosen on the year's turns as a job does, and the paraphrase options asked for."""
    config = json.loads(json.dumps(DEFAULT_CONFIG))
    config["cqr"]["params"].update(cqr.choose(cast_turns(SHARED, year)))
    para = config["paraphrase"]
    if args.backend:
        para["backend"] = args.backend
    if args.adapter:
        # A folder bench/bench_finetune.py wrote: served to the adapter backend as stored adapter #1.
        from bench.bench_finetune import stored_from
        from ecast.pipeline import lora

        adapter = stored_from(Path(args.adapter))
        lora.register_source(lambda _id: adapter)
        para["backend"] = lora.BACKEND
        para["params"].update(adapter=adapter.adapter_id, adapter_sha256=adapter.sha256)
    for item in args.param:
        key, _, value = item.partition("=")
        para["params"][key] = json.loads(value) if value[:1] in "0123456789[{tfn-" else value
    for item in args.clean:
        key, _, value = item.partition("=")
        config["clean"][key] = json.loads(value)
    return config


def previous_defaults(config: dict[str, Any]) -> dict[str, Any]:
    """The defaults before issue 38: 5 samples at temperature 1, fixed shots (no pool is passed), no meaning checks,
    no floor to m_i, no ranking."""
    base = json.loads(json.dumps(config))
    base["paraphrase"]["params"]["num_return_sequences"] = 5
    base["paraphrase"]["params"].pop("temperature", None)
    base["clean"].update(keep=None, meaning_checks=False, meaning_floor=None)
    return base


def measure(
    turns: list[TurnInput],
    config: dict[str, Any],
    examples: list[Example],
    label: str,
    deadline: float,
    batch: int = 1,
) -> dict[str, Any]:
    """Run the turns in order, ``batch`` at a time (``run_turns``, as a worker runs a chunk), until they are done or
    the clock passes ``deadline`` (figures cover the turns done; a batch's time is shared evenly by its turns)."""
    seconds, cpu, kept = [], [], []
    drops: dict[str, dict[str, int]] = {}
    raw_total = raw_bad = 0
    rows: list[dict[str, str]] = []
    done = 0
    results: list[tuple[TurnInput, dict[str, Any]]] = []
    for at in range(0, len(turns), max(1, batch)):
        if time.perf_counter() > deadline:
            print(f"  [{label}] time budget spent: {done} of {len(turns)} turns measured", flush=True)
            break
        group = turns[at : at + max(1, batch)]
        done += len(group)
        t0, c0 = time.perf_counter(), time.process_time()
        outs = run_turns(group, config, seed=0, similarity=cosine, examples=examples)
        wall, spent = time.perf_counter() - t0, time.process_time() - c0
        for turn, result in zip(group, outs, strict=True):
            seconds.append(wall / len(group))
            cpu.append(spent / len(group))
            results.append((turn, result))
    for turn, result in results:
        kept.append(len(result["outputs"]))
        for stage, reasons in result["drops"].items():
            for reason, n in reasons.items():
                drops.setdefault(stage, {})[reason] = drops.setdefault(stage, {}).get(reason, 0) + n
        # Raw outputs: what context removal wrote (depth ≥ 2) or the first-turn copies, before any stage drop.
        raws = result["cr_outputs"] if result["context_removed"] else [o["raw"] for o in result["outputs"]]
        raw_total += len(raws)
        raw_bad += sum(1 for r in raws if r and not grammar.is_grammatical(r))
        for out in result["outputs"]:
            rows.append(
                {
                    "turn": turn.turn_id,
                    "u": turn.raw,
                    "m": turn.manual,
                    "r": result["rewrite"],
                    "p_m": out["manual"],
                    "p_r": out["raw"],
                    "source": out["source"],
                }
            )
        print(f"  [{label}] {turn.turn_id}: {kept[-1]} pairs kept", flush=True)
    with_manual = [r for r in rows if r["m"]]
    sims = cosine([r["p_m"] for r in with_manual], [r["m"] for r in with_manual]) if with_manual else []
    return {
        "turns": done,
        "first": turns[0].turn_id,
        "last": turns[done - 1].turn_id if done else "",
        "pairs": len(rows),
        "rows": rows,
        "raw_total": raw_total,
        "raw_bad": raw_bad,
        "kept_bad": sum(1 for r in rows if not grammar.is_grammatical(r["p_r"])),
        "meaning": sum(1 for s in sims if s >= MEANING_FLOOR),
        "meaning_of": len(sims),
        "bleu": corpus_bleu([r["p_m"] for r in with_manual], [r["m"] for r in with_manual]),
        "seconds": sum(seconds),
        "cpu": sum(cpu),
        "drops": drops,
    }


def speed(turns: list[TurnInput], config: dict[str, Any], examples: list[Example], batch: int) -> None:
    """Seconds per turn, wall and CPU, of the same turns: before (turn by turn, transformers' sampler) and after
    (``batch`` turns at a time, each prompt read once), with the load average of each."""
    before = json.loads(json.dumps(config))
    before["paraphrase"]["params"]["sampler"] = "transformers"
    figures = []
    for label, cfg, size in (("before", before, 1), ("after", config, batch)):
        load = load_average()
        m = measure(turns, cfg, examples, f"speed {label}", float("inf"), batch=size)
        n = max(m["turns"], 1)
        figures.append((label, m["seconds"] / n, m["cpu"] / n, m["pairs"] / n, load, load_average()))
    print(f"\n  speed on {len(turns)} turns ({turns[0].turn_id} … {turns[-1].turn_id}):")
    for label, wall, cpu, pairs, load0, load1 in figures:
        print(f"    {label:<7} {wall:.2f} s wall / {cpu:.2f} CPU s per turn, {pairs:.2f} pairs/turn; {load0} → {load1}")
    print(
        f"    CPU ratio after/before: {figures[1][2] / figures[0][2]:.2f}x; wall {figures[1][1] / figures[0][1]:.2f}x"
    )


def _pct(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.1f} %" if whole else "n/a"


def _ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}x" if a is not None and b else "n/a"


def report(new: dict[str, Any], base: dict[str, Any] | None) -> None:
    n = max(new["turns"], 1)
    b = base or {}
    bn = b.get("turns") or 1

    def base_pct(part: str, whole: str) -> str:
        return _pct(b[part], b[whole]) if base else "not measured"

    print(
        f"\n  figures on {new['turns']} turns ({new['first']} … {new['last']}); baseline: the previous defaults on "
        f"{b.get('turns', 0)} of them ({b.get('first', '')} … {b.get('last', '')})"
    )
    row(
        "raw outputs p^r failing the grammar check",
        f"{new['raw_bad']}/{new['raw_total']} = {_pct(new['raw_bad'], new['raw_total'])}",
        base_pct("raw_bad", "raw_total"),
        "",
        "0 %",
    )
    row(
        f"kept p^m with MiniLM cosine to m_i ≥ {MEANING_FLOOR}",
        f"{new['meaning']}/{new['meaning_of']} = {_pct(new['meaning'], new['meaning_of'])}",
        base_pct("meaning", "meaning_of"),
        "",
        "≥ 90 %",
    )
    bleu, bbleu = new["bleu"], b.get("bleu")
    row(
        "diversity: corpus BLEU(p^m vs m_i)",
        f"{bleu:.2f}" if bleu is not None else "n/a",
        f"{bbleu:.2f}" if bbleu is not None else "not measured",
        _ratio(bleu, bbleu),
        f"≤ 40 (ECAsT ParaAuto {PAPER_TABLE10_PARA_AUTO})",
    )
    row(
        "pairs kept per turn",
        f"{new['pairs'] / n:.2f}",
        f"{b['pairs'] / bn:.2f}" if base else "not measured",
        _ratio(new["pairs"] / n, b["pairs"] / bn if base else None),
        "—",
    )
    row(
        "seconds per turn (wall / CPU)",
        f"{new['seconds'] / n:.1f} / {new['cpu'] / n:.1f}",
        f"{b['seconds'] / bn:.1f} / {b['cpu'] / bn:.1f}" if base else "not measured",
        _ratio(new["seconds"] / n, b["seconds"] / bn if base else None),
        "—",
    )
    print(f"  kept p^r failing the check: {new['kept_bad']}/{new['pairs']}")
    print("  dropped, per stage and reason (new defaults):")
    for stage in ("cqr", "paraphrase", "cr"):
        for reason, count in sorted((new["drops"].get(stage) or {}).items(), key=lambda kv: -kv[1]):
            print(f"    {stage:<10} {reason:<26} {count}")


def table9() -> None:
    print(
        "\nECAsT Table 9: context-removal BLEU vs the raw turns u_i, every turn with m_i (turn 1: m_1 itself); the "
        "default reads the previous canonical response too, as the pipeline does"
    )
    anaphora = backends.get("cr", "anaphora")
    for year in (2020, 2021):
        manual, raws, cr = [], [], []
        for conv in cast_topics(SHARED, year):
            for i, t in enumerate(conv):
                if not t.manual:
                    continue
                before = conv[:i]
                out = t.manual
                if t.number >= 2:
                    params = {"manual_history": [b.manual for b in before], "responses": [b.response for b in before]}
                    out = anaphora.cr([t.manual], [[b.raw for b in before]], params)[0] or t.manual
                manual.append(t.manual)
                raws.append(t.raw)
                cr.append(out)
        paper = PAPER_TABLE9[year]
        figures = {
            "Original manual": (corpus_bleu(manual, raws), paper["Original manual"]),
            "Entity removal": (corpus_bleu([entity_removal(m) for m in manual], raws), paper["Entity removal"]),
            "CR anaphora (default)": (corpus_bleu(cr, raws), paper["T5-CR"]),
        }
        line = "; ".join(
            f"{k} {v or 0:.2f} (paper {p}{', T5-CR' if 'CR' in k else ''})" for k, (v, p) in figures.items()
        )
        print(f"  CAsT {year} ({len(raws)} turns): {line}")


def samples(rows: list[dict[str, str]], n: int, start: int, path: str) -> None:
    chosen = rows[start : start + n]
    print(f"\n{len(chosen)} consecutive outputs (from output {start}):")
    for r in chosen:
        print(f"  - {r['turn']} u: {r['u']!r}\n    m: {r['m']!r}\n    r: {r['r']!r}")
        print(f"    p^m ({r['source']}): {r['p_m']!r}\n    p^r: {r['p_r']!r}")
    if path:
        Path(path).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in chosen))
        print(f"  written to {path}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--year", type=int, default=2021)
    parser.add_argument("--baseline-turns", type=int, default=10, help="0: no baseline")
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--samples-file", default="")
    parser.add_argument("--start", type=int, default=0, help="first output shown among the samples")
    parser.add_argument("--backend", default="", help="paraphrase backend (default: the default config's)")
    parser.add_argument(
        "--adapter", default="", help="folder of an adapter bench/bench_finetune.py wrote (paraphrase stage)"
    )
    parser.add_argument("--param", action="append", default=[], help="paraphrase param key=value (repeatable)")
    parser.add_argument(
        "--clean", action="append", default=[], help="clean option key=value, e.g. meaning_floor=0.85 (repeatable)"
    )
    parser.add_argument("--max-minutes", type=float, default=float("inf"), help="stop starting turns after this")
    parser.add_argument("--batch-turns", type=int, default=4, help="turns sampled in one batch (as in a chunk)")
    parser.add_argument(
        "--speed-turns",
        type=int,
        default=0,
        help="first measure these turns turn by turn with transformers' sampler (each prompt copied per sample), "
        "then batched with the prompt read once: seconds per turn before and after, in the same run",
    )
    parser.add_argument("--skip-tables", action="store_true", help="leave out the CQR and Table 9 figures")
    args = parser.parse_args()
    import torch

    threads = os.environ.get("ECAST_TORCH_THREADS")
    print(f"torch {torch.__version__}, device {hf.device()}, threads {threads or torch.get_num_threads()}")
    print(load_average())
    turns = turn_inputs(args.year, args.turns)
    examples = [Example(p.manual, p.para_manual, p.topic) for p in ecast_pairs(SHARED, (2019, 2020))]
    assert not {e.conversation for e in examples} & {t.topic for t in turns}, "few-shot pool overlaps the turns"
    config = config_for(args, args.year)
    t0 = time.perf_counter()
    if config["paraphrase"]["backend"] == "smollm":
        hf.load_smollm()
    cosine(["warm up"], ["warm up"])
    print(f"model and MiniLM load: {time.perf_counter() - t0:.1f} s; few-shot pool: {len(examples)} ECAsT pairs")
    print(f"[config] {json.dumps(config)}")
    print(f"  {len(turns)} CAsT {args.year} turns ({turns[0].turn_id} … {turns[-1].turn_id}), seed 0")
    start = time.perf_counter()
    budget = args.max_minutes * 60.0
    # The baseline runs first on its few turns, so a time budget cuts the new defaults' turns, never the comparison.
    base = None
    if args.speed_turns:
        speed(turns[: args.speed_turns], config, examples, args.batch_turns)
    if args.baseline_turns:
        base = measure(turns[: args.baseline_turns], previous_defaults(config), [], "baseline", start + budget)
    new = measure(turns, config, examples, "new", start + budget, batch=args.batch_turns)
    report(new, base)
    if not args.skip_tables:
        print("\nCQR: corpus BLEU of r_i vs m_i, turns ≥ 2 with m_i")
        print_cqr_rows(cqr_rows(SHARED))
        table9()
    samples(new["rows"], args.samples, args.start, args.samples_file)
    print(load_average())


if __name__ == "__main__":
    main()
