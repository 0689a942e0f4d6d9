"""Pages, downloads and API of permutations and utterance labels, with their permissions."""

import csv
import io

import pytest
from django.urls import reverse

from evaluation.models import Permutation, UtteranceLabel
from evaluation.permutations import services as svc
from tests import factories

from .helpers import labelled_collection

pytestmark = pytest.mark.django_db


@pytest.fixture
def experiment(settings, tmp_path, django_capture_on_commit_callbacks):
    return _scored_experiment(settings, tmp_path, django_capture_on_commit_callbacks)


def _scored_experiment(settings, tmp_path, django_capture_on_commit_callbacks):
    settings.ECAST_CACHE_DIR = tmp_path / "cache"
    coll, version = labelled_collection()
    with django_capture_on_commit_callbacks(execute=True):
        exp = svc.permutation_experiment_create(
            collection=coll, name="exp", qrels_version=version, systems=["current", "cu", "lp"], k=5, seed=1
        )
    exp.refresh_from_db()
    return exp


def test_the_experiment_page_shows_reports_figures_and_the_qrels_version(admin_client, experiment):
    r = admin_client.get(reverse("permutation-experiment", args=[experiment.pk]))
    body = r.content.decode()
    assert r.status_code == 200
    assert "Table 2" in body and "ANOVA MD1" in body and body.count("<svg") >= 2
    assert "qrels version “original” with 11 judgments" in body


def test_scoring_draws_the_page_figures_so_the_first_visit_draws_none(
    fresh_cache, settings, tmp_path, django_capture_on_commit_callbacks, admin_client, monkeypatch
):
    from matplotlib.figure import Figure

    exp = _scored_experiment(settings, tmp_path, django_capture_on_commit_callbacks)
    drawn = []
    real = Figure.savefig
    monkeypatch.setattr(Figure, "savefig", lambda fig, *a, **kw: drawn.append(fig) or real(fig, *a, **kw))
    body = admin_client.get(reverse("permutation-experiment", args=[exp.pk])).content.decode()
    assert body.count("<svg") >= 2 and drawn == []
    # A view the scoring did not draw ahead (two systems of three) is drawn on demand, then kept.
    admin_client.get(reverse("permutation-experiment", args=[exp.pk]), {"systems": ["cu", "lp"]})
    n = len(drawn)
    assert n >= 1
    admin_client.get(reverse("permutation-experiment", args=[exp.pk]), {"systems": ["cu", "lp"]})
    assert len(drawn) == n


def test_while_chunks_are_queued_the_page_lists_every_conversation_with_its_orders_still_to_sample(admin_client):
    coll, version = labelled_collection()
    exp = svc.permutation_experiment_create(
        collection=coll, name="queued", qrels_version=version, systems=["current"], k=5, seed=1, start=False
    )
    body = admin_client.get(reverse("permutation-experiment", args=[exp.pk])).content.decode()
    assert "Retrieving" in body and body.count("sampled when its chunk runs") == 2
    # A failed experiment's unsampled conversations will not be sampled: the page does not promise it.
    svc.permutation_experiment_fail(experiment_id=exp.pk, reason="worker lost")
    body = admin_client.get(reverse("permutation-experiment", args=[exp.pk])).content.decode()
    assert "sampled when its chunk runs" not in body and body.count("not sampled") == 2


def test_the_system_filter_restricts_the_analyses(admin_client, experiment):
    r = admin_client.get(reverse("permutation-analysis-json", args=[experiment.pk]) + "?systems=cu&systems=lp")
    data = r.json()
    assert {row["system"] for row in data["table2"]} == {"CU", "LP"}


def test_the_scores_csv_has_a_mean_row_and_per_turn_rows(admin_client, experiment):
    r = admin_client.get(reverse("permutation-scores-csv", args=[experiment.pk]))
    assert r["Content-Disposition"] == f'attachment; filename="permutation-scores-{experiment.pk}.csv"'
    rows = list(csv.DictReader(io.StringIO(b"".join(r.streaming_content).decode())))
    perm_rows = [
        x for x in rows if x["permutation_id"] == f"perm{Permutation.objects.filter(experiment=experiment).first().pk}"
    ]
    assert {x["turn_id"] for x in perm_rows} >= {"mean", "1_1", "1_5"}
    assert all(x["qrels_version"] == "original" for x in rows)


def test_the_topics_download_is_cast_json_with_permutation_ids(admin_client, experiment):
    r = admin_client.get(reverse("permutation-export", args=[experiment.pk]) + "?topic=2")
    topics = r.json()
    assert [t["number"] for t in topics] == ["2", "2"]
    assert all(t["permutation_id"].startswith("perm") for t in topics)


def test_list_page_creates_an_experiment(admin_client, settings, tmp_path):
    settings.ECAST_CACHE_DIR = tmp_path
    coll, version = labelled_collection()
    r = admin_client.post(
        reverse("permutation-experiments"),
        {"collection": coll.pk, "name": "via form", "qrels_version": version.pk, "systems": [], "k": 3, "seed": 0,
         "measure": "nDCG@3", "corpus": "qrels", "depth": 50},
    )  # fmt: skip
    assert r.status_code == 302
    assert Permutation.objects.filter(experiment__name="via form").count() == 6
    page = admin_client.get(r.url).content.decode()
    assert "Experiment “via form” created; its orders are sampled and retrieved in the background." in page


@pytest.mark.parametrize(
    "name", ["permutation-experiments", "permutation-experiment", "permutation-scores-csv", "permutation-export"]
)
def test_raters_and_assessors_cannot_reach_experiment_pages(rater_client, experiment, name, assessor):
    args = [] if name == "permutation-experiments" else [experiment.pk]
    assert rater_client.get(reverse(name, args=args)).status_code == 403


def test_experiment_api_is_admin_only(admin_api, rater_api, anon_api, experiment):
    url = reverse("api-permutation-status", args=[experiment.pk])
    assert admin_api.get(url).json()["status"] == "succeeded"
    assert rater_api.get(url).status_code == 403
    assert anon_api.get(url).status_code in (401, 403)
    assert rater_api.get(reverse("api-permutation-analysis", args=[experiment.pk])).status_code == 403


def test_the_status_api_counts_each_conversations_orders_for_the_page_to_fill_in_while_it_runs(
    admin_api, admin_client, experiment
):
    sampled = admin_api.get(reverse("api-permutation-status", args=[experiment.pk])).json()["sampled"]
    expected = {}
    for p in Permutation.objects.filter(experiment=experiment):
        key = f"{p.conversation_id}:{p.path}"
        expected[key] = expected.get(key, 0) + 1
    assert {f"{r['conversation']}:{r['path']}": r["orders"] for r in sampled} == expected
    assert len(expected) >= 2 and all(n >= 1 for n in expected.values())
    page = admin_client.get(reverse("permutation-experiment", args=[experiment.pk])).content.decode()
    for key in expected:  # the cells the page's poll writes the counts into
        assert f'data-sampled="{key}"' in page


def test_experiment_create_api_reports_bad_input(admin_api):
    coll, version = labelled_collection()
    r = admin_api.post(
        reverse("api-permutation-create"),
        {"collection": coll.pk, "name": "x", "qrels_version": version.pk, "systems": ["current"], "measure": "bogus"},
        format="json",
    )
    assert r.status_code == 400 and "unknown measure" in r.json()["detail"]
    r = admin_api.post(
        reverse("api-permutation-create"),
        {"collection": coll.pk, "name": "y", "qrels_version": version.pk, "systems": [], "k": 1, "topics": ["1"]},
        format="json",
    )
    assert r.status_code == 201 and Permutation.objects.filter(experiment_id=r.json()["id"]).count() == 2


def test_an_admin_label_sets_the_turn_class_and_its_dependencies(admin_api):
    coll, _ = labelled_collection(classes=False)
    conv = coll.conversations.get(topic_id="1")
    turns = {t.number: t for t in conv.turns.all()}
    url = reverse("api-utterance-label-set")
    for n, cls in [(2, "FT"), (3, "SE"), (4, "PT"), (5, "PT")]:
        r = admin_api.post(url, {"turn": turns[n].pk, "utterance_class": cls}, format="json")
        assert r.status_code == 200
    assert r.json()["depends_on"] == {"1": None, "2": 1, "3": None, "4": 3, "5": 3}
    turns[4].refresh_from_db()
    assert turns[4].utterance_class == "PT" and turns[4].depends_on == turns[3]


def test_a_rater_label_is_kept_as_theirs_and_does_not_change_the_turn(rater_api, rater):
    coll, _ = labelled_collection(classes=False)
    turn = coll.turns.get(turn_id="1_2")
    r = rater_api.post(reverse("api-utterance-label-set"), {"turn": turn.pk, "utterance_class": "FT"}, format="json")
    assert r.status_code == 200 and r.json()["applied"] is False
    turn.refresh_from_db()
    assert turn.utterance_class == "" and UtteranceLabel.objects.get(turn=turn, labeler=rater).utterance_class == "FT"


def test_a_rater_sees_only_their_own_labels(rater_client, rater, other_rater):
    coll, _ = labelled_collection(classes=False)
    turn = coll.turns.get(turn_id="1_2")
    svc.utterance_label_set(turn=turn, labeler=other_rater, utterance_class="PT")
    r = rater_client.get(reverse("utterance-label-conversation", args=[turn.conversation.pk]))
    assert r.status_code == 200
    assert f'data-turn="{turn.pk}" data-number="2" data-cls=""' in r.content.decode()
    svc.utterance_label_set(turn=turn, labeler=rater, utterance_class="FT")
    r = rater_client.get(reverse("utterance-label-conversation", args=[turn.conversation.pk]))
    assert f'data-turn="{turn.pk}" data-number="2" data-cls="FT"' in r.content.decode()
    # raters get no agreement figures or admin actions
    assert "Fleiss" not in rater_client.get(reverse("utterance-labels")).content.decode()
    assert rater_client.post(reverse("utterance-labels-adopt", args=[coll.pk])).status_code == 403
    assert rater_client.get(reverse("api-utterance-label-agreement", args=[coll.pk])).status_code == 403


def test_assessors_cannot_label(assessor_api, assessor_client):
    coll, _ = labelled_collection(classes=False)
    turn = coll.turns.get(turn_id="1_2")
    r = assessor_api.post(reverse("api-utterance-label-set"), {"turn": turn.pk, "utterance_class": "FT"}, format="json")
    assert r.status_code == 403
    assert assessor_client.get(reverse("utterance-labels")).status_code == 403


def test_fleiss_kappa_of_labelers_is_hand_worked(admin_api):
    coll = factories.collection_with_turns(name="K", year=2019, conversations={"9": ["a", "b", "c", "d", "e"]})
    turns = list(coll.turns.order_by("number"))[1:]
    labelers = factories.users(3, prefix="lab")
    # items: [SE,SE,SE] [FT,FT,FT] [PT,PT,FT] [SE,FT,PT] → P̄ = 7/12, P_e = 50/144 → κ = 34/94
    table = [["SE", "SE", "SE"], ["FT", "FT", "FT"], ["PT", "PT", "FT"], ["SE", "FT", "PT"]]
    for turn, labels in zip(turns, table, strict=True):
        for user, cls in zip(labelers, labels, strict=True):
            svc.utterance_label_set(turn=turn, labeler=user, utterance_class=cls)
    data = admin_api.get(reverse("api-utterance-label-agreement", args=[coll.pk])).json()
    assert data["kappa"] == pytest.approx(34 / 94)
    assert data["items"] == 4 and data["labelers"] == 3
    result = svc.utterance_labels_adopt_majority(collection=coll)
    assert result == {"changed": 3, "ties": 1, "turns": 4}
    assert [t.utterance_class for t in coll.turns.order_by("number")] == ["", "SE", "FT", "PT", ""]


def test_classes_are_derived_from_dependency_annotations():
    coll = factories.collection_with_turns(name="D", year=2020, conversations={"81": list("abcdefghi")})
    deps = {2: [1], 3: [1], 4: [1], 5: [1], 6: [1, 5], 7: [1], 8: [6], 9: [6]}
    for t in coll.turns.all():
        t.relevant_turn_numbers = deps.get(t.number, [])
        t.save()
    out = svc.utterance_classes_derive(collection=coll)
    assert out["unguaranteed"] == ["81_8 needs 81_6", "81_9 needs 81_6"]
    assert "".join(t.utterance_class for t in coll.turns.order_by("number")) == "SEFTFTFTSEPTFTPTPT"


def test_the_labels_page_opens_on_a_collection_with_conversations_to_label(admin_client):
    factories.collection("A table without conversations", 2016)  # first in the default order
    coll, _ = labelled_collection()
    html = admin_client.get(reverse("utterance-labels")).content.decode()
    assert f'<option value="{coll.pk}" selected>{coll.name}</option>' in html
    assert "No conversations." not in html
    assert html.count(">label</a>") == coll.conversations.count() > 0
