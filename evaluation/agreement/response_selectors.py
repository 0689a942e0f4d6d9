"""Reads for the agreement of two response label sets (nugget assignment or citation support): the sets a
collection has, the default pair, each set's labels keyed by item, and the report
(:mod:`evaluation.agreement.responses`)."""

from __future__ import annotations

from typing import Any

from ecast.models import Collection
from evaluation.agreement import responses
from evaluation.agreement.selectors import AgreementError
from evaluation.models import CitationLabel, Nugget, NuggetAssignment, ResponseLabelSet, ResponseSentence

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
    *, collection: Collection, a: ResponseLabelSet | None = None
) -> tuple[ResponseLabelSet | None, ResponseLabelSet | None]:
    """A = the given set, else the oldest human set (imported or assessed) of a kind with two sets; B = the newest
    other set of A's kind (for nugget sets: over A's bank), an LLM set first."""
    sets = response_label_sets(collection=collection)
    if a is None:
        paired = [s for s in sets if len(_partners(s, sets)) > 0]
        humans = [s for s in paired if s.source != ResponseLabelSet.Source.LLM]
        first = humans or paired
        a = first[0] if first else None
    if a is None:
        return None, None
    partners = _partners(a, sets)
    llm = [s for s in partners if s.source == ResponseLabelSet.Source.LLM]
    last = llm or partners
    return a, (last[-1] if last else None)


def _partners(a: ResponseLabelSet, sets: list[ResponseLabelSet]) -> list[ResponseLabelSet]:
    return [s for s in sets if s.pk != a.pk and s.kind == a.kind and s.bank_id == a.bank_id]


def check_response_pair(*, a: ResponseLabelSet, b: ResponseLabelSet) -> None:
    """Refuse pairs that do not label the same items."""
    if a.collection_id != b.collection_id:
        raise AgreementError(f"{a.name!r} and {b.name!r} belong to different collections")
    if a.pk == b.pk:
        raise AgreementError("pick two different label sets: a set always agrees with itself")
    if a.kind != b.kind:
        raise AgreementError(
            f"{a.name!r} labels {a.get_kind_display().lower()}, {b.name!r} {b.get_kind_display().lower()}"
        )
    if a.bank_id != b.bank_id:
        raise AgreementError(f"{a.name!r} and {b.name!r} assign the nuggets of different banks")


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


def set_run_scores(*, label_set: ResponseLabelSet) -> dict[str, dict[str, float]]:
    """Per run, the scores this set's labels alone give (the nuggetizer measures, or citation support)."""
    if label_set.kind == ResponseLabelSet.Kind.NUGGETS:
        nuggets: dict[str, list[tuple[str, str]]] = {}
        for turn, pk, importance in Nugget.objects.filter(
            bank_id=label_set.bank_id, merged_into__isnull=True
        ).values_list("turn__turn_id", "pk", "importance"):
            nuggets.setdefault(turn, []).append((str(pk), importance))
        labels = {
            (run, turn, str(n)): label
            for turn, run, n, label in NuggetAssignment.objects.filter(label_set=label_set).values_list(
                "response__turn__turn_id", "response__run__name", "nugget_id", "label"
            )
        }
        return responses.nugget_run_scores(labels, nuggets)
    rows = CitationLabel.objects.filter(label_set=label_set).values_list(
        "sentence__response__run_id",
        "sentence__response__run__name",
        "sentence__response__turn__turn_id",
        "sentence__index",
        "sentence__citations",
        "passage_id",
        "support",
    )
    first: dict[tuple[str, str, int], str] = {}
    run_ids = set()
    for run_id, run, turn, index, cited, pid, support in rows:
        run_ids.add(run_id)
        if cited and cited[0] == pid:  # citation support reads the first citation only
            first[(run, turn, index)] = support
    sentences: dict[tuple[str, str], list[tuple[int, bool]]] = {}
    for run, turn, index, cited in ResponseSentence.objects.filter(response__run_id__in=run_ids).values_list(
        "response__run__name", "response__turn__turn_id", "index", "citations"
    ):
        sentences.setdefault((run, turn), []).append((index, bool(cited)))
    return responses.citation_run_scores(first, sentences)


def response_agreement_report(*, a: ResponseLabelSet, b: ResponseLabelSet) -> dict[str, Any]:
    """Item agreement of A and B (by condition: the one the human side recorded), and τ per measure."""
    check_response_pair(a=a, b=b)
    labels_a, cond_a = set_items(label_set=a)
    labels_b, cond_b = set_items(label_set=b)
    conditions = {k: cond_a.get(k) or cond_b.get(k) or "" for k in set(labels_a) & set(labels_b)}
    report = responses.label_agreement(labels_a, labels_b, labels=responses.LABELS[a.kind], conditions=conditions)
    report["taus"] = responses.ranking_taus(
        set_run_scores(label_set=a), set_run_scores(label_set=b), responses.MEASURES[a.kind]
    )
    report.update(a=a, b=b, kind=a.kind)
    return report
