"""Helpers the benchmarks share (not a benchmark itself: ``make bench`` runs ``bench/bench_*.py``)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

# The baseline's measures: what the app stores (``evaluation.metrics.DEFAULT_MEASURES``) as trec_eval computes them,
# less the two Judged@k the app computes itself.
TREC_MEASURES = {
    "ndcg_cut.3,5,10",
    "map",
    "recall.100,500,1000",
    "bpref",
    "infAP",
    "P.1,3,5,10",
    "Rprec",
    "recip_rank",
}


def load_average() -> str:
    """The machine's 1/5/15-minute load averages and its CPU count, printed beside every figure: on a shared
    machine a ratio means little without the load it was measured under."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.1f}, {five:.1f}, {fifteen:.1f} on {os.cpu_count()} CPUs"


def cpu_model() -> str:
    """The CPU's model name (from /proc/cpuinfo; the platform's processor string elsewhere): ratios measured on one
    VM kind do not carry over to another, so every row names the CPU it ran on."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or "unknown CPU"


def row(work: str, figure: str, baseline: str, ratio: str, goal: str, *, cpu: str | None = None) -> None:
    """One line of the issue's table: the work, its figure, the baseline measured in the same run, the ratio, the
    goal, the CPU-time ratio (``cpu``, where the bench measures one: it varies less between VMs than the wall
    time), and the load and CPU model right now."""
    cpu_part = f" | CPU {cpu}" if cpu else ""
    where = f"{load_average()}, {cpu_model()}"
    print(f"[row] {work}: {figure} | baseline {baseline} | {ratio}{cpu_part} | goal {goal} | {where}")


def rss_peak_reset() -> bool:
    """Start a new peak-RSS window for this process (Linux: writing 5 to /proc/self/clear_refs resets VmHWM), so
    ``rss_peak_mb`` tells one stretch's peak rather than the process's whole life; False where it cannot."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def rss_mb() -> float:
    """This process's resident memory now (MB), from /proc/self/status (0 where there is none)."""
    return _status_kb("VmRSS") / 1024


def rss_peak_mb() -> float:
    """This process's peak resident memory (MB) since the last ``rss_peak_reset`` (or its start): VmHWM from
    /proc/self/status, else ``resource.getrusage``'s whole-life peak."""
    kb = _status_kb("VmHWM")
    if kb:
        return kb / 1024
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _status_kb(field: str) -> int:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def loglog_slope(sizes: list[float], values: list[float]) -> float:
    """The slope of log(values) against log(sizes), least squares (numpy.polyfit): 1 for linear growth, 2 for
    quadratic; how a cost grows as a collection does."""
    import math

    import numpy as np

    return float(np.polyfit([math.log(s) for s in sizes], [math.log(max(v, 1e-9)) for v in values], 1)[0])


TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _stat_fields(entry: Path) -> list[str] | None:
    """A /proc/PID/stat line's fields after the command name (None when the process is gone)."""
    try:
        return (entry / "stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def _spent(fields: list[str]) -> float:
    """User + system CPU seconds of a process from its ``_stat_fields``."""
    return (int(fields[11]) + int(fields[12])) / TICK


def cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) a worker and its pool processes have used, from /proc (0 where there is none):
    on a shared machine the wall time says how much CPU others left us, the CPU time what the work cost. Reads
    every process's entry (about a millisecond): not for timed code, see ``process_cpu``."""
    total = 0.0
    for entry in Path("/proc").glob("[0-9]*"):
        fields = _stat_fields(entry)
        if fields is not None and (int(entry.name) == pid or int(fields[1]) == pid):
            total += _spent(fields)
    return total


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system) of one process, from its own /proc entry (0 where there is none)."""
    fields = _stat_fields(Path(f"/proc/{pid}"))
    return 0.0 if fields is None else _spent(fields)


def backend_pid() -> int | None:
    """The PostgreSQL backend serving this process's open database connection, when it runs on this machine (its
    CPU is then readable); None otherwise."""
    from django.db import connection

    if connection.vendor != "postgresql" or connection.connection is None:
        return None
    pid = connection.connection.info.backend_pid  # known to the client since the connection opened: no query
    return pid if Path(f"/proc/{pid}/stat").exists() else None


def backend_cpu() -> float:
    """CPU seconds so far of the database backend serving this process (0 without one on this machine). A worker
    keeps its connection from task to task: a task's share is the difference between its end and its start."""
    pid = backend_pid()
    return process_cpu(pid) if pid else 0.0


def machine_cpu() -> tuple[float, float]:
    """(busy, stolen) CPU seconds of every core of this machine so far, from /proc/stat: busy is everything but
    idle, I/O wait and steal; stolen is what the hypervisor gave other guests while this one wanted to run. Their
    differences over a timed stretch say how full the cores were and how much of the wall time went elsewhere."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq) / TICK, steal / TICK


def postgres_processes() -> Iterator[tuple[int, str, list[str]]]:
    """(pid, title, stat fields) of every PostgreSQL process on this machine; a backend's title reads
    "postgres: USER DATABASE HOST(PORT) STATE"."""
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            if (entry / "comm").read_text().strip() != "postgres":
                continue
            title = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = _stat_fields(entry)
        if fields is not None:
            yield int(entry.name), title, fields


def postgres_cpu(db_name: str) -> float:
    """CPU seconds so far of the PostgreSQL backends serving ``db_name`` on this machine (0 without a server), from
    /proc.

    A backend whose connection ended (a web thread's connection replaced once ECAST_DB_CONN_MAX_AGE old, a
    recompute's rankings stream) takes its CPU time with it; the server's main process is charged it when it
    reaps the backend, so that process's children's time (on a quiet machine, this run's backends and
    autovacuum's) is counted too, whether or not a backend of ``db_name`` is open at the moment."""
    servers: dict[int, list[str]] = {}  # pid → stat fields of every postgres process
    total = 0.0
    for pid, title, fields in postgres_processes():
        servers[pid] = fields
        if f" {db_name} " in f" {title} ":
            total += _spent(fields)
    for fields in servers.values():
        if int(fields[1]) not in servers:  # a server's main process: its reaped children's user + system time
            total += (int(fields[13]) + int(fields[14])) / TICK
    return total


def postgres_backends_cpu(db_name: str) -> dict[int, float]:
    """{pid: CPU seconds so far} of the PostgreSQL backends now serving ``db_name`` (empty without a server here).
    Unlike ``postgres_cpu`` it counts no other database's work, but a backend that ends takes its time with it: the
    difference of two readings over the pids alive at the second is a lower bound of what ``db_name`` cost."""
    return {pid: _spent(fields) for pid, title, fields in postgres_processes() if f" {db_name} " in f" {title} "}


def make_database(base_url: str, prefix: str) -> str:
    """A throw-away PostgreSQL database ``<prefix>_<pid>`` next to the one in DATABASE_URL; returns its URL."""
    import urllib.parse

    import psycopg

    parsed = urllib.parse.urlparse(base_url)
    name = f"{prefix}_{os.getpid()}"
    admin = parsed._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    return parsed._replace(path=f"/{name}").geturl()


def drop_database(url: str) -> None:
    import urllib.parse

    import psycopg

    parsed = urllib.parse.urlparse(url)
    admin = parsed._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{parsed.path.lstrip("/")}" WITH (FORCE)')


def synthetic_grade(rng) -> int:
    r = rng.random()
    return 0 if r < 0.8 else 1 if r < 0.88 else 2 if r < 0.94 else 3 if r < 0.97 else 4


def synthetic_data(n_turns: int, n_runs: int, depth: int, judged: int):
    """Seeded synthetic qrels {qid: {doc: grade}} and runs [{qid: [docs]}] drawn from 2,000 candidates per turn."""
    import random

    random.seed(1)
    qids = [f"{1000 + t // 10}_{t % 10 + 1}" for t in range(n_turns)]
    candidates = {q: [f"D{q}-{i}" for i in range(2000)] for q in qids}
    qrels = {q: {d: synthetic_grade(random) for d in random.sample(candidates[q][:1200], judged)} for q in qids}
    runs = [{q: random.sample(candidates[q], depth) for q in qids} for _ in range(n_runs)]
    return qids, qrels, runs


def synthetic_scores(depth: int) -> list[float]:
    """The scores every synthetic ranking carries, rank by rank (depth, depth − 1, …)."""
    return [float(depth - i) for i in range(depth)]


def synthetic_store(qids, qrels, runs, depth: int):
    """Store the synthetic data as the app's rows: a collection, its turns, an "original" qrels version and one run
    per ranking set (named run00, run01, …); returns (collection, version, runs, {turn id: Turn pk}). On
    PostgreSQL it refreshes the planner's statistics after the bulk load, as the app's importers do
    (``ecast.core.bulk.rows_insert``)."""
    import time

    from django.db import connection

    from ecast.models import Collection, Conversation, Turn
    from evaluation.models import Qrel, QrelsVersion, Run, RunTurn

    coll = Collection.objects.create(name=f"Bench {time.time():.0f}", year=2020, relevance_threshold=1)
    turns = []
    for q in qids:
        topic, n = q.split("_")
        conv, _ = Conversation.objects.get_or_create(collection=coll, topic_id=topic)
        turns.append(Turn(conversation=conv, collection=coll, number=int(n), turn_id=q, raw_utterance="q"))
    Turn.objects.bulk_create(turns)
    pk_of = dict(Turn.objects.filter(collection=coll).values_list("turn_id", "pk"))
    version = QrelsVersion.objects.create(collection=coll, name="original")
    Qrel.objects.bulk_create(
        [Qrel(version=version, turn_id=pk_of[q], passage_id=d, grade=g) for q in qids for d, g in qrels[q].items()],
        batch_size=5000,
    )
    scores = synthetic_scores(depth)
    run_rows = []
    for i, r in enumerate(runs):
        run = Run.objects.create(collection=coll, name=f"run{i:02d}")
        run_rows.append(run)
        RunTurn.objects.bulk_create(
            [RunTurn(run=run, turn_id=pk_of[q], doc_ids=r[q], scores=scores) for q in qids], batch_size=200
        )
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            for model in (Turn, Qrel, RunTurn):
                cursor.execute(f"ANALYZE {connection.ops.quote_name(model._meta.db_table)}")
    return coll, version, run_rows, pk_of
