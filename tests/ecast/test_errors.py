"""One error path: algorithm modules raise named domain errors, pages show refusals through one helper
(``ecast.core.pages``), APIs raise and let the one handler (``ecast.core.rest``) answer.

The last tests are guards: they scan the source so that a new page view, API or algorithm cannot grow its own way."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from django import forms
from django.contrib.messages import get_messages
from django.contrib.messages.storage.fallback import FallbackStorage
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile
from django.http import Http404
from django.test import RequestFactory
from django.urls import reverse

from ecast.core.errors import DomainError
from ecast.core.pages import MAX_SHOWN, refusal_as_404, refusal_shown
from ecast.pipeline import testsets
from evaluation import adjudication, metrics
from evaluation.analyses import pivots
from evaluation.permutations import orders
from judging.relevance import qrels_export

REPO = Path(__file__).resolve().parents[2]
APPS = ("ecast", "judging", "evaluation")
HEAVY = {"django", "rest_framework", "celery", "drf_spectacular"}


# ---------------------------------------------------------------- the page helper


class _Form(forms.Form):
    name = forms.CharField()
    file = forms.CharField(required=False)


def _request():
    request = RequestFactory().post("/")
    request.session = {}  # type: ignore[attr-defined]
    request._messages = FallbackStorage(request)  # type: ignore[attr-defined]
    return request


def test_a_refusal_naming_a_field_of_the_form_is_shown_beside_it_and_the_rest_above_the_form():
    form = _Form({"name": "x"})
    assert form.is_valid()
    with refusal_shown(form) as refused:
        raise ValidationError({"name": "taken", "selection": "unknown turns: 9_9", "__all__": "and more"})
    assert refused and refused.messages == ["taken", "unknown turns: 9_9", "and more"]
    assert form.errors["name"] == ["taken"]
    assert form.non_field_errors() == ["unknown turns: 9_9", "and more"]


def test_a_refusal_naming_no_field_goes_above_the_form_or_beside_the_field_the_view_names():
    form = _Form({"name": "x"})
    form.is_valid()
    with refusal_shown(form):
        raise DomainError("the pool is closed", code="conflict")
    assert form.non_field_errors() == ["the pool is closed"]

    form = _Form({"name": "x"})
    form.is_valid()
    with refusal_shown(form, field="file"):
        raise ValidationError([f"line {n}: bad" for n in range(1, 50)])
    assert form.errors["file"] == [f"line {n}: bad" for n in range(1, MAX_SHOWN + 1)]


def test_on_a_request_a_refusal_is_one_error_message_with_its_messages_joined():
    request = _request()
    with refusal_shown(request) as refused:
        raise ValidationError(["first", "second"])
    assert refused.text == "first; second"
    assert [(m.level_tag, m.message) for m in get_messages(request)] == [("error", "first; second")]


def test_without_a_target_the_refusal_is_only_kept_for_the_page_and_its_code_is_readable():
    with refusal_shown() as refused:
        raise DomainError("this item was already submitted", code="conflict")
    assert refused.code == "conflict" and refused.text == "this item was already submitted"
    with refusal_shown() as refused:
        raise ValidationError("plain")
    assert refused.code == "" and refused.messages == ["plain"]


def test_nothing_refused_runs_the_whole_block_and_other_errors_propagate():
    ran = []
    with refusal_shown() as refused:
        ran.append(1)
    assert not refused and ran == [1]
    with pytest.raises(KeyError), refusal_shown(_request()):
        raise KeyError("a bug, not a refusal")


def test_a_refused_query_parameter_answers_404_with_its_message():
    with pytest.raises(Http404, match="bogus"), refusal_as_404():
        metrics.parse_measure("bogus@3")


# ---------------------------------------------------------------- algorithm errors


@pytest.mark.parametrize(
    "call",
    [
        lambda: orders.structure_from_labels([]),
        lambda: pivots.random_splits(3),
        lambda: adjudication.make_strategy("nope", {}),
        lambda: qrels_export.aggregate([], "majority"),
        lambda: testsets.draw_test_sets({}, n_sets=0),
        lambda: metrics.parse_measure("bogus@3"),
    ],
    ids=["orders", "pivots", "adjudication", "qrels_export", "testsets", "metrics"],
)
def test_an_algorithm_refuses_bad_input_with_a_domain_error_that_is_still_a_value_error(call):
    with pytest.raises(DomainError) as caught:
        call()
    assert isinstance(caught.value, ValueError) and caught.value.status_code == 400 and str(caught.value)


# ---------------------------------------------------------------- API bodies, as clients see them


@pytest.mark.django_db
def test_apis_refuse_with_the_bodies_and_statuses_clients_know(admin_api, assessor_api, anon_api, small_collection):
    from judging.models import Campaign
    from tests.judging.relevance import helpers

    pool, original = helpers.standard_pool(small_collection)
    run_a, run_b = (pool.runs.get(name="A"), pool.runs.get(name="B"))
    campaign = Campaign.objects.create(name="c")
    answers = [
        anon_api.post(reverse("api-token-obtain"), {"username": "nobody", "password": "x"}),
        assessor_api.post(reverse("api-relevance-pool-take", args=[pool.pk + 1000])),
        admin_api.get(reverse("api-relevance-pool-pairs", args=[pool.pk]), {"only": "some"}),
        admin_api.post(
            reverse("api-rating-campaign-create"), {"name": "x", "collection_ids": [0], "sample_size": 5}, format="json"
        ),
        admin_api.get(reverse("api-rating-release", args=[campaign.pk]), {"output": "xml"}),
        admin_api.get(reverse("api-eval-run-scores", args=[run_a.pk])),
        admin_api.get(
            reverse("api-eval-significance"),
            {"a": run_a.pk, "b": run_b.pk, "version": original.pk, "measure": "bogus@3", "permutations": 100},
        ),
    ]
    assert [(r.status_code, r.json()) for r in answers] == [
        (400, {"detail": "Wrong username or password."}),
        (404, {"detail": "No such open pool for you."}),
        (400, {"detail": "only must be judged, unjudged or disagreements"}),
        (400, {"detail": "unknown collection id"}),
        (400, {"detail": "output must be csv or jsonl"}),
        (400, {"detail": "version: required (a qrels version id)"}),
        (400, {"detail": answers[-1].json()["detail"], "measure": [answers[-1].json()["detail"]]}),
    ]
    assert "bogus" in answers[-1].json()["detail"]  # named, and under the parameter that named it

    upload = SimpleUploadedFile("bad.run", b"not a run line\n")
    failed = admin_api.post(reverse("api-eval-run-upload"), {"collection": small_collection.pk, "file": upload})
    body = failed.json()
    assert failed.status_code == 400 and set(body) == {"detail", "errors"}
    assert body["errors"] and body["detail"] == "; ".join(body["errors"])


# ---------------------------------------------------------------- guards over the source tree


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _sources() -> dict[str, Path]:
    return {
        _module_name(p): p
        for app in APPS
        for p in sorted((REPO / app).rglob("*.py"))
        if "migrations" not in p.parts and "management" not in p.parts
    }


def _page_view_modules() -> list[str]:
    return [
        name
        for name, path in _sources().items()
        if path.name in ("views.py", "downloads.py") or path.name.endswith("_views.py")
    ]


def test_page_views_show_refusals_only_through_the_one_helper():
    """No page view catches a ValidationError or DomainError (or everything) itself: ``refusal_shown`` does."""
    offending = []
    for name in _page_view_modules():
        module = importlib.import_module(name)
        path = _sources()[name]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ExceptHandler):
                continue
            caught = (
                (BaseException,)
                if node.type is None
                else eval(compile(ast.Expression(node.type), str(path), "eval"), vars(module))  # noqa: S307
            )
            caught = caught if isinstance(caught, tuple) else (caught,)
            if any(c in (Exception, BaseException) or issubclass(c, (ValidationError, DomainError)) for c in caught):
                offending.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert offending == []


def _status_of(node: ast.Call) -> ast.expr | None:
    for keyword in node.keywords:
        if keyword.arg == "status":
            return keyword.value
    return node.args[1] if len(node.args) > 1 else None


def _is_4xx(expr: ast.expr) -> bool:
    for sub in ast.walk(expr):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, int) and 400 <= sub.value < 500:
            return True
        if isinstance(sub, ast.Attribute) and sub.attr.startswith("HTTP_4"):
            return True
    return False


def test_apis_raise_refusals_instead_of_building_4xx_responses():
    """An API answers 4xx by raising (a DomainError, Django ValidationError or DRF exception) to the one handler."""
    offending = []
    for path in _sources().values():
        if path.name != "apis.py":
            continue
        for function in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(function, ast.FunctionDef):
                continue
            # A status may be computed first: `code = status.HTTP_400_BAD_REQUEST if … else 202`.
            assigned = {
                target.id: node.value
                for node in ast.walk(function)
                if isinstance(node, ast.Assign)
                for target in node.targets
                if isinstance(target, ast.Name)
            }
            for node in ast.walk(function):
                if isinstance(node, ast.Call) and (status := _status_of(node)) is not None:
                    if isinstance(status, ast.Name) and status.id in assigned:
                        status = assigned[status.id]
                    if _is_4xx(status):
                        offending.append(f"{path.relative_to(REPO)}:{function.name}")
    # The one exception: an upload whose file fails at once answers 400 with the import job itself (its errors
    # included), the same object a successful upload answers 202 with.
    assert offending == ["ecast/imports/apis.py:post"]


def _top_level_imports(name: str, path: Path) -> list[str]:
    """What importing the module imports (function bodies and ``TYPE_CHECKING`` blocks left out)."""
    found: list[str] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                continue
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            if isinstance(child, ast.Import):
                found.extend(alias.name for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                module = child.module or ""
                if child.level:
                    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
                    package = package[: len(package) - child.level + 1]
                    module = ".".join([*package, module] if module else package)
                found.append(module)
                found.extend(f"{module}.{alias.name}" for alias in child.names)
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return found


def _django_free_modules() -> list[str]:
    """Modules whose import loads neither Django, DRF nor Celery, read from the import statements."""
    sources = _sources()
    imports = {name: _top_level_imports(name, path) for name, path in sources.items()}
    heavy: dict[str, bool] = {}

    def loads_django(name: str, seen: frozenset[str] = frozenset()) -> bool:
        if name not in heavy:
            if name in seen:
                return False
            parents = [".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)]
            heavy[name] = any(
                dep.split(".")[0] in HEAVY or (dep in sources and loads_django(dep, seen | {name}))
                for dep in [*parents, *imports.get(name, [])]
            )
        return heavy[name]

    return [name for name in sources if not loads_django(name)]


def test_importing_the_django_free_modules_loads_neither_django_nor_celery():
    """The guard below reads "Django-free" from import statements; importing them all proves it right."""
    modules = _django_free_modules()
    assert {"ecast.core.errors", "evaluation.analyses.pivots", "judging.relevance.qrels_export"} <= set(modules)
    probe = (
        "import importlib, json, sys\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('django', 'celery'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


def test_django_free_modules_raise_named_domain_errors_not_bare_value_errors():
    """An algorithm's refusal is a named DomainError subclass (which may also be a ValueError), so the one handler
    and the page helper answer it; a bare ``ValueError`` or ``Exception`` would be a 500."""
    offending = []
    for name in _django_free_modules():
        path = _sources()[name]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Raise) and node.exc is not None:
                raised = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
                if isinstance(raised, ast.Name) and raised.id in ("ValueError", "Exception"):
                    offending.append(f"{path.relative_to(REPO)}:{node.lineno}")
            elif isinstance(node, ast.ClassDef):
                bases = {ast.unparse(base) for base in node.bases}
                is_base = name == "ecast.core.errors" and node.name == "DomainError"
                if bases & {"ValueError", "Exception"} and not is_base and not any("DomainError" in b for b in bases):
                    offending.append(f"{path.relative_to(REPO)}:{node.lineno} class {node.name}")
    assert offending == []
