"""The PTKB demo: four iKAT 2023 conversations and both published PTKB assessments of them, loaded from the files
shipped in ecast/demo, idempotently, and comparable on the agreement page."""

from __future__ import annotations

import io

import pytest
from sklearn.metrics import cohen_kappa_score

from ecast.models import Collection, Conversation, PtkbStatement, Turn
from evaluation.agreement import selectors as asel
from evaluation.models import Qrel, QrelsVersion
from judging.ptkb import demo

pytestmark = pytest.mark.django_db


def _counts() -> tuple[int, ...]:
    return (
        Collection.objects.count(),
        Turn.objects.count(),
        PtkbStatement.objects.count(),
        QrelsVersion.objects.count(),
        Qrel.objects.count(),
    )


def test_the_demo_loads_four_conversations_and_both_assessments_once():
    demo.load(stdout=io.StringIO())
    first = _counts()
    again = io.StringIO()
    demo.load(stdout=again)
    assert _counts() == first

    coll = Collection.objects.get(name=demo.DEMO_COLLECTION)
    assert sorted(Conversation.objects.filter(collection=coll).values_list("topic_id", flat=True)) == [
        "14-2",
        "17-2",
        "18-2",
        "9-2",
    ]
    assert PtkbStatement.objects.filter(conversation__collection=coll).exists()
    companion = Collection.objects.get(ptkb_of=coll)
    versions = {v.name: v for v in QrelsVersion.objects.filter(collection=companion)}
    assert set(versions) == {"NIST", "organisers"}
    # Every line of the shipped files is a judgment, and a second load adds nothing.
    for file, name in demo.ASSESSMENTS:
        lines = (demo.DEMO_DIR / file).read_text(encoding="utf-8").splitlines()
        assert Qrel.objects.filter(version=versions[name]).count() == len(lines)
    assert again.getvalue().count("already loaded") == 3


def test_the_agreement_page_compares_nist_with_the_organisers_on_the_demo():
    demo.load(stdout=io.StringIO())
    companion = Collection.objects.get(ptkb_of__name=demo.DEMO_COLLECTION)
    nist = QrelsVersion.objects.get(collection=companion, name="NIST")
    org = QrelsVersion.objects.get(collection=companion, name="organisers")

    report = asel.agreement_report(a=nist, b=org)

    a, b = asel.version_items(version=nist), asel.version_items(version=org)
    keys = sorted(set(a) & set(b))
    assert report["items"] == len(keys) > 100 and not report["graded"]
    assert report["kappa"]["value"] == pytest.approx(cohen_kappa_score([a[k] for k in keys], [b[k] for k in keys]))
