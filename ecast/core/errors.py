"""The base of every domain error (plain Python, no Django): a failure the user can fix, with its HTTP status.

Services raise these (or Django's ``ValidationError``); the one DRF exception handler (``ecast.core.rest``)
turns both into responses, and page views show both through ``ecast.core.pages.refusal_shown``. Algorithm modules
subclass it too (with ``ValueError`` beside it where callers catch that), since importing it loads nothing.
"""

from __future__ import annotations

from typing import Any

# Error codes shared by every feature, and the HTTP status each answers with.
STATUS_BY_CODE = {
    "invalid": 400,
    "paused": 403,
    "not_found": 404,
    "conflict": 409,
    "gone": 410,
    "too_large": 413,
}


class DomainError(Exception):
    """A refused operation: ``code`` names the kind of failure and decides the HTTP status."""

    code = "invalid"

    def __init__(self, message: str, code: str | None = None):
        super().__init__(message)
        if code:
            self.code = code

    @property
    def status_code(self) -> int:
        return STATUS_BY_CODE.get(self.code, 400)

    def payload(self) -> dict[str, Any]:
        """The JSON body of the API response."""
        return {"detail": str(self), "code": self.code}
