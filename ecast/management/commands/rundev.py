"""`manage.py rundev`: the web server and a Celery worker together; Ctrl-C (or SIGTERM) stops both cleanly.

The children run in their own process groups so a terminal Ctrl-C reaches only this supervisor, which then sends
each child exactly one SIGTERM (a warm shutdown for Celery: the running task finishes) and waits for both.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any, TextIO

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from ecast.management.commands.load_demo import DEMO_ACCOUNTS


def worker_command(*, redis: bool) -> list[str]:
    """The Celery worker command line: one solo process on the SQLite broker, two with Redis."""
    cmd = [sys.executable, "-m", "celery", "-A", "ecast.celery", "worker", "--loglevel=INFO", "--without-gossip"]
    # SQLite serialises writers and the SQLAlchemy transport polls one file: a single solo worker avoids lock
    # contention; Redis + PostgreSQL handle concurrent workers.
    cmd += ["--concurrency=2"] if redis else ["--pool=solo"]
    return cmd


def web_command(*, addr: str, server: str) -> list[str]:
    """The web server command line (Django's runserver without autoreload, or gunicorn)."""
    if server == "gunicorn":
        return [sys.executable, "-m", "gunicorn", "ecast.wsgi:application", "--bind", addr, "--workers", "2"]
    return [sys.executable, str(settings.BASE_DIR / "manage.py"), "runserver", addr, "--noreload"]


def supervise(commands: Sequence[Sequence[str]], *, out: TextIO | Any, grace_seconds: float = 30.0) -> int:
    """Start every command, forward SIGINT/SIGTERM to all, and return once all have exited.

    When one child exits on its own the others are stopped too (a dead worker must not go unnoticed). The return
    code is 0 after a requested stop, else the first non-zero child exit code.
    """
    procs: list[subprocess.Popen] = []
    stop_requested = False

    def request_stop(signum: int, _frame: Any) -> None:
        nonlocal stop_requested
        if not stop_requested:
            out.write(f"\nReceived {signal.Signals(signum).name}: stopping the web server and the worker…\n")
            out.flush()
        stop_requested = True

    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        for cmd in commands:
            procs.append(subprocess.Popen(list(cmd), start_new_session=True))
        exit_code = 0
        while not stop_requested:
            finished = [p for p in procs if p.poll() is not None]
            if finished:
                first = finished[0]
                name = " ".join(str(a) for a in list(first.args)[:4])  # type: ignore[arg-type]
                out.write(f"Process {name}… exited with {first.returncode}; stopping.\n")
                exit_code = first.returncode or 1
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
    help = "Serve ecast on http://127.0.0.1:8000 with a background Celery worker; Ctrl-C stops both."

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
            commands.append(worker_command(redis=redis))
        db = settings.DATABASES["default"]
        self.stdout.write(self.style.SUCCESS(f"\necast is starting on http://{addr}/"))
        self.stdout.write(f"  database: {db['ENGINE'].rsplit('.', 1)[-1]} ({db.get('NAME')})")
        self.stdout.write(f"  task broker: {'Redis' if redis else settings.CELERY_BROKER_URL}")
        self.stdout.write("  demo logins (created by `manage.py load_demo`):")
        for username, password, role in DEMO_ACCOUNTS:
            self.stdout.write(f"    {role:<9} {username:<10} password: {password}")
        self.stdout.write(f"  API docs: http://{addr}/api/docs/    Press Ctrl-C to stop.\n")
        self.stdout.flush()
        code = supervise(commands, out=self.stdout)
        if code:
            raise CommandError(f"a child process failed (exit code {code})", returncode=code)
        self.stdout.write("Stopped cleanly.")
