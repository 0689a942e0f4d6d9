"""`manage.py load_demo`: the CAsT 2020 demo collection, accounts and feature demos, idempotently."""

from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from ecast.management.commands.load_demo import DEMO_ACCOUNTS, DEMO_DIR, ensure_accounts
from ecast.models import Collection, ImportJob, Paraphrase, Passage, Turn
from ecast.permissions import user_roles
from evaluation.models import Qrel, QrelsVersion, Run, RunTurn


def _snapshot():
    return {
        model.__name__: model.objects.count()
        for model in (Collection, Turn, Paraphrase, Passage, ImportJob, Qrel, Run, RunTurn, User)
    }


def test_the_demo_files_are_small():
    # Four run slices, qrels, passages and a TREC DD score table: the whole demo stays under 1.5 MB.
    assert sum(p.stat().st_size for p in Path(DEMO_DIR).iterdir()) < 1_500_000


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
    assert Passage.objects.filter(passage_id__startswith="MARCO_").exists()
    assert QrelsVersion.objects.filter(collection=coll, name="original").get().qrels.count() == 4448
    assert set(Run.objects.filter(collection=coll).values_list("name", flat=True)) >= {"decaf-exp1", "decaf-exp2"}
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
