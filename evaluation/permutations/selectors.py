"""Reads for permutation experiments and utterance labels: frames for the analyses, exports, agreement."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd
from django.core.exceptions import ValidationError
from django.db.models import Count, QuerySet

from ecast.core.permissions import is_admin
from ecast.models import Collection, Conversation, Passage, Turn
from ecast.selectors import leaf_paths
from evaluation.models import Permutation, PermutationExperiment, PermutationResult, Qrel, UtteranceLabel
from evaluation.permutations import anova
from evaluation.permutations import orders as permutations
from evaluation.permutations.retrieval import SYSTEMS


def experiment_list(*, collection: Collection | None = None) -> QuerySet[PermutationExperiment]:
    qs = PermutationExperiment.objects.select_related("collection", "qrels_version", "scored_version")
    return qs.filter(collection=collection) if collection else qs


def experiment_ids_for_changed_qrels(*, version_id: int, turn_ids: list[int]) -> list[int]:
    """Experiments scored against this version whose conversations contain any of the changed turns."""
    qs = PermutationExperiment.objects.filter(qrels_version_id=version_id).exclude(
        status__in=[PermutationExperiment.Status.FAILED, PermutationExperiment.Status.RUNNING]
    )
    if turn_ids:
        convs = Turn.objects.filter(pk__in=turn_ids).values("conversation_id")
        qs = qs.filter(permutations__conversation_id__in=convs)
    return list(qs.values_list("id", flat=True).distinct())


def experiment_conversation_ids(*, experiment: PermutationExperiment) -> list[int]:
    """The conversations of an experiment's plan (one retrieval chunk each), in id order."""
    return sorted(entry["conversation"] for entry in experiment.plan)


def experiment_corpus(*, experiment: PermutationExperiment) -> tuple[list[str], list[str]]:
    """Passage ids and texts to index: the collection's judged passages that have text, or its whole corpus (the
    passages imported for it; never those of another corpus stored beside it)."""
    qs = Passage.objects.order_by("passage_id")
    if experiment.corpus == "all":
        qs = qs.filter(collections=experiment.collection)
    else:
        judged = Qrel.objects.filter(version__collection=experiment.collection).values("passage_id")
        canonical = Turn.objects.filter(collection=experiment.collection).values("canonical_response_id")
        qs = qs.filter(passage_id__in=judged) | qs.filter(passage_id__in=canonical)
    ids, texts = [], []
    for pid, text in qs.values_list("passage_id", "text").iterator(chunk_size=5000):
        ids.append(pid)
        texts.append(text)
    if not ids:
        raise ValidationError(f"collection {experiment.collection.name!r} has no passage texts to index")
    return ids, texts


def conversation_labels(*, conversation: Conversation) -> list[tuple[int, str]]:
    """(number, class) in original order; turn 1's class is irrelevant (it is fixed) and defaults to SE."""
    turns = list(conversation.turns.order_by("number").values_list("number", "utterance_class"))
    return permutations.path_labels(turns)


def conversation_paths(*, conversation: Conversation) -> list[tuple[str, list[Turn]]]:
    """What is permuted in a conversation, as (path name, its turns in order): ("", every turn) when it is linear;
    in a tree (CAsT 2022) one entry per root-to-leaf path, named by its leaf's branch-aware number, with the User
    and System turns on it; paths holding the same User turns are listed once (see ``orders``)."""
    return turns_paths(list(conversation.turns.order_by("number")))


def turns_paths(turns: list[Turn]) -> list[tuple[str, list[Turn]]]:
    """``conversation_paths`` of one conversation's turns already read (in number order)."""
    if not any(t.tree_number for t in turns):
        return [("", turns)]
    out: list[tuple[str, list[Turn]]] = []
    seen: set[tuple[int, ...]] = set()
    for path in leaf_paths(turns):
        users = tuple(t.number for t in path if not t.is_system)
        if users not in seen:
            seen.add(users)
            out.append((path[-1].tree_number, path))
    return out


def permutation_paths(*, conversation: Conversation) -> list[tuple[str, list[tuple[int, str]]]]:
    """(path name, (number, class) of its User turns) for every path permuted in the conversation."""
    return turns_permutation_paths(list(conversation.turns.order_by("number")))


def conversations_permutation_paths(
    *, conversation_ids: Iterable[int]
) -> dict[int, list[tuple[str, list[tuple[int, str]]]]]:
    """``permutation_paths`` of many conversations, their turns read in one query (not one per conversation)."""
    ids = list(conversation_ids)
    turns = _turns_by_conversation(ids)
    return {c: turns_permutation_paths(turns[c]) for c in ids}


def turns_permutation_paths(turns: list[Turn]) -> list[tuple[str, list[tuple[int, str]]]]:
    """``permutation_paths`` of one conversation's turns already read (in number order)."""
    return [
        (name, permutations.path_labels([(t.number, t.utterance_class) for t in path if not t.is_system]))
        for name, path in turns_paths(turns)
    ]


def _turns_by_conversation(conversation_ids: Iterable[int]) -> dict[int, list[Turn]]:
    """Conversation id → its turns in number order, for many conversations in one query."""
    out: dict[int, list[Turn]] = defaultdict(list)
    for t in Turn.objects.filter(conversation_id__in=list(conversation_ids)).order_by("conversation_id", "number"):
        out[t.conversation_id].append(t)
    return out


def system_label(system: str) -> str:
    """Display name of a system id (built-in ids map to the paper's names; imported runs keep their tag)."""
    spec = SYSTEMS.get(system)
    return spec.label if spec else system


def experiment_frame(*, experiment: PermutationExperiment, systems: list[str] | None = None) -> pd.DataFrame:
    """One row per scored (permutation, system): topic, perm, is_original, system, score, permutation_id."""
    qs = PermutationResult.objects.filter(permutation__experiment=experiment, mean__isnull=False)
    if systems:
        qs = qs.filter(system__in=systems)
    found = list(
        qs.values_list(
            "permutation__conversation__topic_id",
            "permutation__path",
            "permutation__index",
            "permutation__is_original",
            "system",
            "mean",
            "permutation_id",
        )
    )
    # Each path of a tree is a conversation of its own for every analysis: topic "142/5-9".
    rows = [(f"{topic}/{path}" if path else topic, *rest) for topic, path, *rest in found]
    frame = pd.DataFrame(rows, columns=["topic", "perm", "is_original", "system", "score", "permutation_id"])
    frame["system"] = frame["system"].map(system_label)
    return frame


def complete_cells(frame: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """Keep only permutations scored for every system (what ANOVA and Tables 2–3 need); returns dropped count."""
    if frame.empty:
        return frame, 0
    n_sys = frame["system"].nunique()
    size = frame.groupby(["topic", "perm"])["system"].transform("nunique")
    kept = frame[size == n_sys]
    dropped = frame[size != n_sys][["topic", "perm"]].drop_duplicates().shape[0]
    return kept, int(dropped)


def experiment_analysis(*, experiment: PermutationExperiment, systems: list[str] | None = None) -> dict[str, Any]:
    """Every report of the experiment page as plain data (also the JSON download)."""
    frame, dropped = complete_cells(experiment_frame(experiment=experiment, systems=systems))
    out: dict[str, Any] = {
        "experiment": experiment.pk,
        "measure": experiment.measure,
        "qrels_version": experiment.scored_version.name if experiment.scored_version else None,
        "qrels_judgments": experiment.scored_qrels_count,
        "scored_at": experiment.scored_at.isoformat() if experiment.scored_at else None,
        "dropped_permutations": dropped,
        "rows": int(len(frame)),
    }
    if frame.empty or frame["system"].nunique() < 1:
        return out
    t2 = anova.min_mean_max(frame)
    out["table2"] = [{"system": s, **{k: float(v) for k, v in r.items()}} for s, r in t2.iterrows()]
    mat, margin = anova.max_distance(frame)
    out["table3"] = {
        "systems": list(mat.index),
        "matrix": [[None if pd.isna(v) else float(v) for v in row] for row in mat.to_numpy()],
        "best_margin": {s: (None if pd.isna(v) else float(v)) for s, v in margin.items()},
    }
    out["win_fractions"] = {t: w.round(6).to_dict(orient="index") for t, w in anova.win_fractions(frame).items()}
    pm = anova.permutation_means(frame)
    out["permutation_means"] = pm.to_dict(orient="records")
    systems_n = frame["system"].nunique()
    topics_n = frame["topic"].nunique()
    if systems_n >= 2 and topics_n >= 2:
        orig = frame[frame["is_original"]]
        for name, data, fit in (("md0", orig, anova.md0), ("md1", frame, anova.md1)):
            try:
                res = fit(data)
            except ValueError as exc:
                out[name] = {"error": str(exc)}
                continue
            pairs = anova.tukey_hsd(res)
            out[name] = {**res.to_dict(), "tukey": [p.__dict__ for p in pairs], "tiers": anova.tiers(res, pairs)}
    return out


def experiment_sampled_counts(*, experiment: PermutationExperiment) -> dict[tuple[int, str], int]:
    """How many orders each conversation (path) has so far: ``{(conversation id, path): n}``."""
    return {
        (conv, path): n
        for conv, path, n in Permutation.objects.filter(experiment=experiment)
        .values("conversation_id", "path")
        .annotate(n=Count("id"))
        .values_list("conversation_id", "path", "n")
    }


def experiment_progress(*, experiment: PermutationExperiment) -> dict[str, Any]:
    # "sampled" lets the page fill its "orders used" column as each conversation's chunk samples its orders.
    sampled = experiment_sampled_counts(experiment=experiment)
    return {
        "sampled": [{"conversation": c, "path": p, "orders": n} for (c, p), n in sorted(sampled.items())],
        "id": experiment.pk,
        "status": experiment.status,
        "status_label": experiment.status_label,
        "chunks_done": experiment.progress_done,
        "chunks_total": experiment.progress_total,
        "error": experiment.error,
        "scored_at": experiment.scored_at.isoformat() if experiment.scored_at else None,
        "scored_version": experiment.scored_version.name if experiment.scored_version else None,
        "qrels_judgments": experiment.scored_qrels_count,
    }


def experiment_conversation_summary(*, experiment: PermutationExperiment) -> list[dict[str, Any]]:
    """Per conversation (path) of the plan: how many orders exist (exact), how many were sampled (None until its
    chunk samples them), whether the original is valid. By the labels the orders are sampled from; an experiment
    from before plans kept none, and is described by the turns' labels."""
    counts = experiment_sampled_counts(experiment=experiment)
    plan = {entry["conversation"]: entry["paths"] for entry in experiment.plan}
    convs = Conversation.objects.in_bulk(list(plan))
    turns = _turns_by_conversation([c for c, paths in plan.items() if not paths])  # one query for all of those
    out = []
    for conv_id in sorted(plan):
        if conv_id not in convs:
            continue  # deleted since (its orders went with it)
        from_plan = bool(plan[conv_id])
        for path, labels in plan[conv_id] or turns_permutation_paths(turns[conv_id]):
            if not from_plan and (conv_id, path) not in counts:
                continue  # a path the experiment had no orders of (its labels were incomplete then)
            s = permutations.structure_from_labels([(n, c) for n, c in labels])
            out.append(
                {
                    "conversation": convs[conv_id],
                    "path": path,
                    "sampled": counts.get((conv_id, path)),
                    "valid_orders": permutations.count_orders(s),
                    "original_valid": permutations.original_is_valid(s),
                }
            )
    return out


def permutation_topics(*, experiment: PermutationExperiment, conversation: Conversation | None = None) -> list[dict]:
    """CAsT-format topics, one per permutation: turn numbers keep their original values, the order changes."""
    qs = Permutation.objects.filter(experiment=experiment).select_related("conversation")
    if conversation is not None:
        qs = qs.filter(conversation=conversation)
    perms = list(qs.order_by("conversation_id", "index"))
    # One query for every conversation's turns, not one per conversation.
    turns = {
        conv_id: {t.number: t for t in conv_turns}
        for conv_id, conv_turns in _turns_by_conversation({p.conversation_id for p in perms}).items()
    }
    out = []
    for p in perms:
        conv = p.conversation
        tmap = turns[conv.pk]
        topic_turns = []
        for n in p.order:
            t = tmap[n]
            item: dict[str, Any] = {"number": n, "raw_utterance": t.raw_utterance}
            if t.manual_rewrite:
                item["manual_rewritten_utterance"] = t.manual_rewrite
            if t.automatic_rewrite:
                item["automatic_rewritten_utterance"] = t.automatic_rewrite
            if t.utterance_class:
                item["utterance_class"] = t.utterance_class
            topic_turns.append(item)
        out.append(
            {
                "number": conv.topic_id,
                "title": conv.title,
                "description": conv.description,
                "permutation_id": f"perm{p.pk}",
                **({"path": p.path} if p.path else {}),
                "permutation_index": p.index,
                "is_original": p.is_original,
                "turn": topic_turns,
            }
        )
    return out


# ---------------------------------------------------------------- labels


def labels_visible_to(*, user: Any, conversation: Conversation) -> dict[int, str]:
    """Turn pk → class as this user sees it: admins see the turn's class, labelers only their own labels."""
    if is_admin(user):
        return {t.pk: t.utterance_class for t in conversation.turns.all()}
    return dict(
        UtteranceLabel.objects.filter(turn__conversation=conversation, labeler=user).values_list(
            "turn_id", "utterance_class"
        )
    )


def label_agreement(*, collection: Collection) -> dict[str, Any]:
    """Fleiss' kappa over labelers of SE/FT/PT (statsmodels), on the turns labelled by the most common number of
    labelers (Fleiss' kappa needs the same number of ratings per item)."""
    # statsmodels takes about a second to import; only this report needs it.
    from statsmodels.stats.inter_rater import fleiss_kappa

    per_turn: dict[int, Counter] = {}
    for turn_id, cls in UtteranceLabel.objects.filter(turn__collection=collection).values_list(
        "turn_id", "utterance_class"
    ):
        per_turn.setdefault(turn_id, Counter())[cls] += 1
    labelers = UtteranceLabel.objects.filter(turn__collection=collection).values("labeler").distinct().count()
    sizes = Counter(sum(c.values()) for c in per_turn.values() if sum(c.values()) >= 2)
    out: dict[str, Any] = {"labelers": labelers, "turns_labelled": len(per_turn), "kappa": None, "items": 0}
    if not sizes:
        return out
    n_raters = max(sizes, key=lambda n: (sizes[n], n))
    table = np.array(
        [[c.get(k, 0) for k in permutations.CLASSES] for c in per_turn.values() if sum(c.values()) == n_raters]
    )
    out.update(
        {
            "raters_per_item": n_raters,
            "items": int(table.shape[0]),
            "kappa": float(fleiss_kappa(table, method="fleiss")) if table.shape[0] >= 2 else None,
            "observed_agreement": float(((table * (table - 1)).sum(axis=1) / (n_raters * (n_raters - 1))).mean()),
        }
    )
    return out


def conversations_with_label_status(*, collection: Collection, user: Any) -> list[dict[str, Any]]:
    """Conversations with how many of their turns carry a class (the turn's for admins, own labels otherwise)."""
    convs = list(collection.conversations.annotate(n=Count("turns")).order_by("id"))
    if is_admin(user):
        done = dict(
            Turn.objects.filter(collection=collection)
            .exclude(utterance_class="")
            .values("conversation_id")
            .annotate(n=Count("id"))
            .values_list("conversation_id", "n")
        )
    else:
        done = dict(
            UtteranceLabel.objects.filter(turn__collection=collection, labeler=user)
            .values("turn__conversation_id")
            .annotate(n=Count("id"))
            .values_list("turn__conversation_id", "n")
        )
    return [{"conversation": c, "turns": c.n, "labelled": done.get(c.pk, 0)} for c in convs]
