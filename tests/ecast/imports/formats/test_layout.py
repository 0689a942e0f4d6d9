"""One module per import format: every kind in the registry is parsed and written by a module of
``ecast.imports.formats``, and every module there serves a registered kind."""

from __future__ import annotations

import inspect
import pkgutil
import subprocess
import sys
from types import ModuleType

from ecast.imports import formats, registry
from tests.conftest import REPO

PACKAGE = f"{formats.__name__}."


def _format_modules() -> set[str]:
    return {f"{PACKAGE}{m.name}" for m in pkgutil.iter_modules(formats.__path__)}


def _parses(module: ModuleType) -> set[str]:
    """The format modules whose parse functions ``module`` holds: its own, or those it imports."""
    return {
        f.__module__
        for name, f in vars(module).items()
        if name.startswith("parse") and inspect.isfunction(f) and f.__module__.startswith(PACKAGE)
    }


def test_every_kind_is_parsed_and_written_by_its_format_module():
    for kind in registry.kinds():
        module = inspect.getmodule(kind.writer)
        assert module is not None, kind.name
        if module.__name__.startswith(PACKAGE):
            # ecast's own kinds: parse and write side by side in formats/<kind>.py
            assert module.__name__ in _parses(module), f"{module.__name__} holds no parse for {kind.name}"
            assert kind.writer in vars(module).values(), f"{kind.name}'s writer is not a name of {module.__name__}"
        else:
            # a kind another app registers (evaluation's qrels and runs, whose rows ecast cannot import): its writer
            # parses with a format module of ecast
            assert _parses(module), f"{kind.name}'s writer ({module.__name__}) parses with no ecast format module"


def test_every_format_module_serves_a_registered_kind():
    used: set[str] = set()
    for kind in registry.kinds():
        module = inspect.getmodule(kind.writer)
        used |= {module.__name__} if module.__name__.startswith(PACKAGE) else _parses(module)
    assert _format_modules() - used == set()


def test_the_shared_parsing_and_the_trec_file_readers_load_neither_django_nor_celery():
    # The qrels and run readers serve benchmarks and metric tests outside Django, like the sniffer.
    modules = "ecast.imports.parsing, ecast.imports.formats.qrels, ecast.imports.formats.runs"
    code = f"import sys, {modules}; assert not {{'django', 'celery'}} & set(sys.modules), sys.modules"
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True)
