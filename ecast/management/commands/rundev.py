"""`manage.py rundev`: the web server, two Celery workers (the default queue and the queue of long jobs, see
``CELERY_TASK_ROUTES``) and celery beat; Ctrl-C (or SIGTERM) stops all cleanly.

The children run in their own process groups so a terminal Ctrl-C reaches only this supervisor, which then sends
each child exactly one SIGTERM (a warm shutdown for Celery: the running task finishes) and waits for all. A worker
or beat that dies is restarted; beat runs the job sweeper, which re-queues what a dead worker held.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from ecast.management.commands.load_demo import DEMO_ACCOUNTS


def worker_command(*, redis: bool, queue: str) -> list[str]:
    """The Celery worker command line for one queue: one solo process on the SQLite broker, two with Redis.

    Each queue has its own worker (node ``<queue>@host``), so a long job (LLM labelling, generation, …) never
    holds the only process while a score recompute or an import waits.
    """
    cmd = [sys.executable, "-m", "celery", "-A", "ecast.celery", "worker", "--loglevel=INFO", "--without-gossip"]
    cmd += ["-Q", queue, "-n", f"{queue}@%h"]
    # SQLite serialises writers and the SQLAlchemy transport polls one file: a single solo worker avoids lock
    # contention; Redis + PostgreSQL handle concurrent workers.
    cmd += ["--concurrency=2"] if redis else ["--pool=solo"]
    return cmd


def web_command(*, addr: str, server: str) -> list[str]:
    """The web server command line (Django's runserver without autoreload, or gunicorn)."""
    if server == "gunicorn":
        return [sys.executable, "-m", "gunicorn", "ecast.wsgi:application", "--bind", addr, "--workers", "2"]
    return [sys.executable, str(settings.BASE_DIR / "manage.py"), "runserver", addr, "--noreload"]


def beat_command() -> list[str]:
    """celery beat, which queues the job sweeper (and lease housekeeping) on schedule."""
    schedule = Path(settings.VAR_DIR) / "celerybeat-schedule"
    celery = [sys.executable, "-m", "celery", "-A", "ecast.celery"]
    return [*celery, "beat", "--loglevel=WARNING", f"--schedule={schedule}"]


# A restartable child that dies this often within CRASH_WINDOW_S is crash-looping: stop instead of spinning.
MAX_RESTARTS = 5
CRASH_WINDOW_S = 60.0


def supervise(
    commands: Sequence[Sequence[str]],
    *,
    out: TextIO | Any,
    grace_seconds: float = 30.0,
    restartable: Sequence[bool] = (),
) -> int:
    """Start every command, forward SIGINT/SIGTERM to all, and return once all have exited.

    A child marked restartable (the worker, beat) that exits on its own is started again — its unfinished work
    comes back from the broker or the job sweeper — unless it crash-loops. When any other child (the web server)
    exits, the rest are stopped. The return code is 0 after a requested stop, else the first non-zero exit code.
    """
    procs: list[subprocess.Popen] = []
    restarts: list[list[float]] = [[] for _ in commands]
    can_restart = [bool(r) for r in restartable] + [False] * (len(commands) - len(restartable))
    stop_requested = False

    def request_stop(signum: int, _frame: Any) -> None:
        nonlocal stop_requested
        if not stop_requested:
            out.write(f"\nReceived {signal.Signals(signum).name}: stopping the web server and the workers…\n")
            out.flush()
        stop_requested = True

    def label(i: int) -> str:
        return " ".join(str(a) for a in list(commands[i])[:5])

    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        for cmd in commands:
            procs.append(subprocess.Popen(list(cmd), start_new_session=True))
        exit_code = 0
        while not stop_requested and exit_code == 0:
            for i, p in enumerate(procs):
                if p.poll() is None:
                    continue
                now = time.monotonic()
                restarts[i] = [t for t in restarts[i] if now - t < CRASH_WINDOW_S] + [now]
                if can_restart[i] and len(restarts[i]) <= MAX_RESTARTS:
                    out.write(f"Process {label(i)}… exited with {p.returncode}; restarting it.\n")
                    out.flush()
                    procs[i] = subprocess.Popen(list(commands[i]), start_new_session=True)
                    continue
                why = "it keeps crashing" if can_restart[i] else "stopping"
                out.write(f"Process {label(i)}… exited with {p.returncode}; {why}.\n")
                exit_code = p.returncode or 1
                break
            time.sleep(0.2)
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + grace_seconds
        for p in procs:
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                out.write(f"Process {p.pid} did not stop within {grace_seconds:.0f} s; killing it.\n")
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        return exit_code
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


class Command(BaseCommand):
    help = (
        "Serve ecast on http://127.0.0.1:8000 with background Celery workers (short and long jobs) and beat; "
        "Ctrl-C stops all."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--addr", default=os.environ.get("ECAST_ADDR", "127.0.0.1:8000"), help="host:port")
        parser.add_argument("--server", choices=["runserver", "gunicorn"], default="runserver")
        parser.add_argument("--no-worker", action="store_true", help="Serve pages only (tasks queue up).")

    def handle(self, *args: Any, **opts: Any) -> None:
        if settings.CELERY_TASK_ALWAYS_EAGER:
            raise CommandError("ECAST_TASKS_EAGER is on; rundev runs a real worker, unset it.")
        addr = opts["addr"]
        redis = bool(settings.REDIS_URL)
        commands = [web_command(addr=addr, server=opts["server"])]
        if not opts["no_worker"]:
            queues = [settings.CELERY_TASK_DEFAULT_QUEUE, settings.ECAST_LONG_QUEUE]
            commands += [*(worker_command(redis=redis, queue=q) for q in queues), beat_command()]
        db = settings.DATABASES["default"]
        self.stdout.write(self.style.SUCCESS(f"\necast is starting on http://{addr}/"))
        self.stdout.write(f"  database: {db['ENGINE'].rsplit('.', 1)[-1]} ({db.get('NAME')})")
        self.stdout.write(f"  task broker: {'Redis' if redis else settings.CELERY_BROKER_URL}")
        self.stdout.write("  demo logins (created by `manage.py load_demo`):")
        for username, password, role in DEMO_ACCOUNTS:
            self.stdout.write(f"    {role:<9} {username:<10} password: {password}")
        self.stdout.write(f"  API docs: http://{addr}/api/docs/    Press Ctrl-C to stop.\n")
        self.stdout.flush()
        # The web server stops everything when it exits; a worker or beat that dies is restarted.
        code = supervise(commands, out=self.stdout, restartable=[False] + [True] * (len(commands) - 1))
        if code:
            raise CommandError(f"a child process failed (exit code {code})", returncode=code)
        self.stdout.write("Stopped cleanly.")
