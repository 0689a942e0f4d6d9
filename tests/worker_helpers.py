"""Real Celery workers and beat as separate processes (a "fleet") sharing the test's PostgreSQL database and Redis,
for the tests that kill a worker mid-job (tests/ecast/core/test_worker_loss.py, tests/judging/llm/test_worker_loss.py),
and the one way the worker tests wait: poll a condition until a deadline (``wait_until``), never a fixed sleep."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis
from django.db import connection

from ecast.celery import app
from tests.conftest import ARTIFACTS, REPO

FIGURES = ARTIFACTS / "worker-loss.json"


def wait_until(check: Callable[[], Any], *, timeout: float, what: str, poll: float = 0.05, detail=lambda: "") -> Any:
    """Call ``check`` until it returns something truthy and return that; past ``timeout`` seconds, fail saying
    ``what`` was awaited (and ``detail()``, e.g. the workers' logs)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}\n{detail()}".rstrip())
        time.sleep(poll)


class Fleet:
    """Workers and one beat as separate processes, sharing this test's PostgreSQL database and Redis."""

    def __init__(self, tmp_path: Path, redis_url: str):
        db = connection.settings_dict
        database = f"postgres://{db['USER']}:{db['PASSWORD'] or ''}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}"
        self.redis_url = redis_url
        self.tmp_path = tmp_path
        self.env = dict(
            os.environ,
            DJANGO_SETTINGS_MODULE="ecast.settings",
            DATABASE_URL=database,
            ECAST_CACHE_DIR=str(tmp_path / "cache"),
            ECAST_VAR_DIR=str(tmp_path / "var"),
            ECAST_TASKS_EAGER="0",
            ECAST_TORCH_THREADS="1",
            ECAST_JOB_HEARTBEAT_SECONDS="1",
            ECAST_JOB_STALE_SECONDS="5",
            ECAST_SWEEP_SECONDS="2",
            ECAST_WORKER_LOST_SECONDS="3",
        )
        self.procs: list[subprocess.Popen] = []
        self.logs: list[Path] = []

    def _start(self, args: list[str], name: str) -> subprocess.Popen:
        log = self.tmp_path / f"{name}-{len(self.procs)}.log"
        proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "ecast.celery", *args],
            cwd=REPO, env=self.env, stdout=log.open("w"), stderr=subprocess.STDOUT,
        )  # fmt: skip
        self.procs.append(proc)
        self.logs.append(log)
        return proc

    def worker(self) -> subprocess.Popen:
        # solo: the process that runs the task is the one killed, so the kill lands mid-unit
        name = f"loss-{os.getpid()}-{len(self.procs)}@%h"
        return self._start(["worker", "--pool=solo", "-n", name, "--without-gossip", "--without-mingle"], "worker")

    def prefork_worker(self) -> subprocess.Popen:
        name = f"loss-{os.getpid()}-{len(self.procs)}@%h"
        return self._start(["worker", "--concurrency=1", "-n", name, "--without-gossip", "--without-mingle"], "worker")

    def kill_mid_job(
        self, worker: subprocess.Popen, done, total: int, *, at_least: int, before_end: int
    ) -> tuple[float, int]:
        """Wait until ``done()`` is under way, SIGKILL ``worker`` there, check the job is not finished and start a
        fresh worker; returns the moment of the kill and ``done()`` at it."""
        wait_for(
            lambda: at_least <= done() <= total - before_end, timeout=120, fleet=self, what="the job to be under way"
        )
        backends = db_backends_of(worker.pid)
        os.kill(worker.pid, signal.SIGKILL)
        killed_at, done_at_kill = time.monotonic(), done()
        worker.wait(timeout=10)
        # A commit the worker sent just before it died still lands; once PostgreSQL has ended the dead worker's
        # connections nothing more of it can, so the count below is final.
        gone = lambda: not backends & db_backends()  # noqa: E731
        wait_for(gone, timeout=30, fleet=self, what="PostgreSQL to end the dead worker's connections")
        assert done() < total, "the job finished before the kill; make it longer"
        self.worker()
        return killed_at, done_at_kill

    def beat(self) -> subprocess.Popen:
        return self._start(["beat", f"--schedule={self.tmp_path / 'beat-schedule'}"], "beat")

    def output(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text()[-3000:]}" for p in self.logs if p.exists())

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                # Pool processes first: orphaned, they would keep their database connection past the test.
                for child in children(proc.pid):
                    os.kill(child, signal.SIGKILL)
                proc.kill()
                proc.wait(timeout=20)
        clear_broker(self.redis_url)


def clear_broker(url: str) -> None:
    """Empty the queue and the unacknowledged messages a killed worker left in Redis (they belong to this test)."""
    app.control.purge()
    redis.Redis.from_url(url).delete("unacked", "unacked_index", "unacked_mutex")


def go_live(settings) -> None:
    """From here on this process queues tasks to Redis instead of running them inline."""
    settings.CELERY_TASK_ALWAYS_EAGER = False
    app.conf.task_always_eager = False


def wait_for(check, *, timeout: float, poll: float = 0.05, fleet: Fleet, what: str):
    """``wait_until`` that shows the fleet's logs when it times out."""
    return wait_until(check, timeout=timeout, poll=poll, what=what, detail=fleet.output)


def db_backends() -> set[int]:
    """The PostgreSQL client backends of the test database other than this test's own connection."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
            " AND backend_type = 'client backend'"
        )
        return {pid for (pid,) in cursor.fetchall()}


def db_backends_of(pid: int) -> set[int]:
    """The PostgreSQL backends serving process ``pid``'s TCP connections (its sockets' local ports are the backends'
    client ports); empty when it reaches the database some other way."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    ports = set()
    for table in ("tcp", "tcp6"):
        path = Path(f"/proc/{pid}/net/{table}")
        for line in path.read_text().splitlines()[1:] if path.exists() else []:
            fields = line.split()
            if fields[9] in inodes:
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    if not ports:
        return set()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND client_port = ANY(%s)",
            [sorted(ports)],
        )
        return {backend for (backend,) in cursor.fetchall()}


def children(parent: int) -> list[int]:
    """The pids of a process's children (a prefork worker's pool processes)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == parent:
                    out.append(int(entry.name))
            except (OSError, IndexError, ValueError):
                continue
    return out


def pool_child(master: int) -> int:
    """The pid of a prefork worker's pool process (the one running tasks)."""
    pids = children(master)
    if not pids:
        raise AssertionError(f"worker {master} has no pool process")
    return pids[0]


def record(name: str, figures: dict) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    data = json.loads(FIGURES.read_text()) if FIGURES.exists() else {}
    data[name] = figures
    FIGURES.write_text(json.dumps(data, indent=2, default=str))
