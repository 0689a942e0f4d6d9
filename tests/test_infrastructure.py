"""The suite proves where it ran: PostgreSQL and Redis in CI, never silently SQLite."""

import os

import pytest
from django.db import connection


@pytest.mark.django_db
def test_ci_runs_the_suite_on_postgresql():
    if not os.environ.get("CI"):
        pytest.skip("outside CI the embedded SQLite default is allowed")
    assert os.environ.get("DATABASE_URL"), "CI must set DATABASE_URL"
    assert connection.vendor == "postgresql", f"CI suite ran on {connection.vendor}, not PostgreSQL"


def test_ci_reaches_redis():
    if not os.environ.get("CI"):
        pytest.skip("outside CI Redis is optional")
    import redis

    url = os.environ.get("REDIS_URL")
    assert url, "CI must set REDIS_URL"
    assert redis.Redis.from_url(url, socket_connect_timeout=3).ping()


def test_settings_refuse_a_malformed_integer(monkeypatch):
    from django.core.exceptions import ImproperlyConfigured

    from ecast import settings as s

    monkeypatch.setenv("ECAST_MAX_UPLOAD_BYTES", "lots")
    with pytest.raises(ImproperlyConfigured, match="ECAST_MAX_UPLOAD_BYTES"):
        s._env_int("ECAST_MAX_UPLOAD_BYTES", 1)
