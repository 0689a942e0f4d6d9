"""`manage.py load_demo`: the "CAsT 2020 demo" collection, demo accounts, and each feature's demo data.

Idempotent: every step first checks whether its data is already there, so running it twice changes nothing.
The files live in ``ecast/demo/`` (sources and licences: DATA_LICENSES.md); the product never reads ../shared.
"""

from __future__ import annotations

import gzip
import importlib
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.contrib.auth.models import Group, User
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from ecast.core.demos import demo_parts
from ecast.core.permissions import ADMIN, ASSESSOR, RATER
from ecast.imports import registry
from ecast.imports.services import import_file
from ecast.models import Collection, ImportJob, Paraphrase, Passage

DEMO_DIR = Path(__file__).resolve().parents[2] / "demo"
DEMO_COLLECTION = "CAsT 2020 demo"
# (username, password, role): memorable on purpose; they are printed by `make run`. Never use them in production.
DEMO_ACCOUNTS = [
    ("admin", "demo-admin", ADMIN),
    ("rater1", "demo-rater1", RATER),
    ("rater2", "demo-rater2", RATER),
    ("rater3", "demo-rater3", RATER),
    ("assessor1", "demo-assessor1", ASSESSOR),
]
# The demo passage texts: every public passage text found (DATA_LICENSES.md), one file per source, each id once.
# Only the CAsT 2020 files are imported for the demo collection, so only they are its corpus, the passages its
# built-in runs retrieve from; the CAsT 2021 and iKAT texts are stored for no collection.
COLLECTION_CORPUS = [
    "corpus_cast2020_canonical.tsv.gz",
    "corpus_cast2020_crowd.tsv.gz",
]
CORPUS = [
    *COLLECTION_CORPUS,
    "corpus_cast2021_canonical.tsv.gz",
    "corpus_ikat2023_provenance.tsv.gz",
]
# Real systems' runs over the full CAsT 2020 corpus (MS MARCO + TREC CAR): their passages are ids, and only the few
# that are in the demo corpus have text. Their descriptions say so (``_id_only``).
RUNS = [
    ("decaf_exp1_81-83.run", "decaf-exp1", "DECAF exp1: T5 rewriter + BM25 (automatic topics), top 100"),
    ("decaf_exp2_81-83.run", "decaf-exp2", "DECAF exp2: T5 rewriter + BM25 + dense re-ranker, top 100"),
    ("decaf_exp3_81-83.run", "decaf-exp3", "DECAF exp3: T5 rewriter + dense retrieval, top 100"),
    ("decaf_exp4_81-83.run", "decaf-exp4", "DECAF exp4: T5 rewriter + SPLADE, top 100"),
]


@dataclass
class Step:
    """One demo import: skipped when ``present`` says its data is already loaded."""

    kind: str
    file: str
    options: dict[str, Any] = field(default_factory=dict)
    for_collection: bool = True  # imported for the demo collection (passages: they join its corpus)


def _passage_ids(path: Path) -> list[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return [line.split("\t", 1)[0] for line in fh if line.strip()]


def demo_corpus_ids(names: list[str] | None = None) -> list[str]:
    """Ids of the passages with text shipped with the demo (of the files ``names``, else of all), sorted."""
    return sorted({pid for name in names or CORPUS for pid in _passage_ids(DEMO_DIR / name)})


def _id_only(path: Path, description: str, corpus: set[str]) -> str:
    """A DECAF run's description, marked id-only with the share of its ranked passages that have demo text."""
    docs = [line.split()[2] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    share = sum(d in corpus for d in docs) / max(len(docs), 1)
    return (
        f"Id-only run (passage ids of the full CAsT 2020 corpus; {share:.0%} of its {len(docs):,} ranked passages "
        f"have text in the demo corpus). {description}. Source: DECAF (Alessio, Faggioli & Ferro, SIGIR 2023)."
    )


def _present(step: Step, collection: Collection) -> bool:
    if step.kind == "cast_topics":
        return collection.turns.exists()
    if step.kind == "ecast_csv":
        return Paraphrase.objects.filter(turn__collection=collection, origin=Paraphrase.Origin.IMPORTED).exists()
    if step.kind == "passages_tsv":
        ids = _passage_ids(DEMO_DIR / step.file)
        stored = collection.corpus if step.for_collection else Passage.objects
        return stored.filter(passage_id__in=ids).count() == len(set(ids))
    # Kinds other apps own (qrels, runs) say themselves whether a run or qrels version of that name exists.
    kind = registry.get(step.kind)
    if kind is None or kind.existing is None:
        raise ValueError(f"unknown demo step {step.kind}")
    return kind.existing(collection, step.options) is not None


def demo_steps() -> list[Step]:
    """The demo imports in dependency order (turns before paraphrases, qrels and runs)."""
    steps = [
        Step(
            "cast_topics",
            "2020_manual_evaluation_topics_v1.0_extended.json",
            {"year": 2020},
        ),
        Step("ecast_csv", "ECAsT_81-83.csv"),
        *(Step("passages_tsv", name, for_collection=name in COLLECTION_CORPUS) for name in CORPUS),
        Step("qrels", "2020qrels_81-83.txt", {"version": "original"}),
    ]
    corpus = set(demo_corpus_ids())
    steps += [
        Step("run", file, {"name": name, "description": _id_only(DEMO_DIR / file, desc, corpus)})
        for file, name, desc in RUNS
    ]
    return steps


def ensure_accounts() -> list[tuple[str, str, str, bool]]:
    """Create the demo accounts that do not exist; never touch existing ones. Returns (user, pw, role, created)."""
    result = []
    for username, password, role in DEMO_ACCOUNTS:
        group, _ = Group.objects.get_or_create(name=role)
        user = User.objects.filter(username=username).first()
        created = user is None
        if user is None:
            user = User(username=username, is_staff=role == ADMIN, is_superuser=role == ADMIN)
            user.set_password(password)
            user.save()
        if not user.groups.filter(pk=group.pk).exists():
            user.groups.add(group)
        result.append((username, password, role, created))
    return result


def demo_collection_load(*, stdout: Any) -> Collection:
    """The demo collection and everything imported from ``ecast/demo/`` (no feature demos); idempotent."""
    admin = User.objects.filter(username=DEMO_ACCOUNTS[0][0]).first()
    with transaction.atomic():
        collection, created = Collection.objects.get_or_create(
            name=DEMO_COLLECTION,
            defaults={
                "year": 2020,
                "relevance_threshold": 2,
                "corpus_note": "CAsT 2020 passage ids (MS MARCO v1 MARCO_…, TREC CAR v2 CAR_…). The demo corpus has "
                "text for the public passages only: CAsT 2020 canonical and crowd-annotated passages; ecast's BM25 "
                "demo runs search it, the DECAF runs are id-only. The demo also stores the texts of CAsT 2021 "
                "canonical and iKAT 2023 provenance passages, which belong to other corpora.",
            },
        )
    stdout.write(f"{'Created' if created else 'Found'} collection “{collection.name}”.\n")
    for step in demo_steps():
        if _present(step, collection):
            stdout.write(f"  {step.kind:<13} {step.file}: already loaded\n")
            continue
        job: ImportJob = import_file(
            kind=step.kind,
            path=DEMO_DIR / step.file,
            collection=collection if step.for_collection else None,
            options=step.options,
            user=admin,
        )
        if job.status != ImportJob.Status.SUCCEEDED:
            errors = "\n".join(f"    {e.get('file')}:{e.get('line')}: {e.get('reason')}" for e in job.errors[:20])
            raise CommandError(f"demo import of {step.file} ({step.kind}) failed:\n{errors}")
        counts = ", ".join(f"{k} {v}" for k, v in (job.counts or {}).items())
        stdout.write(f"  {step.kind:<13} {step.file}: imported ({counts})\n")
    _other_corpora_unlinked(collection)
    return collection


def _other_corpora_unlinked(collection: Collection) -> None:
    """Keep the CAsT 2021 and iKAT texts out of the demo collection's corpus: a demo loaded before collections had
    corpora imported them for it, and the migration linked each passage to the collection it was imported for."""
    others = [pid for name in CORPUS if name not in COLLECTION_CORPUS for pid in _passage_ids(DEMO_DIR / name)]
    linked = collection.corpus.filter(passage_id__in=others).values_list("pk", flat=True)
    collection.corpus.through.objects.filter(collection=collection, passage_id__in=list(linked)).delete()


class Command(BaseCommand):
    help = "Load the CAsT 2020 demo collection (topics 81–83), demo accounts and every feature's demo data."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--strict", action="store_true", help="Fail when a feature's demo module fails (default: warn)."
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        admin_accounts = ensure_accounts()
        demo_collection_load(stdout=self.stdout)
        self._feature_demos(strict=opts["strict"])
        self.stdout.write(self.style.SUCCESS("Demo data ready. Demo logins:"))
        for username, password, role, was_created in admin_accounts:
            note = "" if was_created else " (existing account, password unchanged)"
            self.stdout.write(f"  {role:<9} {username:<10} password: {password}{note}")

    def _feature_demos(self, *, strict: bool) -> None:
        # Each feature registers its demo module (ecast.core.demos), in the order its stage needs.
        for name in (part.module for part in demo_parts()):
            try:
                module = importlib.import_module(name)
                self.stdout.write(f"Loading {name} …")
                module.load(stdout=self.stdout)
            except Exception as exc:
                if strict:
                    raise CommandError(f"{name}.load failed: {exc}") from exc
                self.stderr.write(self.style.ERROR(f"{name}.load failed; continuing without it:"))
                self.stderr.write(traceback.format_exc())
