"""The one exception importers raise: it carries every bad row found, not just the first."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ecast.core.errors import DomainError


def row_error(file: str, line: int | None, reason: str, *, kind: str = "") -> dict[str, Any]:
    """One entry of an import error or warning report; ``kind`` names the reason for grouping ("unknown turn")."""
    entry: dict[str, Any] = {"file": file, "line": line, "reason": reason}
    if kind:
        entry["kind"] = kind
    return entry


def row_where(entry: dict[str, Any]) -> str:
    """``file:line``, or the file alone for an entry about the whole file."""
    return f"{entry.get('file', '')}:{entry['line']}" if entry.get("line") else str(entry.get("file", ""))


def warning_kind(entry: dict[str, Any]) -> str:
    """What a warning is grouped under: its ``kind``; for entries recorded without one, the reason before any colon
    with the specifics (ids, counts: words holding a digit) left out."""
    if entry.get("kind"):
        return str(entry["kind"])
    head = str(entry.get("reason", "")).split(":", 1)[0]
    return " ".join(w for w in head.split() if not any(c.isdigit() for c in w)) or "other"


def warnings_summary(warnings: Iterable[dict[str, Any]], *, examples: int = 3) -> list[dict[str, Any]]:
    """Warnings grouped by kind, most frequent first: ``{kind, count, examples, more}`` with the first ``examples``
    and how many more there are."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for w in warnings:
        groups.setdefault(warning_kind(w), []).append(w)
    summary = [
        {"kind": k, "count": len(ws), "examples": ws[:examples], "more": max(0, len(ws) - examples)}
        for k, ws in groups.items()
    ]
    return sorted(summary, key=lambda g: (-g["count"], g["kind"]))


def warnings_summary_lines(warnings: list[dict[str, Any]], *, examples: int = 3) -> list[str]:
    """The summary as text for a command's output: one line per kind with its count, then its examples."""
    lines = []
    for group in warnings_summary(warnings, examples=examples):
        lines.append(f"{group['count']} × {group['kind']}, e.g.:")
        lines += [f"  {row_where(w)}: {w.get('reason', '')}" for w in group["examples"]]
        if group["more"]:
            lines.append(f"  … and {group['more']} more")
    return lines


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
