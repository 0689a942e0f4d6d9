"""Every API URL the resolver knows asks an anonymous caller to authenticate: 401 with a token challenge."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from django.urls import URLPattern, URLResolver, get_resolver

# Public on purpose: the schema and Swagger UI (README: "anyone"), and the exchange of a password for a token.
PUBLIC_API = {"api/schema/", "api/docs/", "api/token/obtain/"}
SAMPLE_ARGS = {"int": "1", "str": "x", "slug": "x", "path": "x", "uuid": "00000000-0000-0000-0000-000000000000"}


def _routes(patterns: list, prefix: str = "") -> Iterator[str]:
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            yield from _routes(pattern.url_patterns, prefix + str(pattern.pattern))
        elif isinstance(pattern, URLPattern):
            yield prefix + str(pattern.pattern)


def _api_urls() -> list[str]:
    routes = sorted({r for r in _routes(get_resolver().url_patterns) if r.startswith("api/")})
    fill = re.compile(r"<(?:(\w+):)?\w+>")
    return ["/" + fill.sub(lambda m: SAMPLE_ARGS[m.group(1) or "str"], r) for r in routes if r not in PUBLIC_API]


def test_the_walk_finds_the_api_of_every_app():
    urls = _api_urls()
    for area in ("/api/collections/", "/api/imports/", "/api/rating/", "/api/judging/", "/api/evaluation/"):
        assert any(u.startswith(area) for u in urls), area
    assert len(urls) > 60


@pytest.mark.django_db
@pytest.mark.parametrize("method", ["get", "post"])
def test_anonymous_api_calls_get_401_with_a_token_challenge_everywhere(anon_api, method):
    wrong = {}
    for url in _api_urls():
        response = getattr(anon_api, method)(url)
        if response.status_code != 401 or not response.get("WWW-Authenticate", "").startswith("Token"):
            wrong[url] = response.status_code
    assert wrong == {}


@pytest.mark.django_db
def test_the_public_api_urls_need_no_credentials(anon_api):
    assert anon_api.get("/api/schema/").status_code == 200
    assert anon_api.get("/api/docs/").status_code == 200
    assert anon_api.post("/api/token/obtain/", {}, format="json").status_code == 400  # asks for the fields
