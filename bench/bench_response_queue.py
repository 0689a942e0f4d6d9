"""An assessor's nugget-assignment queue at TREC RAG 2024 size: is the 500th answer as quick as the first?

Setup: a throw-away PostgreSQL database next to DATABASE_URL (a SQLite file without one), migrated; a synthetic
collection of 21 topics × 1 turn, 45 response runs answering every turn (945 answers, 4 sentences each), a nugget
bank of 15 nuggets per turn (5 vital), and one blind nugget-assignment task. One assessor then judges ``--answers``
answers through the API the page uses, with Django's test client in this process: per answer, the label of each
nugget (one request per key press, as the page sends them) and the submit, which answers with the next answer.

Prints the per-answer wall and CPU time (this process, plus the PostgreSQL backend's when it runs here) of the first
50 answers (the baseline) and of the last 50, and their ratio, with the load average. Asserts nothing about time.

Usage: DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres python bench/bench_response_queue.py [--answers 500]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.common import backend_cpu, drop_database, load_average, make_database, row  # noqa: E402

TOPICS, RUNS, NUGGETS, VITAL = 21, 45, 15, 5


def configure(var_dir: str) -> str | None:
    os.environ["ECAST_VAR_DIR"] = var_dir
    os.environ.setdefault("ECAST_LOG_LEVEL", "WARNING")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ecast.settings")
    url = os.environ.get("DATABASE_URL", "")
    if url.startswith("postgres"):
        url = make_database(url, "bench_response_queue")
        os.environ["DATABASE_URL"] = url
        return url
    os.environ["DATABASE_URL"] = f"sqlite:///{var_dir}/bench.sqlite3"
    return None


def build():
    from django.contrib.auth.models import Group, User

    from evaluation.models import Nugget, NuggetBank, Response, ResponseRun, ResponseSentence
    from judging.nuggets import services
    from tests import factories

    coll = factories.collection_with_turns("RAG bench", 2024, {str(t): [f"question {t}"] for t in range(1, TOPICS + 1)})
    turns = list(factories.turns_by_id(coll).values())
    runs = ResponseRun.objects.bulk_create([ResponseRun(collection=coll, name=f"run{r:02d}") for r in range(RUNS)])
    responses = Response.objects.bulk_create(
        [Response(run=r, turn=t, text=f"Answer of {r.name} to {t.turn_id}. " * 8) for r in runs for t in turns]
    )
    ResponseSentence.objects.bulk_create(
        [
            ResponseSentence(response=resp, index=i, text=f"Sentence {i}.", citations=[f"doc{i}"])
            for resp in responses
            for i in range(4)
        ]
    )
    bank = NuggetBank.objects.create(collection=coll, name="bank")
    Nugget.objects.bulk_create(
        [
            Nugget(
                bank=bank,
                turn=t,
                position=i,
                text=f"Nugget {i} of {t.turn_id}",
                importance="vital" if i < VITAL else "okay",
            )
            for t in turns
            for i in range(NUGGETS)
        ]
    )
    task = services.task_create(collection=coll, kind="nuggets", runs=runs, bank=bank, name="bench")
    user = User.objects.create_user("bencher")
    user.groups.add(Group.objects.get_or_create(name="assessor")[0])
    return task, user


def judge(task, user, answers: int) -> list[tuple[float, float]]:
    """Judge ``answers`` answers as the page does; (wall, CPU) per answer."""
    from django.test import Client
    from django.urls import reverse

    client = Client()
    client.force_login(user)
    body = client.post(reverse("api-nuggets-task-next", args=[task.pk])).json()
    out = []
    for _ in range(answers):
        t0, c0, b0 = time.perf_counter(), time.process_time(), backend_cpu()
        item = body["item"]
        labels_url = reverse("api-nuggets-lease-labels", args=[item["lease"]])
        labels = {}
        for n in item["items"]:
            labels[str(n["id"])] = "support" if n["id"] % 3 else "not_support"
            client.post(labels_url, {"labels": {str(n["id"]): labels[str(n["id"])]}}, content_type="application/json")
        resp = client.post(
            reverse("api-nuggets-lease-complete", args=[item["lease"]]),
            {"labels": labels},
            content_type="application/json",
        )
        assert resp.status_code == 200, resp.content
        body = resp.json()
        out.append((time.perf_counter() - t0, time.process_time() - c0 + backend_cpu() - b0))
        if len(out) % 50 == 0:  # as it goes: a run cut short by a loaded machine still says something
            block = out[-50:]
            wall, cpu = (sum(x[i] for x in block) / 50 * 1000 for i in (0, 1))
            print(f"answers {len(out) - 49}–{len(out)}: {wall:.1f} ms wall, {cpu:.1f} ms CPU per answer", flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--answers", type=int, default=500)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as var_dir:
        url = configure(var_dir)
        try:
            import django

            django.setup()
            from django.core.management import call_command

            call_command("migrate", verbosity=0)
            task, user = build()
            times = judge(task, user, args.answers)
        finally:
            if url:
                from django.db import connections

                connections.close_all()
                drop_database(url)
    k = min(50, len(times) // 2)
    first, last = times[:k], times[-k:]

    def mean(xs: list[float]) -> float:
        return sum(xs) / len(xs)

    fw, fc = mean([w for w, _ in first]), mean([c for _, c in first])
    lw, lc = mean([w for w, _ in last]), mean([c for _, c in last])
    print(f"{len(times)} answers × {NUGGETS} nugget labels + submit each ({load_average()})")
    print(f"answers 1–{k}: {fw * 1000:.1f} ms wall, {fc * 1000:.1f} ms CPU per answer")
    print(f"answers {len(times) - k + 1}–{len(times)}: {lw * 1000:.1f} ms wall, {lc * 1000:.1f} ms CPU per answer")
    row(
        f"answer {len(times)} of a nugget queue (15 labels + submit)",
        f"{lw * 1000:.1f} ms wall / {lc * 1000:.1f} ms CPU",
        f"first {k}: {fw * 1000:.1f} ms wall / {fc * 1000:.1f} ms CPU",
        f"×{lw / fw:.2f} wall, ×{lc / fc:.2f} CPU",
        "no growth with the queue's length",
    )


if __name__ == "__main__":
    main()
