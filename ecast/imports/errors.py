"""The one exception importers raise: it carries every bad row found, not just the first."""

from __future__ import annotations

from typing import Any

from ecast.errors import DomainError


def row_error(file: str, line: int | None, reason: str) -> dict[str, Any]:
    """One entry of an import error report."""
    return {"file": file, "line": line, "reason": reason}


class ImportFailed(DomainError):
    """Bad input: ``errors`` is the full list of {file, line, reason}; nothing was written."""

    def __init__(self, errors: list[dict[str, Any]]):
        self.errors = list(errors)
        first = self.errors[0] if self.errors else {"file": "?", "line": None, "reason": "unknown error"}
        where = f"{first['file']}:{first['line']}" if first.get("line") else str(first["file"])
        more = f" (and {len(self.errors) - 1} more)" if len(self.errors) > 1 else ""
        super().__init__(f"{where}: {first['reason']}{more}")

    def payload(self) -> dict[str, Any]:
        """The API body: the summary, the code and the full error report."""
        return {**super().payload(), "errors": self.errors}
