"""A permutation experiment fanned out to a real Celery worker over Redis (PostgreSQL so both processes share it)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from ecast.celery import app
from evaluation.models import PermutationExperiment, PermutationResult
from evaluation.permutations import services as svc
from tests.concurrency_helpers import require_postgres
from tests.worker_helpers import wait_until

from .helpers import labelled_collection

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_runs_the_chunks_and_scores_the_experiment(settings, tmp_path, redis_url):
    require_postgres("the worker subprocess needs a shared PostgreSQL database")
    settings.CELERY_TASK_ALWAYS_EAGER = False
    app.conf.task_always_eager = False
    db = connection.settings_dict
    env = dict(
        os.environ,
        DJANGO_SETTINGS_MODULE="ecast.settings",
        DATABASE_URL=f"postgres://{db['USER']}:{db['PASSWORD'] or ''}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}",
        ECAST_CACHE_DIR=str(tmp_path / "cache"),
        ECAST_VAR_DIR=str(tmp_path / "var"),
        ECAST_TASKS_EAGER="0",
    )
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "ecast", "worker", "-c", "2", "--loglevel", "WARNING",
         "--without-gossip", "--without-mingle", "-n", f"perm-test-{os.getpid()}@%h"],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        coll, version = labelled_collection()
        exp = svc.permutation_experiment_create(
            collection=coll, name="worker", qrels_version=version, systems=["current", "cu"], k=5, seed=3
        )

        def finished():
            exp.refresh_from_db()
            return exp.status in ("succeeded", "failed")

        wait_until(finished, timeout=90, poll=0.3, what="the experiment to finish")
        assert exp.status == PermutationExperiment.Status.SUCCEEDED, exp.error or exp.status
        assert exp.progress_done == exp.progress_total == 2
        assert PermutationResult.objects.filter(permutation__experiment=exp, mean__isnull=False).count() == 6 * 2
    finally:
        app.conf.task_always_eager = True
        worker.terminate()
        try:
            worker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            worker.kill()
