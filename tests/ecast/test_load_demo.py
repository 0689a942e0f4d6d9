"""`manage.py load_demo`: the CAsT 2020 demo collection, accounts and feature demos, idempotently."""

import gzip
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from ecast.core.demos import demo_part_register, demo_parts
from ecast.core.permissions import user_roles
from ecast.management.commands.load_demo import CORPUS, DEMO_ACCOUNTS, DEMO_DIR, demo_corpus_ids, ensure_accounts
from ecast.models import Collection, ImportJob, Paraphrase, Passage, TestSet, Turn
from evaluation.models import Qrel, QrelsVersion, Run, RunTurn, TurnScores
from judging.models import Pool, PoolPair


def _snapshot():
    return {
        model.__name__: model.objects.count()
        for model in (
            Collection, Turn, Paraphrase, Passage, ImportJob, Qrel, Run, RunTurn, User, TestSet, Pool, PoolPair,
            TurnScores,
        )
    }  # fmt: skip


def test_the_demo_files_are_small():
    # Four run slices, qrels, a 2,356-passage corpus (gzip) and a TREC DD score table: the demo stays under 2 MB.
    assert sum(p.stat().st_size for p in Path(DEMO_DIR).iterdir()) < 2_000_000


def test_the_demo_corpus_has_one_text_per_passage_across_its_four_sources():
    seen: list[str] = []
    for name in CORPUS:
        with gzip.open(DEMO_DIR / name, "rt", encoding="utf-8") as fh:
            rows = [line.rstrip("\n").split("\t") for line in fh]
        assert rows and all(len(r) == 2 and r[0] and r[1].strip() for r in rows), name
        seen += [r[0] for r in rows]
    assert len(seen) == len(set(seen)) == len(demo_corpus_ids()) == 2356


@pytest.mark.slow  # ~20 s: runs every feature's demo module too
@pytest.mark.django_db(transaction=True)
def test_load_demo_builds_the_collection_and_accounts_and_is_idempotent():
    out = StringIO()
    call_command("load_demo", "--strict", stdout=out)
    coll = Collection.objects.get(name="CAsT 2020 demo")
    assert coll.relevance_threshold == 2 and coll.year == 2020
    assert sorted(coll.conversations.values_list("topic_id", flat=True)) == ["81", "82", "83"]
    turn = Turn.objects.get(collection=coll, turn_id="81_2")
    assert turn.raw_utterance == "Now it stopped working. Why?"
    assert turn.manual_rewrite == "Now my garage door opener stopped working. Why?"
    assert turn.automatic_rewrite and turn.canonical_response_text
    assert Paraphrase.objects.filter(turn__collection=coll, origin="imported").count() == 2 * 217
    corpus = demo_corpus_ids()
    assert Passage.objects.filter(passage_id__in=corpus).exclude(text="").count() == len(corpus) == 2356
    assert QrelsVersion.objects.filter(collection=coll, name="original").get().qrels.count() == 4448
    names = set(Run.objects.filter(collection=coll).values_list("name", flat=True))
    assert names >= {"decaf-exp1", "decaf-exp2", "ecast-bm25-raw", "ecast-bm25-manual", "ecast-bm25-auto"}
    assert TestSet.objects.filter(collection=coll).count() == 6 == Run.objects.filter(test_set__isnull=False).count()
    assert all(r.description.startswith("Id-only") for r in Run.objects.filter(name__startswith="decaf-"))
    bm25 = Run.objects.filter(collection=coll, name__startswith="ecast-bm25-")
    assert bm25.count() == 9 and RunTurn.objects.filter(run__in=bm25).count() == 9 * 26
    pool = Pool.objects.get(collection=coll)
    assert pool.stats["with_text"] == pool.stats["pairs"] > 0
    assert TurnScores.objects.filter(run__in=bm25, version__name="original + new").exists()
    for username, password, role in DEMO_ACCOUNTS:
        user = User.objects.get(username=username)
        assert user.check_password(password) and role in user_roles(user)
    text = out.getvalue()
    assert "admin" in text and "demo-admin" in text and "demo-assessor" in text

    before = _snapshot()
    again = StringIO()
    call_command("load_demo", "--strict", stdout=again)
    assert _snapshot() == before
    assert "already loaded" in again.getvalue()


@pytest.mark.django_db
def test_existing_accounts_keep_their_passwords(admin_user):
    User.objects.create_user("rater1", password="my own secret")
    ensure_accounts()
    assert User.objects.get(username="rater1").check_password("my own secret")
    assert "rater" in user_roles(User.objects.get(username="rater1"))
    ensure_accounts()
    assert User.objects.filter(username__in=[a[0] for a in DEMO_ACCOUNTS]).count() == 5


def test_every_feature_registers_its_demo_part_and_they_load_in_the_order_of_the_data_flow():
    # Test sets before the BM25 runs over them, those runs before the pool that judges them, the pool's derived
    # version before the scores, the scores before the analyses that read them.
    assert [part.module for part in demo_parts()] == [
        "ecast.generation.demo",
        "judging.rating.demo",
        "evaluation.robustness.demo",
        "judging.relevance.demo",
        "judging.llm.response_demo",
        "evaluation.demo",
        "evaluation.permutations.demo",
        "evaluation.analyses.demo",
        "judging.ptkb.demo",
    ]


def test_a_demo_part_names_one_of_the_stages():
    with pytest.raises(ValueError, match="stage"):
        demo_part_register(module="somewhere.demo", stage="later")


@pytest.mark.django_db
def test_a_demo_loaded_before_corpora_loses_the_other_corpora_from_its_collections_corpus():
    from ecast.management.commands.load_demo import COLLECTION_CORPUS, demo_collection_load

    collection = demo_collection_load(stdout=StringIO())
    # As the migration leaves a demo whose four corpus files were all imported for the demo collection.
    collection.corpus.add(*Passage.objects.filter(passage_id__startswith="KILT_"))
    assert collection.corpus.filter(passage_id__startswith="KILT_").exists()
    again = StringIO()
    demo_collection_load(stdout=again)
    assert sorted(collection.corpus.values_list("passage_id", flat=True)) == demo_corpus_ids(COLLECTION_CORPUS)
    assert "imported" not in again.getvalue()
