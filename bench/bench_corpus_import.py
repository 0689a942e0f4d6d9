"""Benchmark: the streamed passage-text import on MS MARCO-size files, against a plain streaming read, with memory.

Generates synthetic MS MARCO-like corpora (``id<TAB>text``, ~340 characters a line, gzipped like
``collection.tsv.gz``) of 1 M and 8.8 M lines (MS MARCO v1 passages: 8,841,823) under ``--tmp``, reused when
present. A collection whose runs rank ``--needed`` distinct passages (100 turns × 1,000-deep rankings by default,
ids spread over the largest file) decides what is kept: the import runs as the pool page starts it,
``passages_tsv`` with ``only_needed``, through ``import_file`` (job row, progress updates, atomic write).

Baseline: ``for line in gzip.open(f, "rt"): line.split("\\t", 1)``, the floor of any reader of the file, read
right before each import; wall and CPU seconds of both (this process's CPU; PostgreSQL's beside it), with the CPU
model and the load. Memory: the process's peak RSS (``ru_maxrss``, a high-water mark) before the first import, after
the 1 M-line import and after the 8.8 M-line import: flat memory means the last two are (about) equal. The database
is a throw-away PostgreSQL database beside ``DATABASE_URL``'s when it is set, else a SQLite file in a scratch
directory, so stored rows do not count as process memory. Prints figures and ratios; asserts nothing about time.

Usage: python bench/bench_corpus_import.py [--lines 1000000,8800000] [--needed 100000] [--tmp /tmp/ecast-bench-corpus]
(``--lines 200000,1000000`` for a quick run; the default takes a few minutes on 2 cores plus ~2 minutes to write the
files the first time, 2 GB of disk).
"""

from __future__ import annotations

import argparse
import gzip
import os
import random
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")  # tasks eager: no broker needed

from bench.common import (  # noqa: E402
    cpu_model,
    drop_database,
    load_average,
    make_database,
    postgres_cpu,
    process_cpu,
)

TURNS = 100


def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--lines", default="1000000,8800000", help="comma-separated corpus sizes, in lines")
    parser.add_argument("--needed", type=int, default=100_000, help="distinct passage ids the collection ranks")
    parser.add_argument("--tmp", type=Path, default=Path(tempfile.gettempdir()) / "ecast-bench-corpus")
    return parser.parse_args()


def corpus_file(folder: Path, lines: int) -> Path:
    """A gzipped synthetic corpus of ``lines`` lines (ids 0..lines-1), written once and reused."""
    path = folder / f"corpus-{lines}.tsv.gz"
    if path.is_file():
        return path
    rng = random.Random(lines)
    vocab = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 10))) for _ in range(5000)]
    texts = [" ".join(rng.choice(vocab) for _ in range(rng.randint(25, 70))) for _ in range(997)]
    partial = path.with_suffix(".partial")
    t0 = time.perf_counter()
    with gzip.open(partial, "wb", compresslevel=1) as fh:
        for start in range(0, lines, 10_000):
            fh.write("".join(f"{i}\t{texts[i % 997]}\n" for i in range(start, min(lines, start + 10_000))).encode())
    partial.rename(path)
    print(f"  wrote {path} ({path.stat().st_size / 1e6:,.0f} MB) in {time.perf_counter() - t0:.0f} s")
    return path


def cpu_now() -> float:
    return process_cpu(os.getpid())


def baseline(path: Path) -> tuple[float, float]:
    """Wall and CPU seconds of a plain streaming read: decompress, decode, split each line once."""
    t0, c0 = time.perf_counter(), cpu_now()
    n = 0
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            line.split("\t", 1)
            n += 1
    assert n > 0
    return time.perf_counter() - t0, cpu_now() - c0


def peak_rss_mb() -> float:
    """The process's peak resident set size so far (a high-water mark), in MB (Linux reports kB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    args = _args()
    sizes = sorted(int(x) for x in args.lines.split(","))
    args.tmp.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="var-", dir=args.tmp))
    scratch_db = None
    if os.environ.get("DATABASE_URL"):
        scratch_db = os.environ["DATABASE_URL"] = make_database(os.environ["DATABASE_URL"], "bench_corpus")
    else:
        os.environ["ECAST_VAR_DIR"] = str(scratch)
    os.environ["ECAST_MAX_UPLOAD_BYTES"] = str(64 * 1024**3)  # a 3 GB corpus is a legitimate upload here
    try:
        run_sizes(args, sizes, scratch)
    finally:
        if scratch_db:
            from django.db import connections

            connections.close_all()
            drop_database(scratch_db)


def database_cpu() -> float:
    url = os.environ.get("DATABASE_URL", "")
    return postgres_cpu(url.rsplit("/", 1)[-1]) if url.startswith("postgres") else 0.0


def run_sizes(args: argparse.Namespace, sizes: list[int], scratch: Path) -> None:

    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    from ecast.imports.services import import_file
    from ecast.models import Collection, Conversation, ImportJob, Passage, Turn
    from evaluation.models import Run, RunTurn

    print(f"# bench_corpus_import — {cpu_model()}; {load_average()}")
    print(f"database: {connection.vendor} ({connection.settings_dict['NAME']})")
    call_command("migrate", verbosity=0)
    files = {n: corpus_file(args.tmp, n) for n in sizes}

    # The collection: one run ranking ``needed`` distinct passages spread over the largest file's ids.
    coll = Collection.objects.create(name=f"bench corpus {scratch.name}", year=2020)
    conv = Conversation.objects.create(collection=coll, topic_id="1")
    run = Run.objects.create(collection=coll, name="bench")
    step = max(1, sizes[-1] // args.needed)
    ids = [str(i * step) for i in range(args.needed)]
    depth = max(1, len(ids) // TURNS)
    for t in range(TURNS):
        turn = Turn.objects.create(collection=coll, conversation=conv, number=t + 1, turn_id=f"1_{t + 1}")
        docs = ids[t * depth : (t + 1) * depth]
        RunTurn.objects.create(run=run, turn=turn, doc_ids=docs, scores=[float(-i) for i in range(len(docs))])

    rss = [("before the imports", peak_rss_mb())]
    rows = []
    for n in sizes:
        path = files[n]
        base, base_cpu = baseline(path)
        t0, c0, d0 = time.perf_counter(), cpu_now(), database_cpu()
        job = import_file(kind="passages_tsv", path=path, collection=coll, options={"only_needed": "true"})
        seconds, cpu, db_cpu = time.perf_counter() - t0, cpu_now() - c0, database_cpu() - d0
        if job.status != ImportJob.Status.SUCCEEDED:
            raise SystemExit(f"{path.name} failed: {job.errors[:5]}")
        rss.append((f"after the {n:,}-line import", peak_rss_mb()))
        rows.append((n, path, base, seconds, job.counts, base_cpu, cpu, db_cpu, load_average()))
        Passage.objects.all().delete()  # the next size stores its texts afresh

    print(f"needed ids: {args.needed:,} ({TURNS} turns × {depth:,}-deep rankings of one run)")
    for n, path, base, seconds, counts, base_cpu, cpu, db_cpu, load in rows:
        print(
            f"  {n:>10,} lines ({path.stat().st_size / 1e6:,.0f} MB gz): import {seconds:6.1f} s wall, {cpu:6.1f} s "
            f"CPU (+ {db_cpu:.1f} s database); plain read {base:6.1f} s wall, {base_cpu:6.1f} s CPU; ratio "
            f"{seconds / base:.2f}x wall, {cpu / base_cpu:.2f}x CPU; stored {counts['passages_created']:,}, skipped "
            f"{counts['not_needed']:,} ({load})"
        )
    for label, mb in rss:
        print(f"  peak RSS {label}: {mb:,.0f} MB")
    if len(rss) >= 3:
        print(f"peak RSS growth from {sizes[0]:,} to {sizes[-1]:,} lines: {rss[-1][1] - rss[1][1]:+,.1f} MB")


if __name__ == "__main__":
    try:
        main()
    finally:
        # The scratch SQLite database (the corpora stay in --tmp for the next run).
        for scratch in (Path(os.environ.get("ECAST_VAR_DIR", "")),):
            if scratch.name.startswith("var-") and scratch.is_dir():
                shutil.rmtree(scratch, ignore_errors=True)
