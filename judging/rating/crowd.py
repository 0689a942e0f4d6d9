"""Import MTurk batch results (CAsT-snippets, Łajewska & Balog 2023) as a closed relevance-style rating campaign.

Items are (turn, passage) pairs; each worker's judgement is the ``answer_confidence`` level in
``Answer.taskAnswers`` (very_low … very_high → 1 … 5). Workers become inactive pseudonymous accounts
``crowd-<WorkerId>`` with unusable passwords and no role, so they can never log in; their worker id is kept on the
campaign's ``RaterStatus.external_id``. Reader → parser → validator: any bad row aborts the import with
file, line and reason, and nothing is written.
"""

from __future__ import annotations

import ast
import csv
import gzip
import io
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from ecast.models import Collection, Turn
from judging.models import MEASURES, Campaign, RaterStatus, Rating, RatingAssignment, RatingItem

CONFIDENCE = {"very_low": 1, "low": 2, "medium": 3, "high": 4, "very_high": 5}
REQUIRED = ("Input.turn_id", "Input.passage_id", "WorkerId", "Answer.taskAnswers")
MEASURE = "answer_confidence"


class CrowdImportError(Exception):
    """The files are not importable; ``errors`` lists {file, line, reason}."""

    def __init__(self, errors: list[dict[str, Any]]):
        super().__init__(f"{len(errors)} error(s); first: {errors[0]}")
        self.errors = errors


@dataclass
class CrowdRow:
    file: str
    line: int
    turn_id: str
    passage_id: str
    worker: str
    score: int
    assignment_id: str
    passage: str
    query: str
    grade: str
    seconds: float | None
    submitted: datetime | None


def confidence_of(answer: str) -> int:
    """The 1–5 answer-confidence level of one ``Answer.taskAnswers`` cell (Python-literal list of one dict)."""
    try:
        data = ast.literal_eval(answer)
    except (ValueError, SyntaxError) as exc:
        raise ValueError(f"Answer.taskAnswers is not a readable literal ({exc.__class__.__name__})") from exc
    if isinstance(data, list):
        data = data[0] if len(data) == 1 else None
    levels = data.get("answer_confidence") if isinstance(data, dict) else None
    if not isinstance(levels, dict):
        raise ValueError("Answer.taskAnswers has no answer_confidence")
    chosen = [k for k, v in levels.items() if v is True]
    if len(chosen) != 1 or chosen[0] not in CONFIDENCE:
        raise ValueError(f"answer_confidence must have exactly one level set, got {chosen or 'none'}")
    return CONFIDENCE[chosen[0]]


def _open(path: Path) -> io.TextIOBase:
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path), encoding="utf-8", newline="")
    return path.open(encoding="utf-8", newline="")


def _time(value: str) -> datetime | None:
    # MTurk: "Tue Mar 15 05:39:06 PDT 2022"; the zone name is dropped (times are only used for ordering).
    m = re.match(r"^\w{3} (\w{3} \d{1,2} \d{2}:\d{2}:\d{2}) \w+ (\d{4})$", value.strip())
    if not m:
        return None
    try:
        return timezone.make_aware(datetime.strptime(f"{m.group(1)} {m.group(2)}", "%b %d %H:%M:%S %Y"))
    except ValueError:
        return None


def read_crowd_files(paths: Sequence[Path]) -> list[CrowdRow]:
    """Parse and validate every file; raises CrowdImportError with all problems found."""
    rows: list[CrowdRow] = []
    errors: list[dict[str, Any]] = []
    seen: dict[tuple[str, str, str], tuple[str, int]] = {}
    for path in paths:
        name = path.name
        try:
            handle = _open(path)
        except OSError as exc:
            errors.append({"file": name, "line": 0, "reason": f"cannot open: {exc}"})
            continue
        with handle:
            reader = csv.DictReader(handle)
            missing = [c for c in REQUIRED if c not in (reader.fieldnames or [])]
            if missing:
                errors.append({"file": name, "line": 1, "reason": f"missing column(s): {', '.join(missing)}"})
                continue
            start = reader.line_num + 1
            for rec in reader:
                line, start = start, reader.line_num + 1
                turn_id, pid, worker = (rec.get(c, "").strip() for c in REQUIRED[:3])
                if not turn_id or not pid or not worker:
                    errors.append({"file": name, "line": line, "reason": "empty turn id, passage id or WorkerId"})
                    continue
                try:
                    score = confidence_of(rec["Answer.taskAnswers"])
                except ValueError as exc:
                    errors.append({"file": name, "line": line, "reason": str(exc)})
                    continue
                key = (turn_id, pid, worker)
                if key in seen:
                    f, ln = seen[key]
                    errors.append(
                        {"file": name, "line": line, "reason": f"worker {worker} judged {turn_id}/{pid} twice "
                         f"(first in {f} line {ln})"}
                    )  # fmt: skip
                    continue
                seen[key] = (name, line)
                seconds = rec.get("WorkTimeInSeconds", "").strip()
                rows.append(
                    CrowdRow(
                        file=name,
                        line=line,
                        turn_id=turn_id,
                        passage_id=pid,
                        worker=worker,
                        score=score,
                        assignment_id=rec.get("AssignmentId", "").strip(),
                        passage=rec.get("Input.passage", ""),
                        query=rec.get("Input.query", ""),
                        grade=rec.get("Input.relevance_score", ""),
                        seconds=float(seconds) if seconds.replace(".", "", 1).isdigit() else None,
                        submitted=_time(rec.get("SubmitTime", "")),
                    )
                )
    if not rows and not errors:
        errors.append({"file": ", ".join(p.name for p in paths) or "-", "line": 0, "reason": "no rows"})
    if errors:
        raise CrowdImportError(errors)
    return rows


def _worker_user(worker: str):
    User = get_user_model()
    username = "crowd-" + re.sub(r"[^\w.@+-]", "_", worker)[:140]
    user, created = User.objects.get_or_create(username=username, defaults={"is_active": False})
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    return user


@transaction.atomic
def crowd_campaign_import(
    *,
    paths: Sequence[Path],
    name: str,
    collection: Collection | None = None,
    raters_per_item: int | None = None,
    created_by: Any = None,
) -> Campaign:
    """Create a closed campaign holding the crowd's judgements: one item per (turn, passage), one rating per worker."""
    if Campaign.objects.filter(name=name).exists():
        raise CrowdImportError([{"file": "-", "line": 0, "reason": f"a campaign named {name!r} already exists"}])
    rows = read_crowd_files(paths)
    per_item: dict[tuple[str, str], list[CrowdRow]] = {}
    for r in rows:
        per_item.setdefault((r.turn_id, r.passage_id), []).append(r)
    n = raters_per_item or max(len(v) for v in per_item.values())
    campaign = Campaign(
        name=name,
        kind=Campaign.Kind.PASSAGE,
        description=f"Imported from {len(paths)} crowd file(s): {', '.join(p.name for p in paths[:5])}"
        + (" …" if len(paths) > 5 else ""),
        measures=[{"key": MEASURE, **MEASURES[MEASURE]}],
        raters_per_item=n,
        status=Campaign.Status.CLOSED,
        sample_size=len(per_item),
        created_by=created_by,
    )
    campaign.full_clean()
    campaign.save()
    if collection is not None:
        campaign.collections.set([collection])
    turns = (
        {t.turn_id: t for t in Turn.objects.filter(collection=collection, turn_id__in={k[0] for k in per_item})}
        if collection
        else {}
    )
    items = RatingItem.objects.bulk_create(
        [
            RatingItem(
                campaign=campaign,
                turn=turns.get(turn_id),
                turn_key=turn_id,
                external_key=f"{turn_id}|{pid}",
                context={
                    "turn_id": turn_id,
                    "query": group[0].query,
                    "qrels_grade": group[0].grade,
                    "source_file": group[0].file,
                },
                passage_id=pid,
                passage_text=group[0].passage,
                stratum="crowd",
                source="unknown",
                position=i,
                completed_count=len(group),
            )
            for i, ((turn_id, pid), group) in enumerate(per_item.items())
        ]
    )
    item_of = {(it.turn_key, it.passage_id): it for it in items}
    users = {w: _worker_user(w) for w in sorted({r.worker for r in rows})}
    RaterStatus.objects.bulk_create([RaterStatus(campaign=campaign, rater=u, external_id=w) for w, u in users.items()])
    now = timezone.now()
    assignments = RatingAssignment.objects.bulk_create(
        [
            RatingAssignment(
                item=item_of[(r.turn_id, r.passage_id)],
                campaign=campaign,
                rater=users[r.worker],
                status=RatingAssignment.Status.COMPLETED,
                leased_at=r.submitted or now,
                expires_at=r.submitted or now,
                completed_at=r.submitted or now,
            )
            for r in rows
        ]
    )
    ratings = Rating.objects.bulk_create(
        [
            Rating(
                assignment=a,
                item=a.item,
                campaign=campaign,
                rater=a.rater,
                values={MEASURE: r.score},
                idempotency_key=f"import-{campaign.pk}-{r.assignment_id or i}"[:64],
                seconds_on_task=r.seconds,
            )
            for i, (a, r) in enumerate(zip(assignments, rows, strict=True))
        ]
    )
    # Keep file order as submission order (auto_now_add stamps one instant): order ties are broken by pk.
    del ratings
    return campaign
