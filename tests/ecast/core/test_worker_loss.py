"""A worker killed mid-job (SIGKILL, by its pid) loses nothing: celery beat's sweeper re-queues the job and a new
worker finishes it with exactly the outputs of an uninterrupted run. Real workers and beat, on Redis + PostgreSQL.

Figures (jobs, units, duplicates, seconds from the kill to the finished job) go to test-artifacts/worker-loss.json.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import redis
from django.core.files import File
from django.db import connection

from ecast.celery import app
from ecast.core import jobs
from ecast.generation import services as generation
from ecast.imports import services as imports
from ecast.models import GenerationJob, GenerationTurn, ImportJob, JobRecovery, Paraphrase
from evaluation.models import Run, RunTurn
from tests import factories
from tests.concurrency import require_postgres
from tests.conftest import ARTIFACTS
from tests.ecast.pipeline.conftest import t5_config

REPO = Path(__file__).resolve().parents[3]
FIGURES = ARTIFACTS / "worker-loss.json"

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


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
        os.kill(worker.pid, signal.SIGKILL)
        killed_at, done_at_kill = time.monotonic(), done()
        worker.wait(timeout=10)
        time.sleep(0.5)
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


@pytest.fixture
def fleet(settings, tmp_path, redis_url):
    require_postgres("workers in other processes need a shared PostgreSQL database")
    settings.ECAST_JOB_STALE_SECONDS = 5
    clear_broker(redis_url)
    eager = app.conf.task_always_eager
    fleet = Fleet(tmp_path, redis_url)
    yield fleet
    app.conf.task_always_eager = eager
    settings.CELERY_TASK_ALWAYS_EAGER = eager
    fleet.stop()


def go_live(settings) -> None:
    """From here on this process queues tasks to Redis instead of running them inline."""
    settings.CELERY_TASK_ALWAYS_EAGER = False
    app.conf.task_always_eager = False


def wait_for(check, *, timeout: float, poll: float = 0.05, fleet: Fleet, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(poll)
    raise AssertionError(f"timed out waiting for {what}\n{fleet.output()}")


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


def big_run_file(path: Path, turns: int, depth: int) -> Path:
    with path.open("w") as fh:
        for t in range(turns):
            qid = f"{1 + t // 10}_{1 + t % 10}"
            fh.writelines(
                f"{qid} Q0 doc{(t * 7919 + r) % 50000} {r + 1} {1000 - r * 0.5:.2f} big\n" for r in range(depth)
            )
    return path


def record(name: str, figures: dict) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    data = json.loads(FIGURES.read_text()) if FIGURES.exists() else {}
    data[name] = figures
    FIGURES.write_text(json.dumps(data, indent=2, default=str))


def test_a_generation_job_whose_worker_is_killed_mid_job_ends_with_the_outputs_of_an_uninterrupted_run(
    fleet, settings, tiny_t5
):
    topics = {str(i): [f"What is topic {i}?", "How does it work?", "Why is it used?", "Who made it?"] for i in range(8)}
    # Context removal by the rule: the tiny model's random texts would all fail the grammar check there.
    config = {**t5_config(tiny_t5, n=2), "cr": {"backend": "rule"}}

    def outputs(job: GenerationJob) -> Counter:
        rows = Paraphrase.objects.filter(provenance__job=job.pk)
        return Counter(rows.values_list("turn__turn_id", "provenance__stage", "text"))

    ref_coll = factories.collection_with_turns(name="Uninterrupted", year=2020, conversations=topics)
    reference = generation.generation_job_create(collection=ref_coll, config=config, seed=11, chunk_size=4)
    generation.generation_job_dispatch(job_id=reference.pk)  # inline: the uninterrupted run
    reference.refresh_from_db()
    assert reference.status == GenerationJob.Status.SUCCEEDED
    expected = Counter({(t.split("_", 1)[1], stage, text): n for (t, stage, text), n in outputs(reference).items()})
    assert {t for t, _, _ in expected} - {"1"}, "later turns must have outputs too, or the comparison proves little"

    coll = factories.collection_with_turns(name="Killed", year=2021, conversations=topics)
    job = generation.generation_job_create(collection=coll, config=config, seed=11, chunk_size=4)
    go_live(settings)
    fleet.beat()
    first = fleet.worker()
    generation.generation_job_start(job=job)
    total = job.turns.count()
    done = lambda: job.turns.filter(status=GenerationTurn.Status.DONE).count()  # noqa: E731
    killed_at, done_at_kill = fleet.kill_mid_job(first, done, total, at_least=2, before_end=8)
    job = wait_for(
        lambda: GenerationJob.objects.filter(pk=job.pk, status=GenerationJob.Status.SUCCEEDED).first(),
        timeout=180, poll=0.2, fleet=fleet, what="the killed job to finish",
    )  # fmt: skip
    recovered_s = time.monotonic() - killed_at

    got = Counter({(t.split("_", 1)[1], stage, text): n for (t, stage, text), n in outputs(job).items()})
    missing, extra = expected - got, got - expected
    assert not missing and not extra, (missing, extra)
    assert job.turns.filter(status=GenerationTurn.Status.DONE).count() == total
    losses = JobRecovery.objects.filter(kind=generation.KIND, job_id=job.pk, reason=JobRecovery.Reason.WORKER_LOST)
    assert losses.count() >= 1
    health = jobs.job_health(generation.KIND, job.pk)
    assert health["last_heartbeat"] is not None and health["worker_loss_retries"] == losses.count()
    record(
        "generation",
        {
            "turns": total,
            "chunks": -(-total // 4),
            "turns_done_at_kill": done_at_kill,
            "outputs": sum(got.values()),
            "duplicates": sum(extra.values()),
            "missing": sum(missing.values()),
            "seconds_from_kill_to_done": round(recovered_s, 1),
            "recoveries": [r["detail"] for r in health["recoveries"]],
        },
    )


def test_an_import_whose_worker_is_killed_mid_file_restarts_from_its_upload_and_writes_every_row_once(
    fleet, settings, tmp_path
):
    turns, depth = 600, 1000
    path = big_run_file(tmp_path / "big.run", turns, depth)
    options = {"create_turns": "true", "name": "big"}

    ref_coll = factories.collection(name="Uninterrupted", year=2020)
    reference = imports.import_file(kind="run", path=path, collection=ref_coll, options=options)
    assert reference.status == ImportJob.Status.SUCCEEDED, reference.errors

    def rows(coll) -> Counter:
        return Counter(
            (qid, doc)
            for qid, docs in RunTurn.objects.filter(run__collection=coll).values_list("turn__turn_id", "doc_ids")
            for doc in docs
        )

    coll = factories.collection(name="Killed", year=2021)
    go_live(settings)
    fleet.beat()
    first = fleet.worker()
    with path.open("rb") as fh:
        job = imports.import_job_start(kind="run", uploaded=File(fh, name="big.run"), collection=coll, options=options)
    wait_for(
        lambda: ImportJob.objects.filter(pk=job.pk, status=ImportJob.Status.RUNNING, progress_done__gt=0).exists(),
        timeout=120, fleet=fleet, what="the import to be under way",
    )  # fmt: skip
    os.kill(first.pid, signal.SIGKILL)
    killed_at = time.monotonic()
    first.wait(timeout=10)
    at_kill = ImportJob.objects.get(pk=job.pk)
    assert at_kill.status == ImportJob.Status.RUNNING and not Run.objects.filter(collection=coll).exists()

    fleet.worker()
    job = wait_for(
        lambda: ImportJob.objects.filter(pk=job.pk).exclude(status=ImportJob.Status.RUNNING).first(),
        timeout=180, poll=0.2, fleet=fleet, what="the killed import to finish",
    )  # fmt: skip
    recovered_s = time.monotonic() - killed_at
    assert job.status == ImportJob.Status.SUCCEEDED, job.errors
    ignore = {"run_id"}  # each import makes its own run
    assert {k: v for k, v in job.counts.items() if k not in ignore} == {
        k: v for k, v in reference.counts.items() if k not in ignore
    }
    expected, got = rows(ref_coll), rows(coll)
    assert sum(got.values()) == turns * depth
    assert got == expected and max(got.values()) == 1
    assert Run.objects.filter(collection=coll).count() == 1
    health = jobs.job_health(imports.KIND, job.pk)
    assert health["worker_loss_retries"] >= 1
    record(
        "import",
        {
            "lines": turns * depth,
            "megabytes": round(path.stat().st_size / 1e6, 1),
            "lines_read_at_kill": at_kill.progress_done,
            "rows_written": sum(got.values()),
            "duplicates": sum((got - expected).values()),
            "missing": sum((expected - got).values()),
            "seconds_from_kill_to_done": round(recovered_s, 1),
            "recoveries": [r["detail"] for r in health["recoveries"]],
        },
    )


def test_a_killed_pool_process_has_its_import_redelivered_at_once_without_waiting_for_the_sweeper(
    fleet, settings, tmp_path
):
    path = big_run_file(tmp_path / "big.run", 400, 1000)
    coll = factories.collection(name="Killed child", year=2021)
    go_live(settings)
    master = fleet.prefork_worker()  # no beat: only the broker's redelivery can bring the task back
    with path.open("rb") as fh:
        job = imports.import_job_start(
            kind="run", uploaded=File(fh, name="big.run"), collection=coll, options={"create_turns": "true"}
        )
    wait_for(
        lambda: ImportJob.objects.filter(pk=job.pk, status=ImportJob.Status.RUNNING, progress_done__gt=0).exists(),
        timeout=120, fleet=fleet, what="the import to be under way",
    )  # fmt: skip
    os.kill(pool_child(master.pid), signal.SIGKILL)
    killed_at = time.monotonic()
    job = wait_for(
        lambda: ImportJob.objects.filter(pk=job.pk).exclude(status=ImportJob.Status.RUNNING).first(),
        timeout=120, poll=0.2, fleet=fleet, what="the redelivered import to finish",
    )  # fmt: skip
    assert job.status == ImportJob.Status.SUCCEEDED, job.errors
    assert RunTurn.objects.filter(run__collection=coll).count() == 400
    health = jobs.job_health(imports.KIND, job.pk)
    assert [r["detail"] for r in health["recoveries"]] == ["the broker redelivered a unit of work"]
    record(
        "import, pool process killed",
        {"lines": 400_000, "seconds_from_kill_to_done": round(time.monotonic() - killed_at, 1)},
    )


def worker_backends() -> set[int]:
    """PostgreSQL backends of this test database other than this test's own connection."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
            " AND backend_type = 'client backend'"
        )
        return {pid for (pid,) in cursor.fetchall()}


def sweep_in_worker() -> None:
    """Run one task that reads the database in the worker, and wait for it (its error, if any, is raised here)."""
    app.send_task("ecast.jobs_sweep").get(timeout=120)
    time.sleep(0.5)  # the worker closes what it closes after the result is stored


def test_a_worker_keeps_its_database_connection_from_task_to_task_and_replaces_one_the_database_dropped(
    fleet, settings
):
    others = worker_backends()
    go_live(settings)
    fleet.prefork_worker()
    sweep_in_worker()
    kept = worker_backends() - others
    assert len(kept) == 1, f"the worker holds {len(kept)} connections between tasks\n{fleet.output()}"
    for _ in range(4):
        sweep_in_worker()
    assert worker_backends() - others == kept, "each task opened a connection of its own"
    # The database drops the kept connection (a restart, an administrator): the next task checks it before use
    # and reconnects, instead of failing on it.
    (pid,) = kept
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
    wait_for(lambda: pid not in worker_backends(), timeout=10, fleet=fleet, what="the backend to end")
    sweep_in_worker()
    replaced = worker_backends() - others
    assert len(replaced) == 1 and pid not in replaced, fleet.output()
