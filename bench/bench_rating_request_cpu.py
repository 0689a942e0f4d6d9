"""CPU per rating request, one request at a time: what the web process and PostgreSQL spend on `me`, `next` and
`submit`, without HTTP, threads or other load in the way.

The load test (bench_rating_load.py) measures latency under 500 raters, which on a shared 2-core machine follows how
busy the cores are; this one measures the cost of each endpoint, which does not. It seeds the same campaign, then
calls the WSGI application in this process (the environ gunicorn builds, token auth, JSON bodies) for every rater in
turn: a round of `me`, a round of `next`, a round of `submit`, repeated. The CPU of this process (the web side,
gunicorn's HTTP parsing left out) and of its PostgreSQL backend (the database side) are divided by the requests of
each round; Redis's CPU is shown beside when its server runs here. Baseline: `me`, the trivial authenticated call.

Usage: DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres REDIS_URL=redis://127.0.0.1:6379/4 \
       python bench/bench_rating_request_cpu.py [--raters 300] [--rounds 3] [--items 3000] [--profile 25]
--profile N prints the N functions with the most CPU per endpoint (cProfile on CPU time), where the time went;
the figures are then the profiled ones (cProfile adds its own CPU).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import shutil
import sys
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.common import backend_cpu, drop_database, load_average, make_database, process_cpu, row  # noqa: E402


def redis_pid() -> int | None:
    """The Redis server on this machine, whose CPU the cache reads cost (None when it runs elsewhere)."""
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            if (entry / "comm").read_text().strip() == "redis-server":
                return int(entry.name)
        except OSError:
            continue
    return None


def environ(method: str, path: str, token: str, body: bytes = b"") -> dict:
    """What gunicorn hands the application for a keep-alive JSON call from the load test's client."""
    env = {
        "REQUEST_METHOD": method,
        "SCRIPT_NAME": "",
        "PATH_INFO": path,
        "QUERY_STRING": "",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "REMOTE_PORT": "40000",
        "HTTP_HOST": "127.0.0.1:8000",
        "HTTP_AUTHORIZATION": f"Token {token}",
        "HTTP_ACCEPT": "application/json",
        "HTTP_ACCEPT_ENCODING": "identity",
        "HTTP_CONNECTION": "keep-alive",
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,
        "wsgi.url_scheme": "http",
        "wsgi.version": (1, 0),
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }
    if body:
        env["CONTENT_TYPE"] = "application/json"
        env["CONTENT_LENGTH"] = str(len(body))
    return env


def call(app, method: str, path: str, token: str, payload: dict | None = None) -> tuple[str, bytes]:
    """One request through the WSGI application: (status line, body)."""
    body = json.dumps(payload).encode() if payload is not None else b""
    seen: list[str] = []
    result = app(environ(method, path, token, body), lambda status, headers, exc_info=None: seen.append(status))
    try:
        content = b"".join(result)
    finally:
        if hasattr(result, "close"):
            result.close()
    return seen[0], content


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--raters", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3, help="rounds of me/next/submit over every rater")
    ap.add_argument("--items", type=int, default=3000)
    ap.add_argument("--n", type=int, default=5, help="raters per item")
    ap.add_argument("--profile", type=int, default=0, help="print this many functions per endpoint (cProfile)")
    args = ap.parse_args()
    base = os.environ.get("DATABASE_URL", "")
    if not base.startswith("postgres") or not os.environ.get("REDIS_URL"):
        print("skipped: needs DATABASE_URL on PostgreSQL (it creates and drops its own database there) and REDIS_URL")
        return
    db_url = make_database(base, "bench_rating_cpu")
    var = f"/tmp/bench-rating-cpu-{os.getpid()}"
    try:
        run(args, db_url, var)
    finally:
        from django.db import connections

        connections.close_all()
        drop_database(db_url)
        shutil.rmtree(var, ignore_errors=True)


def run(args: argparse.Namespace, db_url: str, var: str) -> None:
    os.environ.update(
        {
            "DATABASE_URL": db_url,
            "DJANGO_SETTINGS_MODULE": "ecast.settings",
            "DJANGO_DEBUG": "0",
            "DJANGO_SECRET_KEY": "bench-" + uuid.uuid4().hex,
            "ECAST_VAR_DIR": var,
            # One backend for the whole run, so its CPU can be read from its /proc entry (a replaced one takes its
            # CPU time with it).
            "ECAST_DB_CONN_MAX_AGE": "3600",
        }
    )
    from bench.bench_rating_load import create_schema, seed_data

    create_schema()
    campaign_id, tokens = seed_data(args.items, args.raters, args.n)
    from ecast.wsgi import application

    for tok in tokens:  # first calls fill the token cache and build per-process caches: not the steady state
        call(application, "GET", "/api/rating/me/", tok)
    rpid = redis_pid()
    totals: dict[str, list[float]] = {k: [0.0, 0.0, 0.0, 0] for k in ("me", "next", "submit")}  # type: ignore[misc]
    profiles = {k: cProfile.Profile(time.process_time) for k in totals} if args.profile else {}
    assignments: dict[str, int] = {}
    measures: dict[str, list[str]] = {}
    failures: dict[str, int] = {}

    def timed(name: str, requests, measured: bool = True) -> None:
        web0, db0, r0 = time.process_time(), backend_cpu(), process_cpu(rpid) if rpid else 0.0
        prof = profiles.get(name) if measured else None
        if prof:
            prof.enable()
        count = 0
        for method, path, tok, payload, expect in requests:
            status, content = call(application, method, path, tok, payload)
            count += 1
            if not status.startswith(expect):
                failures[f"{name} {status}"] = failures.get(f"{name} {status}", 0) + 1
            elif name == "next":
                a = json.loads(content)["assignment"]
                if a is not None:
                    assignments[tok] = a["assignment_id"]
                    measures[tok] = [m["key"] for m in a["measures"]]
        if prof:
            prof.disable()
        if not measured:
            return
        t = totals[name]
        t[0] += time.process_time() - web0
        t[1] += backend_cpu() - db0
        t[2] += (process_cpu(rpid) if rpid else 0.0) - r0
        t[3] += count

    for round_ in range(args.rounds + 1):
        measured = round_ > 0  # the first: each rater's first lease also makes their status row, once per campaign
        timed("me", [("GET", "/api/rating/me/", tok, None, "200") for tok in tokens], measured)
        timed("next", [("POST", f"/api/rating/campaigns/{campaign_id}/next/", tok, None, "200") for tok in tokens],
              measured)  # fmt: skip
        submits = [
            ("POST", f"/api/rating/assignments/{assignments.pop(tok)}/submit/", tok,
             {"values": {k: 1 + i % 5 for i, k in enumerate(measures[tok])}, "idempotency_key": uuid.uuid4().hex,
              "seconds_on_task": 12.5}, "201")
            for tok in tokens if tok in assignments
        ]  # fmt: skip
        timed("submit", submits, measured)

    print(f"\n{args.raters} raters × {args.rounds} rounds (after one unmeasured), one request at a time in one "
          f"process; {load_average()}")  # fmt: skip
    print(f"{'endpoint':<10}{'requests':>10}{'web ms':>9}{'db ms':>8}{'redis ms':>10}{'web ratio':>11}")
    base = totals["me"][0] / max(totals["me"][3], 1)
    for name, (web, db, red, count) in totals.items():
        n = max(count, 1)
        print(f"{name:<10}{count:>10}{1000 * web / n:>9.2f}{1000 * db / n:>8.2f}{1000 * red / n:>10.2f}"
              f"{web / n / base:>10.2f}×")  # fmt: skip
    if failures:
        print(f"unexpected statuses: {failures}")
    work = [totals[k] for k in ("next", "submit")]
    web_ms = 1000 * sum(t[0] for t in work) / max(sum(t[3] for t in work), 1)
    db_ms = 1000 * sum(t[1] for t in work) / max(sum(t[3] for t in work), 1)
    row(
        "rating CPU per request (next + submit, no concurrency)",
        f"web {web_ms:.2f} ms, database {db_ms:.2f} ms",
        f"me: web {1000 * base:.2f} ms",
        f"{web_ms / (1000 * base):.1f}x",
        "≤ 3 ms web + 1 ms database per request",
    )
    for name, prof in profiles.items():
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(args.profile)
        print(f"\n--- {name}: cumulative ---\n" + "\n".join(out.getvalue().splitlines()[6:]))
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(args.profile)
        print(f"\n--- {name}: own time ---\n" + "\n".join(out.getvalue().splitlines()[6:]))


if __name__ == "__main__":
    main()
