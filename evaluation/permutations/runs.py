"""Import of TREC runs computed elsewhere on exported permutations, linked to their permutation."""

from __future__ import annotations

import gzip
import re
from pathlib import Path
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from ecast.models import Turn
from evaluation.models import Permutation, PermutationExperiment, PermutationResult, Run, RunTurn
from evaluation.permutations import retrieval

PERM_IN_NAME = re.compile(r"(?:^|[^A-Za-z0-9])perm[-_]?(\d+)(?![0-9])", re.IGNORECASE)


def _first_tag(path: Path) -> str:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as fh:
        for line in fh:
            parts = line.split()
            if parts:
                return parts[5] if len(parts) >= 6 else ""
    return ""


def permutation_run_import(
    *, experiment: PermutationExperiment, path: Path, file_name: str = "", user: Any = None
) -> PermutationResult:
    """Import one TREC run computed on one exported permutation (``perm<id>`` in the tag or file name) and link it.

    The system name is the tag without its ``perm<id>`` part. Bad input raises ValidationError; nothing is written.
    """
    tag = _first_tag(path)
    match = PERM_IN_NAME.search(tag) or PERM_IN_NAME.search(file_name or path.name)
    if not match:
        raise ValidationError(f"{file_name or path.name}: neither the run tag nor the file name says perm<id>")
    perm_pk = int(match.group(1))
    perm = Permutation.objects.filter(pk=perm_pk, experiment=experiment).select_related("conversation").first()
    if perm is None:
        raise ValidationError(f"{file_name or path.name}: permutation {perm_pk} is not part of this experiment")
    system = PERM_IN_NAME.sub("", tag).strip("._- ") or Path(file_name or path.name).name.split(".")[0]
    shown = file_name or path.name
    if system in retrieval.SYSTEMS:
        raise ValidationError(f"{shown}: system name {system!r} is reserved for a built-in system; rename the tag")
    with transaction.atomic():
        # Re-importing a permutation's run for the same system replaces the previous one.
        for old in PermutationResult.objects.filter(permutation=perm, system=system, run__isnull=False):
            if old.run is not None:
                old.run.delete()
        run = _import_run(experiment=experiment, path=path, shown=shown, name=f"{system}.perm{perm_pk}", user=user)
        foreign = run.rankings.exclude(turn__conversation=perm.conversation).values_list("turn__turn_id", flat=True)
        if foreign.exists():
            raise ValidationError(
                f"{file_name or path.name}: turns {sorted(foreign)[:5]} are not in topic {perm.conversation.topic_id}"
            )
        result, _ = PermutationResult.objects.update_or_create(
            permutation=perm, system=system, defaults={"run": run, "queries": {}}
        )
    from evaluation.permutations.tasks import schedule_rescore

    schedule_rescore(experiment.pk)
    return result


def _import_run(*, experiment: PermutationExperiment, path: Path, shown: str, name: str, user: Any) -> Run:
    """Import through the shared importer (``ecast.imports``); where it is not installed, a strict local reader."""
    try:
        from ecast.imports.errors import ImportFailed
        from ecast.imports.services import run_import
    except ImportError:
        return _import_run_locally(experiment=experiment, path=path, shown=shown, name=name, user=user)
    try:
        return run_import(collection=experiment.collection, path=path, name=name, user=user)
    except ImportFailed as exc:
        reasons = "; ".join(f"line {e.get('line')}: {e.get('reason')}" for e in exc.errors[:5])
        raise ValidationError(f"{shown}: {reasons}") from exc


def _import_run_locally(*, experiment: PermutationExperiment, path: Path, shown: str, name: str, user: Any) -> Run:
    turns = dict(Turn.objects.filter(collection=experiment.collection).values_list("turn_id", "pk"))
    errors: list[str] = []
    ranked: dict[str, dict[str, float]] = {}
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as fh:
        for lineno, line in enumerate(fh, start=1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) != 6:
                errors.append(f"{shown} line {lineno}: expected 6 columns (qid Q0 docid rank score tag)")
            elif parts[0] not in turns:
                errors.append(f"{shown} line {lineno}: unknown turn id {parts[0]!r}")
            else:
                try:
                    score = float(parts[4])
                except ValueError:
                    errors.append(f"{shown} line {lineno}: score {parts[4]!r} is not a number")
                    continue
                ranked.setdefault(parts[0], {}).setdefault(parts[2], score)  # a repeated doc keeps its first line
            if len(errors) >= 20:
                break
    if errors:
        raise ValidationError(errors)
    if not ranked:
        raise ValidationError(f"{shown}: the run is empty")
    if Run.objects.filter(collection=experiment.collection, name=name).exists():
        raise ValidationError(f"{shown}: a run named {name!r} already exists in this collection")
    run = Run.objects.create(collection=experiment.collection, name=name, source_file=shown, created_by=user)
    rows = []
    for qid, docs in ranked.items():
        order = sorted(docs.items(), key=lambda kv: (-kv[1], kv[0]))
        rows.append(RunTurn(run=run, turn_id=turns[qid], doc_ids=[d for d, _ in order], scores=[v for _, v in order]))
    RunTurn.objects.bulk_create(rows)
    return run
