"""Every pipeline module imports without Django or Celery, so workers and scripts can use it as plain Python."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
MODULES = sorted(
    "ecast.pipeline" if p.stem == "__init__" else f"ecast.pipeline.{p.stem}"
    for p in (REPO / "ecast" / "pipeline").glob("*.py")
)
PROBE = (
    "import importlib, json, sys; importlib.import_module(sys.argv[1]); "
    "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('django', 'celery'))))"
)


def test_every_pipeline_module_is_checked():
    assert {"ecast.pipeline.preprocess", "ecast.pipeline.run", "ecast.pipeline.backends"} <= set(MODULES)


@pytest.mark.parametrize("module", MODULES)
def test_importing_it_loads_neither_django_nor_celery(module):
    done = subprocess.run(
        [sys.executable, "-c", PROBE, module], cwd=REPO, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []
