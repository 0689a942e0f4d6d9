"""Reads for the agreement of two response label sets (nugget assignment or citation support): the sets a
collection has, the default pair, each set's labels keyed by item, and the report
(:mod:`evaluation.agreement.responses`)."""

from __future__ import annotations

from typing import Any

from ecast.models import Collection
from evaluation.agreement import responses
from evaluation.agreement.selectors import AgreementError
from evaluation.models import CitationLabel, NuggetAssignment, ResponseLabelSet, ResponseRun
from evaluation.responses import scores
from evaluation.responses.selectors import label_set_scores

SEP = "\x1f"  # joins run name and item ids into one item id (no run name holds it)


def response_label_sets(*, collection: Collection) -> list[ResponseLabelSet]:
    return list(
        ResponseLabelSet.objects.filter(collection=collection)
        .select_related("bank")
        .order_by("kind", "created_at", "id")
    )


def collections_with_label_sets() -> list[Collection]:
    return list(Collection.objects.filter(response_label_sets__isnull=False).distinct().order_by("name"))


def response_default_pair(
    sets: list[ResponseLabelSet], *, a: ResponseLabelSet | None = None
) -> tuple[ResponseLabelSet | None, ResponseLabelSet | None]:
    """Among a collection's ``sets`` (:func:`response_label_sets`): A = the given set, else the oldest human set
    (imported or assessed) of a kind with two sets; B = the newest other set of A's kind (for nugget sets: over A's
    bank), an LLM set first."""
    if a is None:
        paired = [s for s in sets if len(partners_of(s, sets)) > 0]
        humans = [s for s in paired if s.source != ResponseLabelSet.Source.LLM]
        first = humans or paired
        a = first[0] if first else None
    if a is None:
        return None, None
    partners = partners_of(a, sets)
    llm = [s for s in partners if s.source == ResponseLabelSet.Source.LLM]
    last = llm or partners
    return a, (last[-1] if last else None)


def partners_of(a: ResponseLabelSet, sets: list[ResponseLabelSet]) -> list[ResponseLabelSet]:
    """The sets of ``sets`` that label the same items as ``a``: its kind and, for nuggets, its bank."""
    return [s for s in sets if s.pk != a.pk and s.kind == a.kind and s.bank_id == a.bank_id]


def check_response_pair(*, a: ResponseLabelSet, b: ResponseLabelSet) -> None:
    """Refuse pairs that do not label the same items."""
    if a.collection_id != b.collection_id:
        raise AgreementError(f"{a.name!r} and {b.name!r} belong to different collections")
    if a.pk == b.pk:
        raise AgreementError("pick two different label sets: a set always agrees with itself")
    if a.kind != b.kind:
        raise AgreementError(
            f"nothing to compare: {a.name!r} labels {a.get_kind_display().lower()} and {b.name!r} "
            f"{b.get_kind_display().lower()}, so no item is labelled in both; pick two sets of one kind"
        )
    if a.bank_id != b.bank_id:
        raise AgreementError(
            f"nothing to compare: {a.name!r} and {b.name!r} assign the nuggets of different banks, so no "
            "(answer, nugget) pair is labelled in both; pick two sets over one bank"
        )


def set_items(*, label_set: ResponseLabelSet) -> tuple[dict[responses.Key, str], dict[responses.Key, str]]:
    """({(turn id, item id): label}, {(turn id, item id): condition}) of one set."""
    labels: dict[responses.Key, str] = {}
    conditions: dict[responses.Key, str] = {}
    if label_set.kind == ResponseLabelSet.Kind.NUGGETS:
        rows: Any = NuggetAssignment.objects.filter(label_set=label_set).values_list(
            "response__turn__turn_id", "response__run__name", "nugget_id", "label", "condition"
        )
        for turn, run, nugget, label, condition in rows:
            key = (turn, f"{run}{SEP}{nugget}")
            labels[key], conditions[key] = label, condition
    else:
        rows = CitationLabel.objects.filter(label_set=label_set).values_list(
            "sentence__response__turn__turn_id",
            "sentence__response__run__name",
            "sentence__index",
            "passage_id",
            "support",
            "condition",
        )
        for turn, run, index, pid, support, condition in rows:
            key = (turn, f"{run}{SEP}{index}{SEP}{pid}")
            labels[key], conditions[key] = support, condition
    return labels, conditions


def shared_run_scores(*, a: ResponseLabelSet, b: ResponseLabelSet) -> tuple[dict, dict]:
    """Per run name, the scores A's and B's labels give over the items both scored (the leaderboard's tables)."""
    by_a, by_b = scores.shared_run_scores(label_set_scores(label_set=a), label_set_scores(label_set=b))
    names = dict(ResponseRun.objects.filter(collection_id=a.collection_id).values_list("pk", "name"))
    return {names[r]: v for r, v in by_a.items()}, {names[r]: v for r, v in by_b.items()}


def response_agreement_report(*, a: ResponseLabelSet, b: ResponseLabelSet) -> dict[str, Any]:
    """Item agreement of A and B (by condition: the one the human side recorded), and τ per measure."""
    check_response_pair(a=a, b=b)
    labels_a, cond_a = set_items(label_set=a)
    labels_b, cond_b = set_items(label_set=b)
    conditions = {k: cond_a.get(k) or cond_b.get(k) or "" for k in set(labels_a) & set(labels_b)}
    report = responses.label_agreement(labels_a, labels_b, labels=responses.LABELS[a.kind], conditions=conditions)
    report["taus"] = responses.ranking_taus(*shared_run_scores(a=a, b=b), responses.MEASURES[a.kind])
    report.update(a=a, b=b, kind=a.kind)
    return report
