"""Load test of crowd rating: simulated raters hammer the real HTTP endpoints of a real server process.

Setup: a fresh PostgreSQL database (created and dropped here), Redis as cache, a campaign of ``--items`` paraphrase
items with N raters per item, ``--raters`` rater accounts with API tokens. A gunicorn server (gthread) is started on
127.0.0.1 at a free port. Each simulated rater loops until the duration ends or its queue is empty:
GET /api/rating/me/ (baseline: trivial authenticated endpoint), POST …/next/, POST …/submit/ (5% of submits are sent
twice with the same idempotency key, as a double click would). Loopback only.

Prints requests/s, p50/p95/p99 latency of "next" and "submit" and their ratio to the baseline's, and checks the
invariants in the database afterwards: 0 lost ratings (every 201 is stored), 0 duplicates, no item above N.
Asserts nothing about time.

Usage: DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres REDIS_URL=redis://127.0.0.1:6379/4 \
       python bench/bench_rating_load.py [--duration 60] [--raters 50] [--items 3000] [--n 5] [--workers 2] [--think 5]
                                         [--procs 4]
With --think, each rater spends 0.5–1.5 × that many seconds on an item (500 raters × 5 s is the issue's target);
CPU seconds of the gunicorn processes and of the PostgreSQL backends are divided by the requests served, and the
share of the cores that everything else on the machine took meanwhile is printed beside them (on a shared machine it
decides the latency). With --server-times each request's latency is split, from the server's own times of the same
request, into the wait before a gunicorn thread began it, the time inside it and the time after.
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import os
import random
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.common import (  # noqa: E402
    cpu_seconds,
    drop_database,
    load_average,
    machine_cpu,
    make_database,
    postgres_backends_cpu,
    postgres_cpu,
    row,
)


def var_dir() -> str:
    """The server's files (static files, the request times of --server-times) for this run, removed at the end."""
    return f"/tmp/bench-rating-{os.getpid()}"


# gunicorn hooks (its config file, with --server-times): each worker writes, per request, the bench's request id, the
# wall-clock time its thread began the request (headers parsed) and the time the response was written.
SERVER_HOOKS = """
import os, threading, time

_lock, _files = threading.Lock(), {}


def pre_request(worker, req):
    req.bench_started = time.time()


def post_request(worker, req, environ, resp):
    ended = time.time()
    rid = next((v for k, v in req.headers if k == "X-BENCH-ID"), None)
    if rid is None:
        return
    with _lock:
        out = _files.get(os.getpid())
        if out is None:
            out = _files[os.getpid()] = open(f"{os.environ['ECAST_VAR_DIR']}/times-{os.getpid()}.log", "a")
        out.write(f"{rid} {req.bench_started} {ended}\\n")
        out.flush()
"""


def endpoint(path: str) -> str:
    return "me" if path.endswith("/me/") else "next" if path.endswith("/next/") else "submit"


def latency_split(trace: list[tuple[str, str, float, float]], server_dir: str) -> dict[str, dict[str, list[float]]]:
    """Each request's latency in three parts, per endpoint: before a server thread began it (connecting, the
    listen backlog, gunicorn's poller and the wait for a free thread), inside it (the application, as the access log
    would time it), and after (the response on its way back and the load process's thread waking up to read it)."""
    server: dict[str, tuple[float, float]] = {}
    for log in Path(server_dir).glob("times-*.log"):
        for line in log.read_text().splitlines():
            rid, started, ended = line.split()
            server[rid] = (float(started), float(ended))
    parts: dict[str, dict[str, list[float]]] = {k: {"before": [], "inside": [], "after": []} for k in ENDPOINTS}
    for rid, path, sent, answered in trace:
        if rid in server:
            started, ended = server[rid]
            split = parts[endpoint(path)]
            split["before"].append(started - sent)
            split["inside"].append(ended - started)
            split["after"].append(answered - ended)
    return parts


ENDPOINTS = ("me", "next", "submit")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def create_schema() -> None:
    """The schema the product's migrations build, with the statistics settings they give the item table (the
    lease statement's plan depends on them)."""
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def seed_data(n_items: int, n_raters: int, n: int) -> tuple[int, list[str]]:
    """Collection, paraphrases, campaign and raters with tokens, written through the ORM of this process."""
    from django.contrib.auth.models import Group, User
    from rest_framework.authtoken.models import Token

    from ecast.core.permissions import RATER
    from ecast.models import Collection, Conversation, Paraphrase, Turn
    from judging.rating import services

    coll = Collection.objects.create(name="Bench", year=2020)
    turns_per_topic = 10
    topics = max(1, n_items // turns_per_topic)
    convs = Conversation.objects.bulk_create(
        [Conversation(collection=coll, topic_id=str(t), title=f"Topic {t}") for t in range(topics)]
    )
    turns = Turn.objects.bulk_create(
        [
            Turn(conversation=c, collection=coll, number=k, turn_id=f"{c.topic_id}_{k}", raw_utterance=f"q {k}?",
                 manual_rewrite=f"manual q {c.topic_id} {k}?", canonical_response_text="A canonical passage. " * 8)
            for c in convs
            for k in range(1, turns_per_topic + 1)
        ]
    )  # fmt: skip
    Paraphrase.objects.bulk_create(
        [
            Paraphrase(turn=t, kind="manual", text=f"paraphrase of {t.turn_id}", origin="generated",
                       status="approved", provenance={"source": "automatic" if i % 2 else "manual"})
            for i, t in enumerate(turns)
        ]
    )  # fmt: skip
    campaign = services.campaign_create(
        name="Bench campaign", collections=[coll], sample_size=n_items, seed=1, raters_per_item=n, lease_seconds=600
    )
    group, _ = Group.objects.get_or_create(name=RATER)
    tokens = []
    for i in range(n_raters):
        u = User.objects.create_user(username=f"bench{i}", password=None)
        u.groups.add(group)
        tokens.append(Token.objects.create(user=u).key)
    return campaign.pk, tokens


class Client:
    """One keep-alive HTTP connection with token auth."""

    def __init__(self, port: int, token: str):
        self.port, self.token = port, token
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        # (request id, path, wall-clock time sent, wall-clock time answered) of each call, matched with the server's
        # own times of the same request (``SERVER_HOOKS``) to tell where its latency went.
        self.trace: list[tuple[str, str, float, float]] = []

    def call(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict | None, float]:
        data = json.dumps(body).encode() if body is not None else None
        request_id = f"{self.token[:12]}-{len(self.trace)}"
        headers = {"Authorization": f"Token {self.token}", "Accept": "application/json", "X-Bench-Id": request_id}
        if data is not None:
            headers["Content-Type"] = "application/json"
        sent = time.time()
        t0 = time.perf_counter()
        for attempt in range(2):
            try:
                self.conn.request(method, path, body=data, headers=headers)
                resp = self.conn.getresponse()
                raw = resp.read()
                break
            except (http.client.HTTPException, ConnectionError):
                if attempt:
                    raise
                self.conn.close()
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        elapsed = time.perf_counter() - t0
        self.trace.append((request_id, path, sent, sent + elapsed))
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = None
        return resp.status, parsed, elapsed


def warm_up(port: int, token: str, patience: float = 300.0) -> None:
    """Three answered calls. On a crowded machine a gunicorn worker may take longer to load the app than a call's
    timeout: the calls are repeated until answered rather than left to fail."""
    deadline, answered = time.perf_counter() + patience, 0
    while answered < 3 and time.perf_counter() < deadline:
        try:
            status, _, _ = Client(port, token).call("GET", "/api/rating/me/")
            answered += status == 200
        except (OSError, http.client.HTTPException):
            time.sleep(0.5)


def rater_loop(
    client: Client, campaign_id: int, deadline: float, stats: dict, lock: threading.Lock, think: float = 0.0
) -> None:
    rng = random.Random(client.token)
    local: dict[str, list] = {"me": [], "next": [], "submit": [], "created": [], "errors": [], "trace": []}
    if think:  # raters arrive spread over one think time, not all in the same instant
        time.sleep(rng.uniform(0, think))
    while time.perf_counter() < deadline:
        status, _, t = client.call("GET", "/api/rating/me/")
        local["me"].append(t)
        status, body, t = client.call("POST", f"/api/rating/campaigns/{campaign_id}/next/")
        local["next"].append(t)
        if status != 200:
            local["errors"].append(("next", status))
            continue
        a = body["assignment"]
        if a is None:
            break
        values = {m["key"]: rng.randint(1, 5) for m in a["measures"]}
        if think:  # reading the item and answering: 0.5–1.5 × the think time
            time.sleep(rng.uniform(0.5, 1.5) * think)
            if time.perf_counter() >= deadline:
                break
        payload = {"values": values, "idempotency_key": uuid.uuid4().hex, "seconds_on_task": rng.uniform(5, 60)}
        repeats = 2 if rng.random() < 0.05 else 1
        for _ in range(repeats):
            status, body, t = client.call("POST", f"/api/rating/assignments/{a['assignment_id']}/submit/", payload)
            local["submit"].append(t)
            if status == 201:
                local["created"].append(body["rating_id"])
            elif status != 200:
                local["errors"].append(("submit", status))
    local["trace"] = client.trace
    with lock:
        for k, v in local.items():
            stats[k].extend(v)


def load_slice(port: int, tokens: list[str], campaign_id: int, deadline: float, think: float) -> dict[str, list]:
    """One load process: a thread per rater token until ``deadline``; returns the merged timings."""
    stats: dict[str, list] = {k: [] for k in ("me", "next", "submit", "created", "errors", "cpu", "trace")}
    lock = threading.Lock()
    cpu0 = time.process_time()
    threads = [
        threading.Thread(target=rater_loop, args=(Client(port, tok), campaign_id, deadline, stats, lock, think))
        for tok in tokens
    ]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    stats["cpu"].append(time.process_time() - cpu0)  # this process's threads: CPU the server did not get
    return stats


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.array(values) * 1000, q)) if values else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--duration", type=float, default=60.0, help="seconds of load (default 60)")
    ap.add_argument("--raters", type=int, default=50)
    ap.add_argument("--items", type=int, default=3000)
    ap.add_argument("--n", type=int, default=5, help="raters per item")
    ap.add_argument("--workers", type=int, default=2, help="gunicorn worker processes")
    ap.add_argument("--threads", type=int, default=16, help="gunicorn threads per worker")
    ap.add_argument("--think", type=float, default=0.0, help="seconds a rater spends on an item (0.5–1.5 × this)")
    ap.add_argument("--keep-alive", type=int, default=2, help="gunicorn keep-alive seconds")
    ap.add_argument(
        "--server-times",
        action="store_true",
        help="split each request's latency: before a gunicorn thread began it, inside, after",
    )
    ap.add_argument("--procs", type=int, default=4, help="load-generating processes the raters are spread over")
    args = ap.parse_args()

    base = os.environ.get("DATABASE_URL", "")
    if not base.startswith("postgres") or not os.environ.get("REDIS_URL"):
        # `make bench` runs every script: without PostgreSQL and Redis this one says so and steps aside.
        print("skipped: needs DATABASE_URL on PostgreSQL (it creates and drops its own database there) and REDIS_URL")
        return
    db_url = make_database(base, "bench_rating")
    try:
        run(args, db_url)
    finally:
        drop_database(db_url)
        shutil.rmtree(var_dir(), ignore_errors=True)


def run(args: argparse.Namespace, db_url: str) -> None:
    """Seed, serve, load, then check the invariants in the database."""
    settings_env = {
        "DATABASE_URL": db_url,
        "DJANGO_SETTINGS_MODULE": "ecast.settings",
        "DJANGO_DEBUG": "0",
        "DJANGO_SECRET_KEY": "bench-" + uuid.uuid4().hex,
        "ECAST_VAR_DIR": var_dir(),
    }
    env = {**os.environ, **settings_env}
    os.environ.update(settings_env)
    server = None
    try:
        create_schema()
        t0 = time.perf_counter()
        campaign_id, tokens = seed_data(args.items, args.raters, args.n)
        print(f"setup: {args.items} items, N={args.n}, {args.raters} raters in {time.perf_counter() - t0:.1f} s")
        port = free_port()
        hooks = f"{settings_env['ECAST_VAR_DIR']}/gunicorn_hooks.py"
        os.makedirs(settings_env["ECAST_VAR_DIR"], exist_ok=True)
        Path(hooks).write_text(SERVER_HOOKS)
        server = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "ecast.wsgi:application", "--bind", f"127.0.0.1:{port}",
             "--workers", str(args.workers), "--threads", str(args.threads), "--worker-class", "gthread",
             "--log-level", "warning", "--keep-alive", str(args.keep_alive)]
            + (["--config", hooks] if args.server_times else []),
            cwd=REPO, env=env,
        )  # fmt: skip
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.2)
        else:
            sys.exit("server did not start")
        # Warm-up: every worker process loads the app on its first requests; keep that out of the figures.
        warm = [threading.Thread(target=warm_up, args=(port, tok)) for tok in tokens[:16]]
        for th in warm:
            th.start()
        for th in warm:
            th.join()
        stats: dict[str, list] = {
            "me": [],
            "next": [],
            "submit": [],
            "created": [],
            "errors": [],
            "cpu": [],
            "trace": [],
        }
        db_name = urllib.parse.urlparse(db_url).path.lstrip("/")
        procs = max(1, min(args.procs, len(tokens)))
        slices = [tokens[i::procs] for i in range(procs)]
        # (gunicorn master and workers, the PostgreSQL backends serving the bench database)
        cpu_before = cpu_seconds(server.pid), postgres_cpu(db_name)
        backends_before = postgres_backends_cpu(db_name)
        machine_before = machine_cpu()
        start = time.perf_counter()
        deadline = start + args.duration  # CLOCK_MONOTONIC: the same clock in every load process
        # The simulated raters are spread over several processes: hundreds of threads in one interpreter queue for
        # its GIL, and that wait would be measured as the server's latency.
        with multiprocessing.get_context("fork").Pool(procs) as pool:
            jobs = [(port, part, campaign_id, deadline, args.think) for part in slices]
            for timings in pool.starmap(load_slice, jobs):
                for key, values in timings.items():
                    stats[key].extend(values)
        wall = time.perf_counter() - start
        cpu_after = cpu_seconds(server.pid), postgres_cpu(db_name)
        backends_after = postgres_backends_cpu(db_name)
        machine_after = machine_cpu()
    finally:
        if server is not None:
            server.terminate()
            try:
                server.wait(30)
            except subprocess.TimeoutExpired:  # a worker still busy on a crowded machine
                server.kill()
                server.wait()

    from django.db import connection
    from django.db.models import Count

    from judging.models import Rating, RatingAssignment, RatingItem

    total = len(stats["me"]) + len(stats["next"]) + len(stats["submit"])
    stored = set(Rating.objects.filter(campaign_id=campaign_id).values_list("pk", flat=True))
    created = stats["created"]
    lost = len(set(created) - stored)
    dup_created = len(created) - len(set(created))
    unexpected = len(stored - set(created))
    dup_pairs = (
        RatingAssignment.objects.filter(campaign_id=campaign_id).values("item_id", "rater_id")
        .annotate(c=Count("pk")).filter(c__gt=1).count()
    )  # fmt: skip
    per_item = list(
        Rating.objects.filter(campaign_id=campaign_id)
        .values("item_id")
        .annotate(c=Count("pk"))
        .values_list("c", flat=True)
    )
    over = sum(1 for c in per_item if c > args.n)
    mismatched = sum(
        1 for it in RatingItem.objects.filter(campaign_id=campaign_id).annotate(c=Count("ratings"))
        if it.c != it.completed_count
    )  # fmt: skip
    finished = sum(1 for c in per_item if c == args.n)
    connection.close()

    print(
        f"\nload: {args.raters} raters × {args.duration:.0f} s (ran {wall:.1f} s), think time {args.think:.1f} s, "
        f"gunicorn {args.workers}×{args.threads} threads, keep-alive {args.keep_alive} s, PostgreSQL + Redis, "
        f"loopback, raters spread over {args.procs} load processes; {load_average()}"
    )
    web_cpu, db_cpu = (after - before for after, before in zip(cpu_after, cpu_before, strict=True))
    per_request = 1000 * web_cpu / max(total, 1)
    print(
        f"CPU per request: web {per_request:.1f} ms (gunicorn processes), database "
        f"{1000 * db_cpu / max(total, 1):.1f} ms (its PostgreSQL backends), over {total} requests"
    )
    # postgres_cpu also counts every backend of any database that ended meanwhile (the server reaps them all): on a
    # machine where others run tests, part of it is theirs. The bench database's own live backends bound it below.
    own_db = sum(cpu - backends_before.get(pid, 0.0) for pid, cpu in backends_after.items())
    print(
        f"  database, the bench database's backends alive at the end only (a lower bound: no other database, no "
        f"backend that ended): {1000 * own_db / max(total, 1):.2f} ms per request over {len(backends_after)} backends"
    )
    # The simulated raters run on the same cores as the server: what they spent is CPU the server could not use.
    driver_cpu = sum(stats["cpu"])
    cores = os.cpu_count() or 1
    print(
        f"CPU of the {cores} cores used: web {web_cpu / wall / cores:.0%}, database {db_cpu / wall / cores:.0%}, "
        f"the load processes themselves {driver_cpu / wall / cores:.0%} ({1000 * driver_cpu / max(total, 1):.1f} ms "
        "per request)"
    )
    # What else ran meanwhile: on a shared machine the other processes' CPU (and the hypervisor's steal) is what the
    # server did not get, and it is what makes two runs of the same code differ several-fold in latency.
    busy, stolen = (after - before for after, before in zip(machine_after, machine_before, strict=True))
    others = max(busy - web_cpu - db_cpu - driver_cpu, 0.0)
    print(
        f"cores busy {busy / wall / cores:.0%}: this run {(web_cpu + db_cpu + driver_cpu) / wall / cores:.0%}, "
        f"everything else (Redis, other people's work) {others / wall / cores:.0%}; stolen by the hypervisor "
        f"{stolen / wall / cores:.0%}"
    )
    errors = sorted(set(stats["errors"]))[:5]
    print(
        f"requests: {total} ({total / wall:.0f} req/s); ratings stored {len(stored)} ({len(stored) / wall:.0f}/s); "
        f"finished items {finished}/{args.items}; errors {len(stats['errors'])} {errors}"
    )
    print(f"{'endpoint':<22}{'count':>8}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}{'p50 ratio':>11}")
    base50 = pct(stats["me"], 50)
    for name, key in (("me (baseline)", "me"), ("next item", "next"), ("submit", "submit")):
        vals = stats[key]
        print(f"{name:<22}{len(vals):>8}{pct(vals, 50):>9.1f}{pct(vals, 95):>9.1f}{pct(vals, 99):>9.1f}"
              f"{pct(vals, 50) / base50:>10.2f}×")  # fmt: skip
    if args.server_times:
        # Where each request's latency went, from the server's own times of the same requests (same machine clock).
        parts = latency_split(stats["trace"], settings_env["ECAST_VAR_DIR"])
        print(f"{'where the time went':<22}{'before p50':>11}{'p95':>8}{'inside p50':>12}{'p95':>8}{'after p50':>11}"
              f"{'p95':>8}  (ms; before: connect, backlog, poller, wait for a thread)")  # fmt: skip
        for key in ENDPOINTS:
            b, i, a = (parts[key][p] for p in ("before", "inside", "after"))
            print(f"{key:<22}{pct(b, 50):>11.1f}{pct(b, 95):>8.1f}{pct(i, 50):>12.1f}{pct(i, 95):>8.1f}"
                  f"{pct(a, 50):>11.1f}{pct(a, 95):>8.1f}")  # fmt: skip
    work_ms = pct(stats["next"], 95), pct(stats["submit"], 95)
    row(
        f"rating next + submit, {args.raters} raters, think {args.think:.0f} s",
        f"p95 next {work_ms[0]:.0f} ms, submit {work_ms[1]:.0f} ms; {per_request:.1f} ms web CPU per request",
        f"p95 of /api/rating/me/ {pct(stats['me'], 95):.0f} ms",
        f"{max(work_ms) / pct(stats['me'], 95):.1f}x",
        "p95 ≤ 150 ms at 500 raters, ≤ 5 ms CPU per request",
    )
    print(f"invariants: lost ratings {lost}, duplicate ratings {dup_created + unexpected}, duplicate (item, rater) "
          f"{dup_pairs}, items above N {over}, count mismatches {mismatched}")  # fmt: skip


if __name__ == "__main__":
    main()
