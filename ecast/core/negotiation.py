"""Content negotiation for the REST API (``REST_FRAMEWORK["DEFAULT_CONTENT_NEGOTIATION_CLASS"]``).

A module of its own: DRF imports it while ``rest_framework.views`` is being loaded, so it cannot import that module
(nor ``ecast.core.rest``, which does).
"""

from __future__ import annotations

from typing import Any

from rest_framework.negotiation import DefaultContentNegotiation


class JsonNegotiation(DefaultContentNegotiation):
    """DRF's content negotiation, answering a plain ``Accept: application/json`` without parsing it.

    Scripts and the pages' send queue ask for exactly that on every call; the general negotiation parses the header
    and matches it against every renderer on each request (a tenth of a millisecond of CPU on a rater's call). The
    answer is the one DRF gives: the view's first renderer of that media type."""

    def select_renderer(self, request: Any, renderers: Any, format_suffix: Any = None) -> Any:
        if (
            format_suffix is None
            and request.META.get("HTTP_ACCEPT") == "application/json"
            and self.settings.URL_FORMAT_OVERRIDE not in request.query_params
        ):
            for renderer in renderers:
                if renderer.media_type == "application/json":
                    return renderer, "application/json"
        return super().select_renderer(request, renderers, format_suffix)
