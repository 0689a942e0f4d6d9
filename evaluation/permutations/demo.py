"""Demo data for permutations: SE/FT/PT classes for the CAsT 2020 demo collection and a small experiment.

CAsT 2020 ships no SE/FT/PT labels. Its v1.1 annotated topics give, per turn, the earlier turns its query depends on
(``query_turn_dependence``) and the turn whose answer it depends on (``result_turn_dependence``); both are read as
dependencies and turned into classes by ``permutations.classes_from_dependencies`` (no dependency → SE, only on
turn 1 → FT, otherwise PT of the referenced turn, which is made an SE block head). Chains (a PT needing another PT)
cannot be expressed by the class rules; they are reported, not hidden. v1.0 and v1.1 number topic 81 differently,
so turns are matched by (topic, raw utterance), never by number.

``load(stdout=...)`` is idempotent and synchronous (< 30 s); ``build_collection`` builds an equivalent collection
from ../shared/data (2020 topics + crowd passage texts + 2020 qrels) for the benchmark when the demo is absent.
"""

from __future__ import annotations

import csv
import gzip
import json
import os
import sys
from pathlib import Path
from typing import Any, TextIO

from django.conf import settings
from django.db import transaction

from ecast.core.jobs import heartbeat
from ecast.models import Collection, Conversation, Passage, Turn
from evaluation.models import PermutationExperiment, Qrel, QrelsVersion
from evaluation.permutations import services as svc
from evaluation.permutations.retrieval import SYSTEMS

DEMO_COLLECTION = "CAsT 2020 demo"
DEMO_EXPERIMENT = "Demo: CAsT 2020 permutations"


def shared_data_dir() -> Path:
    return Path(os.environ.get("ECAST_SHARED_DATA", Path(settings.BASE_DIR).parent / "shared" / "data"))


def annotated_dependencies(path: Path) -> dict[tuple[str, str], list[str]]:
    """(topic, normalised raw utterance) → normalised utterances of the turns it depends on (query and result
    dependence): texts, not numbers, so a renumbered topic still resolves them."""
    out: dict[tuple[str, str], list[str]] = {}
    numbers: dict[tuple[str, int], str] = {}
    data = json.loads(path.read_text(encoding="utf-8"))
    for topic in data:
        for t in topic["turn"]:
            numbers[(str(topic["number"]), t["number"])] = _norm(t["raw_utterance"])
    for topic in data:
        tid = str(topic["number"])
        for t in topic["turn"]:
            deps = list(t.get("query_turn_dependence") or [])
            if t.get("result_turn_dependence"):
                deps.append(t["result_turn_dependence"])
            out[(tid, _norm(t["raw_utterance"]))] = [numbers[(tid, d)] for d in deps if (tid, d) in numbers]
    return out


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


@transaction.atomic
def classes_from_annotations(*, collection: Collection, path: Path, overwrite: bool = False) -> dict[str, Any]:
    """Set SE/FT/PT classes (and ``relevant_turn_numbers``) of a CAsT 2020 collection from the v1.1 annotations."""
    deps_by_text = annotated_dependencies(path)
    matched = unmatched = 0
    for conv in collection.conversations.all():
        turns = list(conv.turns.order_by("number"))
        by_text = {_norm(t.raw_utterance): t.number for t in turns}
        for t in turns:
            texts = deps_by_text.get((conv.topic_id, _norm(t.raw_utterance)))
            if texts is None:
                unmatched += 1
                continue
            matched += 1
            nums = sorted({by_text[x] for x in texts if x in by_text})
            if t.relevant_turn_numbers != nums:
                t.relevant_turn_numbers = nums
                t.save(update_fields=["relevant_turn_numbers"])
    derived = svc.utterance_classes_derive(collection=collection, overwrite=overwrite)
    return {"matched": matched, "unmatched": unmatched, **derived}


@transaction.atomic
def build_collection(*, name: str, data_dir: Path, topics: list[str] | None = None) -> Collection:
    """An equivalent of the demo collection from shared data: 2020 manual topics, crowd passage texts, 2020 qrels."""
    coll, _ = Collection.objects.get_or_create(name=name, defaults={"year": 2020, "relevance_threshold": 2})
    if coll.conversations.exists():
        return coll
    cast = data_dir / "cast" / "2020"
    for topic in json.loads((cast / "2020_manual_evaluation_topics_v1.0.json").read_text(encoding="utf-8")):
        tid = str(topic["number"])
        if topics and tid not in topics:
            continue
        conv = Conversation.objects.create(collection=coll, topic_id=tid, title=topic.get("title", ""))
        Turn.objects.bulk_create(
            [
                Turn(
                    conversation=conv,
                    collection=coll,
                    number=t["number"],
                    turn_id=f"{tid}_{t['number']}",
                    raw_utterance=t["raw_utterance"],
                    manual_rewrite=t.get("manual_rewritten_utterance", ""),
                )
                for t in topic["turn"]
            ]
        )
    texts: dict[str, str] = {}
    csv.field_size_limit(sys.maxsize)
    for f in sorted((data_dir / "crowd" / "cast2020_snippets_lajewska2023").glob("*.csv.gz")):
        with gzip.open(f, "rt", encoding="utf-8", newline="") as fh:
            for row in csv.DictReader(fh):
                texts.setdefault(row["Input.passage_id"], row["Input.passage"])
    existing = set(Passage.objects.filter(passage_id__in=texts).values_list("passage_id", flat=True))
    Passage.objects.bulk_create(
        [
            Passage(passage_id=p, text=t, source="crowd/cast2020_snippets")
            for p, t in texts.items()
            if p not in existing
        ],
        batch_size=1000,
    )
    coll.corpus.add(*Passage.objects.filter(passage_id__in=texts).values_list("pk", flat=True))
    version, _ = QrelsVersion.objects.get_or_create(collection=coll, name="original")
    turns = {t.turn_id: t for t in coll.turns.all()}
    rows = []
    seen = set()
    for line in open(cast / "2020qrels.txt", encoding="utf-8"):
        parts = line.split()
        if len(parts) == 4 and parts[0] in turns and (parts[0], parts[2]) not in seen:
            seen.add((parts[0], parts[2]))
            rows.append(Qrel(version=version, turn=turns[parts[0]], passage_id=parts[2], grade=int(parts[3])))
    Qrel.objects.bulk_create(rows, batch_size=5000)
    return coll


def load(stdout: TextIO | None = None) -> None:
    """Give the demo collection SE/FT/PT classes and run a small permutation experiment (synchronously)."""
    out = stdout or sys.stdout
    coll = Collection.objects.filter(name=DEMO_COLLECTION).first()
    # The full v1.1 annotations from ../shared/data when present, else the slice shipped with the demo (81–83).
    path = shared_data_dir() / "cast" / "2020" / "automatic_evaluation_topics_annotated_v1.1.json"
    if not path.exists():
        path = Path(settings.BASE_DIR) / "ecast" / "demo" / "automatic_evaluation_topics_annotated_v1.1_81-83.json"
    if coll is None:
        out.write(f"permutations demo: collection {DEMO_COLLECTION!r} not found; skipped\n")
        return
    if not path.exists():
        out.write(f"permutations demo: {path} not found; classes not derived\n")
        return
    info = classes_from_annotations(collection=coll, path=path)
    out.write(
        f"permutations demo: classes derived for {info['turns_set']} turns ({info['matched']} matched to the "
        f"annotations); {len(info['unguaranteed'])} annotated dependencies are chains the rules cannot guarantee\n"
    )
    _demo_experiment(coll, out)


def _demo_experiment(coll: Collection, out: TextIO) -> None:
    if PermutationExperiment.objects.filter(collection=coll, name=DEMO_EXPERIMENT).exists():
        out.write("permutations demo: experiment already present\n")
        return
    version = coll.qrels_versions.order_by("created_at").first()
    if version is None:
        out.write("permutations demo: no qrels version; experiment skipped\n")
        return
    systems = list(SYSTEMS)
    convs = [c for c in coll.conversations.order_by("id") if all(t.utterance_class for t in c.turns.all())][:8]
    exp = svc.permutation_experiment_create(
        collection=coll,
        name=DEMO_EXPERIMENT,
        qrels_version=version,
        systems=systems,
        k=50,
        seed=2022,
        conversations=convs,
        start=False,
    )
    # Synchronous on purpose: the demo must be complete when load_demo returns, with or without a worker.
    with heartbeat(svc.KIND, exp.pk):  # beating, so the sweeper never queues it to a worker meanwhile
        for conv_id in sorted({c.pk for c in convs}):
            svc.permutation_chunk_run(experiment_id=exp.pk, conversation_id=conv_id, queue_scoring=False)
        exp.refresh_from_db()
        if exp.status == PermutationExperiment.Status.RUNNING:
            svc.permutation_experiment_score(experiment=exp)
    out.write(f"permutations demo: experiment {exp.name!r} with {len(convs)} conversations × ≤ 51 orders × "
              f"{len(systems)} systems\n")  # fmt: skip
