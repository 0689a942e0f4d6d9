"""manage.py evaluate_runs / import_run and the idempotent evaluation demo loader."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from evaluation import demo
from evaluation.models import LeaderboardSnapshot
from tests.evaluation.helpers import QRELS, build, stored

pytestmark = pytest.mark.django_db


def test_evaluate_runs_computes_every_run_and_names_the_threshold():
    coll, version, runs = build(threshold=2)
    out = io.StringIO()
    call_command("evaluate_runs", "--collection", coll.name, stdout=out)
    assert "threshold 2" in out.getvalue()
    assert len(stored(version=version, run=runs["weak"])) == len(QRELS) * 17
    with pytest.raises(CommandError, match="no run 'nope'"):
        call_command("evaluate_runs", "--collection", coll.name, "--run", "nope")


def test_the_demo_loader_scores_the_demo_collection_once():
    coll, version, runs = build(name=demo.DEMO_COLLECTION)
    out = io.StringIO()
    demo.load(stdout=out)
    n = len(stored())
    assert n == 2 * len(QRELS) * 17 and "scores for 2 run(s)" in out.getvalue()
    demo.load(stdout=out)
    assert len(stored()) == n and "already present" in out.getvalue()
    assert LeaderboardSnapshot.objects.filter(version=version).count() == 1


def test_the_demo_loader_skips_without_the_demo_collection():
    out = io.StringIO()
    demo.load(stdout=out)
    assert "skipped" in out.getvalue()


def test_import_run_reports_a_missing_file(tmp_path):
    build()
    with pytest.raises(CommandError, match="no such file"):
        call_command("import_run", str(tmp_path / "missing.run"), "--collection", "EvalMini")


def test_import_run_prints_the_importers_warnings(tmp_path):
    build()
    path = tmp_path / "late.run"
    path.write_text("1_1 Q0 d1 1 2.0 late\n99_1 Q0 d2 1 1.0 late\n98_1 Q0 d3 1 1.0 late\n", encoding="utf-8")
    out = io.StringIO()
    call_command("import_run", str(path), "--collection", "EvalMini", stdout=out)
    text = out.getvalue()
    assert "2 warning(s) (the import went ahead):" in text and "2 × unknown turn, e.g.:" in text
    assert "late.run:3: unknown turn 98_1 in EvalMini: its lines were skipped" in text
    assert "run late (id" in text and "evaluation succeeded" in text
