"""Celery app for benchmarks that records when each task starts and ends (not a benchmark itself).

``celery -A bench.task_timeline worker`` runs the project's app; with ECAST_TASK_TIMELINE set to a file, each task
appends one JSON line per start and end (worker name, task name, arguments, wall clock, CPU, and the wall time the
task spent in database statements, row-lock statements apart), so a benchmark can print which part of a fanned-out
job ran serially, which workers idled and what a task waited on.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from celery.signals import task_postrun, task_prerun
from django.db import connection

from bench.common import backend_cpu, backend_pid
from ecast.celery import app

__all__ = ["app", "timeline_read"]

PATH = os.environ.get("ECAST_TASK_TIMELINE")
_DB = {"db": 0.0, "lock": 0.0}


def _timed(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
    t = time.perf_counter()
    try:
        return execute(sql, params, many, context)
    finally:
        dt = time.perf_counter() - t
        _DB["db"] += dt
        if "FOR UPDATE" in sql or "advisory" in sql:
            _DB["lock"] += dt


def _record(event: str, task: Any, args: Any) -> None:
    if not PATH:
        return
    if event == "start":
        _DB.update(db=0.0, lock=0.0)
        if _timed not in connection.execute_wrappers:
            connection.execute_wrappers.append(_timed)
    line = {"event": event, "t": time.time(), "task": task.name, "args": list(args or []),
            "worker": task.request.hostname, "pid": os.getpid(), "cpu": time.process_time(), **_DB,
            "backend": backend_pid(), "backend_cpu": backend_cpu()}  # fmt: skip
    with open(PATH, "a", encoding="utf-8") as f:
        f.write(json.dumps(line) + "\n")


@task_prerun.connect
def _started(task: Any = None, args: Any = None, **_: Any) -> None:
    _record("start", task, args)


@task_postrun.connect
def _ended(task: Any = None, args: Any = None, **_: Any) -> None:
    _record("end", task, args)


def timeline_read(path: str, t0: float) -> list[dict[str, Any]]:
    """The tasks recorded in ``path`` as rows (worker, task, args, start and end seconds after ``t0``, CPU)."""
    starts: dict[tuple, dict[str, Any]] = {}
    rows: list[dict[str, Any]] = []
    try:
        lines = open(path, encoding="utf-8").read().splitlines()
    except FileNotFoundError:
        return []
    for raw in lines:
        e = json.loads(raw)
        key = (e["pid"], e["task"], tuple(e["args"]))
        if e["event"] == "start":
            starts[key] = e
        elif key in starts:
            s = starts.pop(key)
            rows.append({"worker": e["worker"].split("@")[0], "task": e["task"].rsplit(".", 1)[-1],
                         "args": e["args"][1:], "start": s["t"] - t0, "end": e["t"] - t0,
                         "cpu": e["cpu"] - s["cpu"], "db": e["db"], "lock": e["lock"],
                         # The backend's CPU since the task started, or all of it if the task opened it.
                         "backend_cpu": e["backend_cpu"] - (s["backend_cpu"] if s.get("backend") == e.get("backend")
                                                            else 0.0)})  # fmt: skip
    return sorted(rows, key=lambda r: r["start"])
