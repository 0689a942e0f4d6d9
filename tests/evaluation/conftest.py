"""Fixtures of the evaluation tests."""

from __future__ import annotations

import os
from urllib.parse import urlsplit, urlunsplit

import pytest


@pytest.fixture(params=["sqlite", "postgresql"])
def scratch_db(request, tmp_path):
    """A scratch database URL for a real ``migrate``: a SQLite file, and a fresh PostgreSQL database (named for the
    test module) when the suite runs on PostgreSQL, where column types and indexes differ."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'db.sqlite3'}"
        return
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith("postgres"):
        if os.environ.get("CI"):
            pytest.fail("CI must run the PostgreSQL leg (DATABASE_URL is not PostgreSQL)")
        pytest.skip("PostgreSQL leg runs when DATABASE_URL is PostgreSQL")
    import psycopg

    parts = urlsplit(url)
    name = f"{parts.path.lstrip('/')}_{request.module.__name__.rsplit('.', 1)[-1]}"
    admin = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    yield urlunsplit(parts._replace(path="/" + name))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
