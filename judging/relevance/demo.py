"""Relevance-judging demo on "CAsT 2020 demo": a depth-3 pool of the BM25 demo runs, "original + new", one lease.

The pool takes ecast's BM25 runs over the demo corpus (``evaluation.robustness.demo``): every passage they retrieve
has text, so the pool is judgeable in the browser (the DECAF runs are id-only). Idempotent: called by
``manage.py load_demo`` after the collection, its "original" qrels and its runs exist.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import Group, User

from ecast.core.permissions import ASSESSOR
from ecast.models import Collection
from evaluation.models import QrelsVersion, Run
from evaluation.robustness.services import PREFIX as BM25_PREFIX
from judging.models import AssessorAssignment, Pool
from judging.relevance import pools, versions
from judging.relevance import services as svc

DEMO_COLLECTION = "CAsT 2020 demo"
POOL_NAME = "Demo pool: BM25 runs, depth 3"
DERIVED_NAME = "original + new"
DEMO_ASSESSOR = ("assessor1", "demo-assessor1")


def load(*, stdout: Any) -> Pool | None:
    """Create the demo pool, its derived qrels version and assessor1's first topic (skips what exists)."""
    collection = Collection.objects.filter(name=DEMO_COLLECTION).first()
    original = QrelsVersion.objects.filter(collection=collection, name="original").first() if collection else None
    runs = list(Run.objects.filter(collection=collection, name__startswith=BM25_PREFIX).order_by("name"))
    if collection is not None and not runs:  # without the BM25 runs, two of the (id-only) runs still make a pool
        runs = list(Run.objects.filter(collection=collection).order_by("name")[:2])
    if collection is None or original is None or not runs:
        stdout.write("  relevance demo skipped: the demo collection, its 'original' qrels or its runs are missing")
        return None

    pool = Pool.objects.filter(collection=collection, name=POOL_NAME).first()
    if pool is None:
        pool = pools.pool_create(
            collection=collection,
            qrels_version=original,
            runs=runs,
            depth=3,
            name=POOL_NAME,
            cluster_near_duplicates=True,
        )
        stdout.write(
            f"  pool {pool.name!r}: {pool.stats['pairs']} unjudged pairs in {pool.stats['turns']} turns "
            f"({pool.stats['with_text']} with text)"
        )
    else:
        stdout.write(f"  pool {pool.name!r}: already there")

    if pool.target_version_id is None:
        derived = QrelsVersion.objects.filter(collection=collection, name=DERIVED_NAME).first()
        if derived is None:
            derived = versions.qrels_version_derive(parent=original, pool=pool, name=DERIVED_NAME)
            stdout.write(f"  qrels version {derived.name!r} derived from 'original'")
        else:
            versions.pool_attach_version(pool=pool, version=derived)
            stdout.write(f"  pool attached to existing qrels version {derived.name!r}")

    username, password = DEMO_ASSESSOR
    user = User.objects.filter(username=username).first()
    if user is None:
        user = User(username=username)
        user.set_password(password)
        user.save()
        stdout.write(f"  assessor account {username!r} created (password {password})")
    user.groups.add(Group.objects.get_or_create(name=ASSESSOR)[0])
    if not AssessorAssignment.objects.filter(pool=pool, assessor=user).exists():
        conversation = collection.conversations.filter(turns__pool_pairs__pool=pool).order_by("id").first()
        if conversation is not None:
            svc.assignment_create(pool=pool, conversation=conversation, assessor=user)
            stdout.write(f"  topic {conversation.topic_id} assigned to {username}")
    return pool
