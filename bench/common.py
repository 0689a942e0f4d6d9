"""Helpers the benchmarks share (not a benchmark itself: ``make bench`` runs ``bench/bench_*.py``)."""

from __future__ import annotations

import os
from pathlib import Path


def load_average() -> str:
    """The machine's 1/5/15-minute load averages and its CPU count, printed beside every figure: on a shared
    machine a ratio means little without the load it was measured under."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.1f}, {five:.1f}, {fifteen:.1f} on {os.cpu_count()} CPUs"


def row(work: str, figure: str, baseline: str, ratio: str, goal: str) -> None:
    """One line of the issue's table: the work, its figure, the baseline measured in the same run, the ratio, the
    goal, and the load right now."""
    print(f"[row] {work}: {figure} | baseline {baseline} | {ratio} | goal {goal} | {load_average()}")


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


def postgres_cpu(db_name: str) -> float:
    """CPU seconds so far of the PostgreSQL backends serving ``db_name`` on this machine (0 without a server), from
    /proc.

    A backend whose connection ended (a web thread's connection replaced once ECAST_DB_CONN_MAX_AGE old, a
    recompute's rankings stream) takes its CPU time with it; the server's main process is charged it when it
    reaps the backend, so that process's children's time (on a quiet machine, this run's backends and
    autovacuum's) is counted too, whether or not a backend of ``db_name`` is open at the moment."""
    servers: dict[int, list[str]] = {}  # pid → stat fields of every postgres process
    total = 0.0
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            if (entry / "comm").read_text().strip() != "postgres":
                continue
            # A backend's title: "postgres: USER DATABASE HOST(PORT) STATE".
            title = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = _stat_fields(entry)
        if fields is not None:
            servers[int(entry.name)] = fields
            if f" {db_name} " in f" {title} ":
                total += _spent(fields)
    for fields in servers.values():
        if int(fields[1]) not in servers:  # a server's main process: its reaped children's user + system time
            total += (int(fields[13]) + int(fields[14])) / TICK
    return total


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
