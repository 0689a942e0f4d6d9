"""The suite keeps its own conventions: helper modules are named as helpers, no test imports another test module,
and no test waits with a fixed sleep of a second or more (it waits for a condition with a deadline instead)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent

# Modules under tests/ that are neither tests nor helpers, each for a reason.
NOT_HELPERS = {
    "settings.py": "the Django settings of the test run",
    "factories.py": "the rows of the main models, used by every test package",
}
HELPER_NAME = re.compile(r"^(?:[a-z0-9]+_)*helpers\.py$")
# (module, literal seconds) pairs allowed to sleep a second or more, each with the reason it is part of the test.
LONG_SLEEPS_ALLOWED: dict[tuple[str, float], str] = {}


def _modules() -> list[Path]:
    return sorted(p for p in TESTS.rglob("*.py") if "__pycache__" not in p.parts)


def test_helper_modules_are_named_helpers_or_topic_helpers():
    """A module a test imports for builders or waits is ``helpers.py`` (its package's) or ``<topic>_helpers.py``."""
    odd = [
        str(p.relative_to(TESTS))
        for p in _modules()
        if not (p.name.startswith("test_") or p.name in ("conftest.py", "__init__.py"))
        and not HELPER_NAME.match(p.name)
        and str(p.relative_to(TESTS)) not in NOT_HELPERS
    ]
    assert not odd, f"name these helper modules helpers.py or <topic>_helpers.py: {odd}"


def test_no_module_imports_from_a_test_module():
    """What several test modules share lives in a helpers module (or a conftest fixture), not in one of them."""
    found = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("tests"):
                if node.module.rsplit(".", 1)[-1].startswith("test_"):
                    found.append(f"{path.relative_to(TESTS)}:{node.lineno} imports {node.module}")
    assert not found, "move what is shared into a helpers module:\n" + "\n".join(found)


def _sleep_seconds(call: ast.Call) -> float | None:
    """The literal seconds of a ``time.sleep(...)`` / ``sleep(...)`` / ``asyncio.sleep(...)`` call, else None."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    if name != "sleep" or not call.args:
        return None
    arg = call.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, int | float) and not isinstance(arg.value, bool):
        return float(arg.value)
    return None


def test_no_test_waits_with_a_fixed_sleep_of_a_second_or_more():
    """A fixed sleep either wastes time or, on a loaded machine, is too short: wait for a condition with a deadline
    (``tests.worker_helpers.wait_until``), or for a signal the code emits. Sleeps inside a child process's source
    text (a string) are not calls here and are not counted."""
    found = []
    for path in _modules():
        rel = str(path.relative_to(TESTS))
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and (seconds := _sleep_seconds(node)) is not None and seconds >= 1:
                if (rel, seconds) not in LONG_SLEEPS_ALLOWED:
                    found.append(f"{rel}:{node.lineno} sleeps {seconds:g} s")
    assert not found, "wait for a condition instead of sleeping:\n" + "\n".join(found)


def test_the_sleep_guard_sees_the_forms_a_test_would_write():
    calls = ["time.sleep(2)", "sleep(1.5)", "asyncio.sleep(3)", "time.sleep(0.3)", "time.sleep(delay)", "x.sleep()"]
    seconds = [_sleep_seconds(ast.parse(c, mode="eval").body) for c in calls]  # type: ignore[arg-type]
    assert seconds == [2.0, 1.5, 3.0, 0.3, None, None]
