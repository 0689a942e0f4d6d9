"""The API's content negotiation picks the renderer DRF's own negotiation picks, for every Accept header."""

from __future__ import annotations

import pytest
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BrowsableAPIRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.settings import api_settings
from rest_framework.test import APIRequestFactory

from ecast.core.negotiation import JsonNegotiation


class _Csv(JSONRenderer):
    media_type, format = "text/csv", "csv"


RENDERER_SETS = [
    [JSONRenderer(), BrowsableAPIRenderer()],
    [BrowsableAPIRenderer(), JSONRenderer()],
    [_Csv(), JSONRenderer()],
    [_Csv()],
]
REQUESTS = [
    ("/x/", {"HTTP_ACCEPT": "application/json"}),
    ("/x/", {"HTTP_ACCEPT": "application/json; indent=4"}),
    ("/x/", {"HTTP_ACCEPT": "text/html"}),
    ("/x/", {"HTTP_ACCEPT": "*/*"}),
    ("/x/", {}),
    ("/x/?format=api", {"HTTP_ACCEPT": "application/json"}),
    ("/x/?format=json", {"HTTP_ACCEPT": "application/json"}),
]


def _choice(negotiation, path, headers, renderers, suffix=None):
    request = Request(APIRequestFactory().get(path, **headers))
    try:
        renderer, media_type = negotiation.select_renderer(request, renderers, suffix)
    except Exception as exc:  # both refuse alike (406, 404 for an unknown format)
        return type(exc).__name__
    return type(renderer).__name__, media_type


@pytest.mark.parametrize("renderers", RENDERER_SETS, ids=lambda rs: "+".join(type(r).__name__ for r in rs))
@pytest.mark.parametrize(("path", "headers"), REQUESTS)
@pytest.mark.parametrize("suffix", [None, "api"])
def test_the_renderer_chosen_is_the_one_drf_chooses(renderers, path, headers, suffix):
    ours = _choice(JsonNegotiation(), path, headers, renderers, suffix)
    assert ours == _choice(DefaultContentNegotiation(), path, headers, renderers, suffix)


def test_the_api_negotiates_with_it():
    assert api_settings.DEFAULT_CONTENT_NEGOTIATION_CLASS is JsonNegotiation


def test_a_plain_json_accept_gets_the_views_first_json_renderer_as_application_json():
    assert _choice(JsonNegotiation(), "/x/", {"HTTP_ACCEPT": "application/json"}, RENDERER_SETS[1]) == (
        "JSONRenderer",
        "application/json",
    )
