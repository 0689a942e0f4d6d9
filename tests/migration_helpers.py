"""Running the real migrations on a scratch database (the suite itself runs without them): ``manage.py`` in a
subprocess with the scratch database's environment. The ``scratch_db`` fixture (tests/conftest.py) gives the URL."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from collections.abc import Iterable
from typing import Any

from tests.conftest import REPO


def manage(env: dict[str, str], *args: str) -> str:
    """``manage.py *args`` under ``env``; its standard output (a failure shows its standard error)."""
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def scratch_env(database_url: str, tmp_path) -> dict[str, str]:
    """Environment for ``manage.py`` on a scratch database (no Redis: the file cache and broker)."""
    env = {**os.environ, "DATABASE_URL": database_url, "ECAST_VAR_DIR": str(tmp_path)}
    env["DJANGO_SETTINGS_MODULE"] = "ecast.settings"
    env.pop("REDIS_URL", None)
    return env


# Prints [(column, value of the pg_attribute field)] by column name, or None off PostgreSQL.
_ATTRIBUTES = """
from django.db import connection
if connection.vendor != "postgresql":
    print(None)
else:
    with connection.cursor() as cur:
        cur.execute("SELECT attname, {field} FROM pg_attribute WHERE attrelid = %s::regclass AND attname = ANY(%s)"
                    " ORDER BY attname", [{table!r}, {columns!r}])
        print(cur.fetchall())
"""


def column_attributes(
    env: dict[str, str], table: str, columns: Iterable[str], field: str
) -> list[tuple[str, Any]] | None:
    """(column, ``pg_attribute.<field>``) of ``table``'s ``columns`` by name, as the migrations run so far left them;
    None on a database other than PostgreSQL (which has no such catalogue)."""
    script = _ATTRIBUTES.format(field=field, table=table, columns=list(columns))
    return ast.literal_eval(manage(env, "shell", "-c", script).strip().splitlines()[-1])
