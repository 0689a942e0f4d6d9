"""Import of TREC runs computed elsewhere on exported permutations (through the one run import, ``ecast.imports``),
linked to their permutation and rescored."""

from __future__ import annotations

import gzip
import re
from pathlib import Path
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from ecast.imports.errors import ImportFailed
from ecast.imports.services import run_import
from evaluation.models import Permutation, PermutationExperiment, PermutationResult
from evaluation.permutations import retrieval
from evaluation.permutations.services import permutation_experiment_rescore_schedule

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
    shown = file_name or path.name
    tag = _first_tag(path)
    match = PERM_IN_NAME.search(tag) or PERM_IN_NAME.search(shown)
    if not match:
        raise ValidationError(f"{shown}: neither the run tag nor the file name says perm<id>")
    perm_pk = int(match.group(1))
    perm = Permutation.objects.filter(pk=perm_pk, experiment=experiment).select_related("conversation").first()
    if perm is None:
        raise ValidationError(f"{shown}: permutation {perm_pk} is not part of this experiment")
    system = PERM_IN_NAME.sub("", tag).strip("._- ") or Path(shown).name.split(".")[0]
    if system in retrieval.SYSTEMS:
        raise ValidationError(f"{shown}: system name {system!r} is reserved for a built-in system; rename the tag")
    with transaction.atomic():
        # Re-importing a permutation's run for the same system replaces the previous one.
        for old in PermutationResult.objects.filter(permutation=perm, system=system, run__isnull=False):
            if old.run is not None:
                old.run.delete()
        try:
            run = run_import(collection=experiment.collection, path=path, name=f"{system}.perm{perm_pk}", user=user)
        except ImportFailed as exc:
            reasons = "; ".join(f"line {e.get('line')}: {e.get('reason')}" for e in exc.errors[:5])
            raise ValidationError(f"{shown}: {reasons}") from exc
        foreign = run.rankings.exclude(turn__conversation=perm.conversation).values_list("turn__turn_id", flat=True)
        if foreign.exists():
            raise ValidationError(f"{shown}: turns {sorted(foreign)[:5]} are not in topic {perm.conversation.topic_id}")
        result, _ = PermutationResult.objects.update_or_create(
            permutation=perm, system=system, defaults={"run": run, "queries": {}}
        )
    permutation_experiment_rescore_schedule(experiment_id=experiment.pk)
    return result
