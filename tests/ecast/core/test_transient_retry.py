"""A unit of work that meets a transient database or broker error (a lost connection, a serialization failure, a
deadlock) runs again after a back-off instead of failing its job for good; a real error still fails it at once."""

from __future__ import annotations

from pathlib import Path
from unittest import mock

import psycopg
import pytest
from django.db import OperationalError, connection
from kombu.exceptions import OperationalError as BrokerError

from ecast.core import jobs
from ecast.imports.services import import_file
from ecast.models import ImportJob, JobRecovery, Passage
from tests.concurrency_helpers import require_postgres

pytestmark = pytest.mark.usefixtures("fresh_cache")


def django_error(message: str, sqlstate: str | None) -> OperationalError:
    """A database error as Django raises it: its driver error (with its SQLSTATE) as the cause."""
    cause = psycopg.errors.lookup(sqlstate)(message) if sqlstate else psycopg.OperationalError(message)
    try:
        raise OperationalError(message) from cause
    except OperationalError as exc:
        return exc


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (django_error("server closed the connection unexpectedly", None), True),
        (django_error("could not serialize access due to concurrent update", "40001"), True),
        (django_error("deadlock detected", "40P01"), True),
        (django_error("terminating connection due to administrator command", "57P01"), True),
        (django_error('relation "ecast_turn" does not exist', "42P01"), False),
        (OperationalError("database is locked"), True),  # SQLite, another writer
        (OperationalError("no such table: ecast_turn"), False),
        (BrokerError("Error 111 connecting to 127.0.0.1:6379. Connection refused."), True),
        (ValueError("grade 9 outside 0..4"), False),
    ],
)
def test_it_tells_transient_errors_from_real_ones(error, expected):
    assert jobs.transient(error) is expected


@pytest.mark.django_db(transaction=True)
def test_a_unit_that_loses_its_connection_runs_again_and_the_job_page_says_so():
    calls = []

    def work() -> int:
        calls.append(1)
        if len(calls) == 1:
            raise django_error("server closed the connection unexpectedly", None)
        return 42

    with mock.patch.object(jobs.time, "sleep") as slept:
        assert jobs.job_unit("import", 7, work) == 42
    assert len(calls) == 2 and slept.call_args_list == [mock.call(0.5)]
    (recovery,) = JobRecovery.objects.all()
    assert recovery.reason == JobRecovery.Reason.TRANSIENT
    assert recovery.get_reason_display() == "Retried after a database or broker error"
    assert "server closed the connection" in recovery.detail and "ran the unit again after 0.5 s" in recovery.detail
    assert jobs.job_health("import", 7)["worker_loss_retries"] == 0  # no worker was lost


@pytest.mark.django_db(transaction=True)
def test_a_unit_gives_up_after_the_configured_retries_with_growing_back_off(settings):
    settings.ECAST_JOB_TRANSIENT_RETRIES = 3

    def work() -> None:
        raise django_error("deadlock detected", "40P01")

    with mock.patch.object(jobs.time, "sleep") as slept, pytest.raises(OperationalError, match="deadlock"):
        jobs.job_unit("import", 8, work)
    assert [c.args[0] for c in slept.call_args_list] == [0.5, 1.0, 2.0]
    assert JobRecovery.objects.filter(reason=JobRecovery.Reason.TRANSIENT).count() == 3


@pytest.mark.django_db(transaction=True)
def test_a_real_error_fails_at_once_without_a_retry():
    calls = []

    def work() -> None:
        calls.append(1)
        raise ValueError("grade 9 outside 0..4")

    with mock.patch.object(jobs.time, "sleep") as slept, pytest.raises(ValueError):
        jobs.job_unit("import", 9, work)
    assert calls == [1] and not slept.called and not JobRecovery.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_an_import_whose_database_connection_is_terminated_mid_import_succeeds_on_the_retry(tmp_path: Path):
    require_postgres("pg_terminate_backend ends a real PostgreSQL session")
    path = tmp_path / "passages.tsv"
    path.write_text("".join(f"p{i}\tpassage number {i}\n" for i in range(500)))
    real = __import__("ecast.imports.services", fromlist=["_checked_format"])._checked_format
    terminated: list[int] = []

    def terminate_once(*args, **kwargs):
        if not terminated:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_backend_pid()")
                pid = cursor.fetchone()[0]
            s = connection.settings_dict
            with psycopg.connect(
                dbname=s["NAME"], user=s["USER"], host=s["HOST"], port=s["PORT"] or 5432, autocommit=True
            ) as other:
                other.execute("SELECT pg_terminate_backend(%s)", [pid])
            terminated.append(pid)
        return real(*args, **kwargs)

    with mock.patch("ecast.imports.services._checked_format", side_effect=terminate_once):
        job = import_file(kind="passages_tsv", path=path)
    assert terminated  # the session was really ended mid-import
    assert job.status == ImportJob.Status.SUCCEEDED, job.errors
    assert Passage.objects.count() == 500
    (recovery,) = JobRecovery.objects.filter(kind="import", job_id=job.pk)
    assert recovery.reason == JobRecovery.Reason.TRANSIENT
