"""Apps depend downwards only: nothing in ecast imports judging or evaluation (they register with ecast instead)."""

from __future__ import annotations

import ast
from pathlib import Path

ECAST = Path(__file__).resolve().parents[2] / "ecast"
UPPER_APPS = ("judging", "evaluation")


def _imported_modules(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
    return names


def test_no_ecast_module_imports_judging_or_evaluation():
    offending = [
        f"{path.relative_to(ECAST.parent)}: {name}"
        for path in sorted(ECAST.rglob("*.py"))
        for name in _imported_modules(path)
        if name.split(".")[0] in UPPER_APPS
    ]
    assert offending == []
