"""First-hit and warm time of every page of the demo, as an admin sees them (and the rater's and assessor's pages).

Setup: a fresh database (a throw-away PostgreSQL database next to DATABASE_URL when it is set, else a SQLite file
in a temporary folder), migrated, then ``load_demo`` with background jobs run eagerly in this process, so every
analysis the demo starts has finished before the first page is asked for. The cache is Redis when REDIS_URL is set
(flushed first is NOT done: use a database number of your own), else a file cache in the temporary folder.

The pages: every URL pattern of the project outside /api/, /django-admin/ and the log-in/out, with the demo's ids
filled in. Ids come from the pages themselves: starting from the patterns without parameters, each page's links
are followed (breadth first) and the first link that resolves to a pattern not yet measured is measured; patterns
no link reaches are listed at the end. Requests go through Django's test ``Client`` in this one process (no HTTP
server, no network): "first hit" is the first request to the pattern in this process, after the demo was loaded,
so shared costs (an import, a template compiled once) land on the first page that needs them, as they would on a
fresh web worker; "warm" is the same URL asked again right after. Each figure is wall time and this process's CPU
time (plus the PostgreSQL backend's CPU time when it runs on this machine).

Prints one table sorted by first-hit time and marks the pages above 1 s. Asserts nothing about time.

Usage: python bench/bench_pages.py [--profile /path/] [--max-pages N]
       DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres REDIS_URL=redis://127.0.0.1:6379/12 \
       python bench/bench_pages.py
With --profile PATH (repeatable), that URL's first hit runs under cProfile and its 30 costliest calls (cumulative)
are printed after the table.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import logging
import os
import pstats
import re
import sys
import tempfile
import time
import urllib.parse
from collections import deque
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.common import backend_cpu, drop_database, load_average, make_database  # noqa: E402

LIMIT_S = 1.0
SKIP_PREFIXES = ("/api/", "/django-admin/", "/accounts/", "/static/", "/favicon.ico")
HREF = re.compile(r"""(?:href|data-url|data-poll)\s*=\s*["']([^"'#]+)""")


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (or the platform's processor string)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or "unknown CPU"


def configure(var_dir: str) -> str | None:
    """Environment for a fresh, eager demo; returns the throw-away PostgreSQL URL when there is one."""
    os.environ["ECAST_VAR_DIR"] = var_dir
    os.environ["ECAST_TASKS_EAGER"] = "1"
    # Debounced analyses run at once: the demo's analyses are finished before the pages are asked for.
    os.environ["ECAST_ANALYSIS_DEBOUNCE_SECONDS"] = "0"
    os.environ["ECAST_PERMUTATION_RESCORE_DEBOUNCE_S"] = "0"
    os.environ.setdefault("ECAST_LOG_LEVEL", "WARNING")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ecast.settings")
    url = os.environ.get("DATABASE_URL", "")
    if url.startswith("postgres"):
        url = make_database(url, "bench_pages")
        os.environ["DATABASE_URL"] = url
        return url
    return None


def patterns() -> list[str]:
    """Every page route of the project (the resolver's route strings, e.g. ``runs/<int:pk>/``)."""
    from django.urls import URLPattern, URLResolver, get_resolver

    out: list[str] = []

    def walk(entries: list, prefix: str) -> None:
        for entry in entries:
            if isinstance(entry, URLResolver):
                walk(entry.url_patterns, prefix + str(entry.pattern))
            elif isinstance(entry, URLPattern):
                out.append(prefix + str(entry.pattern))

    walk(get_resolver().url_patterns, "")
    return [p for p in out if not ("/" + p).startswith(SKIP_PREFIXES) and not p.startswith("^")]


def route_of(path: str) -> str | None:
    """The page a path shows: its pattern, with the values of its text parameters (``evaluation/analyses/<kind>/``
    shows a different page per kind) but not its ids; None outside the site."""
    from django.urls import Resolver404, resolve

    if path.startswith(SKIP_PREFIXES):
        return None
    try:
        match = resolve(path)
    except Resolver404:
        return None
    texts = [f"{k}={v}" for k, v in sorted(match.kwargs.items()) if isinstance(v, str)]
    return match.route + (f" [{', '.join(texts)}]" if texts else "")


def timed(client, path: str, profile: cProfile.Profile | None = None) -> tuple[int, str, float, float]:
    """(status, content type, wall s, CPU s) of one GET."""
    t0, c0, b0 = time.perf_counter(), time.process_time(), backend_cpu()
    if profile is not None:
        profile.enable()
    response = client.get(path)
    if profile is not None:
        profile.disable()
    body = b"".join(response.streaming_content) if response.streaming else response.content
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0 + backend_cpu() - b0
    client.last_body = body  # type: ignore[attr-defined]
    return response.status_code, response.get("Content-Type", "").split(";")[0], wall, cpu


def crawl(
    client, seeds: list[str], who: str, results: list[dict], seen_routes: set[tuple[str, str]], args, prof
) -> None:
    """Breadth-first over the links of the pages, one measured URL per route pattern not measured before."""
    queue = deque(seeds)
    queued = set(seeds)
    while queue and len(results) < args.max_pages:
        path = queue.popleft()
        route = route_of(urllib.parse.urlsplit(path).path)
        if route is None or (who, route) in seen_routes:
            continue
        seen_routes.add((who, route))
        profile = cProfile.Profile() if path in prof else None
        status, ctype, first, first_cpu = timed(client, path, profile)
        body = client.last_body
        _, _, warm, warm_cpu = timed(client, path)
        if profile is not None:
            out = io.StringIO()
            pstats.Stats(profile, stream=out).sort_stats("cumulative").print_stats(30)
            args.profiles.append((path, out.getvalue()))
        results.append(
            {"who": who, "path": path, "route": route, "status": status, "type": ctype, "first": first,
             "first_cpu": first_cpu, "warm": warm, "warm_cpu": warm_cpu}
        )  # fmt: skip
        if ctype != "text/html":
            continue
        for href in HREF.findall(body.decode("utf-8", "replace")):
            href = href.replace("&amp;", "&")
            parts = urllib.parse.urlsplit(href)
            if parts.scheme or parts.netloc or not parts.path.startswith("/"):
                continue
            target = parts.path + (f"?{parts.query}" if parts.query else "")
            if target not in queued:
                queued.add(target)
                queue.append(target)


def add_budget_simulation() -> None:
    """A budget simulation of the demo's runs (the demo has every other kind of analysis), computed at once."""
    from ecast.models import Collection
    from evaluation.analyses.demo import demo_version
    from evaluation.analyses.services import budget as budget_services
    from evaluation.models import Run
    from evaluation.permutations.demo import DEMO_COLLECTION

    collection = Collection.objects.get(name=DEMO_COLLECTION)
    runs = list(Run.objects.filter(collection=collection, test_set__isnull=True).order_by("name"))
    budget_services.budget_simulation_create(
        collection=collection, runs=runs, qrels_version=demo_version(collection), name="Bench: budget simulation"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--profile", action="append", default=[], help="a URL whose first hit runs under cProfile")
    parser.add_argument("--max-pages", type=int, default=500)
    args = parser.parse_args()
    args.profiles = []
    var = tempfile.TemporaryDirectory(prefix="bench-pages-")
    pg_url = configure(var.name)
    try:
        run(args)
    finally:
        if pg_url:
            from django.db import connections

            connections.close_all()
            drop_database(pg_url)
        var.cleanup()


def run(args) -> None:
    t0, c0 = time.perf_counter(), time.process_time()
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client

    print(f"{cpu_model()}; {load_average()}")
    print(f"database {connection.vendor}; cache {settings.CACHES['default']['BACKEND'].rsplit('.', 1)[-1]}")
    print(f"django.setup: {time.perf_counter() - t0:.2f} s (CPU {time.process_time() - c0:.2f} s)")
    t0, c0 = time.perf_counter(), time.process_time()
    call_command("migrate", verbosity=0)
    print(f"migrate: {time.perf_counter() - t0:.1f} s (CPU {time.process_time() - c0:.1f} s)")
    t0, c0 = time.perf_counter(), time.process_time()
    call_command("load_demo", stdout=io.StringIO())
    add_budget_simulation()
    print(f"load_demo with eager jobs: {time.perf_counter() - t0:.1f} s (CPU {time.process_time() - c0:.1f} s)")
    print(f"before the pages: {load_average()}")
    # A refused request (403, 405) is expected here and logged by Django at WARNING: keep the table readable.
    logging.getLogger("django.request").setLevel(logging.ERROR)

    # A web process loads the URL configuration (and so imports every view module) on its first request.
    t0, c0 = time.perf_counter(), time.process_time()
    all_routes = patterns()
    print(
        f"URL configuration (every view module imported): {time.perf_counter() - t0:.2f} s "
        f"(CPU {time.process_time() - c0:.2f} s), paid by a web process's first request"
    )
    seeds = ["/" + p for p in all_routes if "<" not in p]
    results: list[dict] = []
    seen: set[tuple[str, str]] = set()
    t0 = time.perf_counter()
    for who, seed_list in (("admin", seeds), ("rater1", ["/"]), ("assessor1", ["/"])):
        client = Client()
        client.force_login(User.objects.get(username=who))
        crawl(client, seed_list, who, results, seen, args, args.profile)
    total = time.perf_counter() - t0

    print(f"\n{len(results)} pages in {total:.1f} s; {load_average()}")
    print("Django test Client in this process; first = first request of the route, warm = the same URL again.")
    print(f"{'first s':>8} {'cpu':>6} {'warm s':>7} {'cpu':>6}  code  who        path")
    for r in sorted(results, key=lambda r: -r["first"]):
        mark = " >1s" if r["first"] > LIMIT_S or r["warm"] > LIMIT_S else ""
        kind = "" if r["type"] == "text/html" else f" [{r['type']}]"
        print(
            f"{r['first']:8.2f} {r['first_cpu']:6.2f} {r['warm']:7.2f} {r['warm_cpu']:6.2f}  {r['status']:4d}  "
            f"{r['who']:10s} {r['path']}{kind}{mark}"
        )
    slow = [r for r in results if r["first"] > LIMIT_S or r["warm"] > LIMIT_S]
    print(f"\n{len(slow)} of {len(results)} pages above {LIMIT_S:.0f} s (first or warm hit); {load_average()}")
    reached = {r["route"].split(" [", 1)[0] for r in results}
    missed = [p for p in all_routes if p not in reached]
    print(f"{len(missed)} page routes no demo link reached (actions by POST, or no demo data): {', '.join(missed)}")
    for path, text in args.profiles:
        print(f"\ncProfile of the first hit of {path}:\n{text}")


if __name__ == "__main__":
    main()
