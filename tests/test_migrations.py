"""Migrations match the models (the suite itself runs with --nomigrations for speed)."""

from io import StringIO

import pytest
from django.core.management import call_command


@pytest.mark.django_db
def test_the_models_have_no_changes_missing_from_migrations():
    out = StringIO()
    try:
        call_command("makemigrations", "--check", "--dry-run", stdout=out, stderr=out)
    except SystemExit as exc:  # makemigrations --check exits 1 when a migration is missing
        pytest.fail(f"models changed without a migration:\n{out.getvalue()} (exit {exc.code})")
