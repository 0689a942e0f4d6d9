"""Malformed path parameters and request bodies never answer 500, for every role; under /api/ every error is JSON.

Every URL pattern of the product (Django's own admin aside) is sent, as anonymous, rater, assessor and admin:
its path parameters filled with ids that exist, ids that do not, ids past every integer column's range, letters,
unicode and long strings; a GET with every query parameter the views read set to a bad value; a form POST and,
under /api/, a JSON POST whose fields (every name a form, serializer or view of the product reads) carry bad
values, and JSON bodies that are not objects at all.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import re
from collections.abc import Iterator

import pytest
from django import forms
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.test import APIClient

from tests import factories

pytestmark = pytest.mark.django_db

PACKAGES = ["ecast", "judging", "evaluation"]
# Not product pages: Django's admin checks its own parameters; the schema pages are slow and read nothing.
SKIPPED = ("django-admin/", "api/schema/", "api/docs/", "favicon.ico")
INT_VALUES = ["0", "2147483648", "9223372036854775808", "9" * 30]
STR_VALUES = ["abc", "ü€😀", "x" * 300, "9" * 30]
BAD_FIELD_VALUES = ["abc", "9" * 30, "-1", "ü€😀", "x" * 5000, "' OR 1=1 --"]
JSON_ODDITIES: list[object] = [[], "abc", 7, None, [{"a": 1}]]
READ_NAME = re.compile(
    r"""(?:GET|POST|query_params|data|params|cleaned_data)(?:\.get|\.getlist|\.pop)?[\[(]\s*["']([A-Za-z_][\w-]*)["']"""
)
PARAM = re.compile(r"<(?:(\w+):)?(\w+)>")


def _routes(patterns: list, prefix: str = "") -> Iterator[str]:
    for pattern in patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            yield from _routes(pattern.url_patterns, route)
        elif isinstance(pattern, URLPattern):
            yield route


def _modules() -> Iterator[object]:
    for name in PACKAGES:
        package = importlib.import_module(name)
        for info in pkgutil.walk_packages(package.__path__, f"{name}."):
            if ".migrations" in info.name or info.name.endswith(("tests", "management.commands.rundev")):
                continue
            try:
                yield importlib.import_module(info.name)
            except ImportError:
                continue


def _field_names() -> list[str]:
    """Every field name a form declares and every name a module reads from a request."""
    names: set[str] = {"page", "collection", "q", "version", "run", "measure", "status", "kind", "text", "grade"}
    for module in _modules():
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, forms.BaseForm) and value.__module__ == module.__name__:
                names |= set(value.base_fields)
        try:
            source = open(module.__file__, encoding="utf-8").read()  # type: ignore[attr-defined]
        except (OSError, TypeError):
            continue
        names |= set(READ_NAME.findall(source))
    return sorted(names)


def _paths(route: str, ids: list[str]) -> list[str]:
    """``route`` with its parameters filled, one address per value (parameters of one route vary together): ids of
    objects that exist (``ids``), then ids that cannot, then strings."""
    params = PARAM.findall(route)
    if not params:
        return ["/" + route]
    ints = ids + INT_VALUES
    out = []
    for i in range(max(len(ints), len(STR_VALUES))):

        def fill(match: re.Match[str], i: int = i) -> str:
            values = ints if match.group(1) == "int" else STR_VALUES
            return values[i % len(values)]

        out.append("/" + PARAM.sub(fill, route))
    return sorted(set(out), key=out.index)


ROUTES = [
    route.replace("\\", "")
    for route in _routes(get_resolver().url_patterns)
    if not (route.startswith(SKIPPED) or route.startswith("^") or "(?P" in route)
]
FIELDS = _field_names()


def _why_bad(response, method: str, path: str) -> str:
    """Why this answer is wrong (a 5xx; under /api/ an error that is not JSON), or ""."""
    bad = response.status_code >= 500
    content_type = response.get("Content-Type", "")
    if getattr(response, "streaming", False) and not content_type.startswith("text/event-stream"):
        try:  # a download fails while it streams, after its 200
            b"".join(response.streaming_content)
        except Exception:
            bad = True
    if path.startswith("/api/") and response.status_code >= 400:
        bad = bad or not content_type.startswith("application/json")
    return f"{method} {path[:80]} -> {response.status_code} {content_type}" if bad else ""


def _requests(client: APIClient, path: str, *, thorough: bool) -> Iterator[str]:
    values = BAD_FIELD_VALUES if thorough else BAD_FIELD_VALUES[:2]
    for value in values:
        query = {name: value for name in FIELDS}
        yield _why_bad(client.get(path, query), "GET", path)
        yield _why_bad(client.post(path, query), "POST form", path)
        if path.startswith("/api/"):
            body = json.dumps(query)
            yield _why_bad(client.post(path, body, content_type="application/json"), "POST json", path)
    if path.startswith("/api/"):
        for oddity in JSON_ODDITIES if thorough else JSON_ODDITIES[:2]:
            body = json.dumps(oddity)
            for method in ("post", "put", "patch"):
                response = getattr(client, method)(path, body, content_type="application/json")
                yield _why_bad(response, f"{method.upper()} json {oddity!r:.20}", path)
        yield _why_bad(client.post(path, "{not json", content_type="application/json"), "POST broken json", path)


@pytest.fixture
def world(db, settings, assessor) -> list[str]:
    """One of each thing the addresses name (a collection with pairs, qrels, runs, a pool with an assignment, a
    rating campaign, an import), so the fuzz reaches views past their lookups; returns their ids."""
    from ecast.models import FinetuneJob, ImportJob
    from judging.nuggets import leasing
    from judging.relevance import services as relevance
    from tests.evaluation import helpers as evaluation
    from tests.evaluation.responses.helpers import small_scene
    from tests.judging.nuggets import helpers as nugget_helpers
    from tests.judging.relevance import helpers as relevance_helpers

    settings.DEBUG = False
    coll, version, runs = evaluation.build(name="Fuzz")
    turn = coll.conversations.first().turns.first()
    pair = factories.paraphrase_pair(turn, "What is a thing?", "what thing")
    pool, _ = relevance_helpers.standard_pool(factories.collection_with_turns(
        name="Fuzz pool", year=2021, conversations={"1": ["a", "b"], "2": ["c"]}
    ))  # fmt: skip
    assignment = relevance.assignment_take(pool=pool, assessor=assessor)
    campaign = factories.rating_campaign(coll, size=1, n=1)
    job = ImportJob.objects.create(kind="qrels", collection=coll, file_name="q.txt", status="failed")
    finetune = FinetuneJob.objects.create(collection=coll, status="failed")
    # Response judging: answers, a nugget bank, a task with a lease (each id 1 or 2 in its own table).
    rag = nugget_helpers.scene(name="Fuzz RAG")
    task = nugget_helpers.nugget_task(rag)
    lease = leasing.lease_next(task=task, assessor=assessor)
    objects = [coll, coll.conversations.first(), turn, version, *runs.values(), pool, assignment, campaign, job]
    objects += [finetune, rag.bank, task, lease, *rag.nuggets("1_1")]
    responses = small_scene()  # response runs, answers, a nugget bank and both kinds of label set
    objects += [*responses["runs"], *responses["responses"], responses["bank"]]
    objects += [responses["nugget_set"], responses["citation_set"]]
    objects += _response_objects(coll, turn)
    pairs = pair if isinstance(pair, tuple | list) else [pair]
    return sorted({str(o.pk) for o in [*objects, *pairs] if o is not None}, key=int)[:8]


def _response_objects(coll, turn) -> list:
    """A response run with an answer, a nugget bank, a label set of each kind and a response-LLM job."""
    from evaluation.models import Nugget, NuggetBank, Response, ResponseLabelSet, ResponseRun, ResponseSentence
    from judging.models import ResponseLlmJob

    run = ResponseRun.objects.create(collection=coll, name="fuzz-answers")
    response = Response.objects.create(run=run, turn=turn, text="An answer.")
    sentence = ResponseSentence.objects.create(response=response, index=0, text="An answer.", citations=["d1"])
    bank = NuggetBank.objects.create(collection=coll, name="fuzz bank")
    nugget = Nugget.objects.create(bank=bank, turn=turn, text="A fact")
    nuggets = ResponseLabelSet.objects.create(collection=coll, name="fuzz n", kind="nuggets", source="llm", bank=bank)
    cites = ResponseLabelSet.objects.create(collection=coll, name="fuzz c", kind="citations", source="assessed")
    job = ResponseLlmJob.objects.create(
        task="assign_nuggets",
        collection=coll,
        bank=bank,
        label_set=nuggets,
        model="smollm",
        model_id="m",
        status="failed",
    )
    return [run, response, sentence, bank, nugget, nuggets, cites, job]


def _client(user=None) -> APIClient:
    client = APIClient(raise_request_exception=False)  # as a server answers: an exception becomes a 500
    if user is not None:
        client.force_login(user)
    return client


def test_the_fuzz_reaches_pages_and_api_endpoints_with_path_parameters():
    paths = [p for route in ROUTES for p in _paths(route, ["1", "2"])]
    assert "/api/paraphrases/2/approve/" in paths and "/api/paraphrases/9223372036854775808/approve/" in paths
    assert any(p.startswith("/evaluation/analyses/abc/") for p in paths)
    assert len(paths) > 400 and len(FIELDS) > 60


@pytest.mark.parametrize("role", ["anonymous", "rater", "assessor"])
def test_malformed_paths_and_bodies_never_answer_500_to_other_roles(role, world, request):
    user = None if role == "anonymous" else request.getfixturevalue(role)
    client = _client(user)
    paths = [p for route in ROUTES for p in _paths(route, world)]
    failures = [why for path in paths for why in _requests(client, path, thorough=False) if why]
    assert not failures, "\n".join(failures[:30])


@pytest.mark.parametrize("shard", range(4))
def test_malformed_paths_and_bodies_never_answer_500_to_an_admin(shard, world, admin_user):
    client = _client(admin_user)
    paths = [p for route in ROUTES[shard::4] for p in _paths(route, world)]
    failures = [why for path in paths for why in _requests(client, path, thorough=True) if why]
    assert not failures, "\n".join(failures[:30])
