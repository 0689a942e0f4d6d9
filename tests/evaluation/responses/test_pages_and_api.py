"""Response pages and REST API: what each shows, and who may reach each (anonymous, rater, assessor, admin)."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.urls import reverse

from evaluation.models import NuggetBank, ResponseLabelSet, ResponseRun
from tests import factories
from tests.evaluation.responses.helpers import small_scene

pytestmark = pytest.mark.django_db


@pytest.fixture
def scene():
    s = small_scene()
    factories.passage("p1", "Passage one says the thing.")
    return s


def pages(s) -> list[str]:
    run_a = s["runs"][0]
    nls, cls = s["nugget_set"], s["citation_set"]
    return [
        reverse("responses-index") + f"?collection={s['collection'].pk}",
        reverse("responses-run", args=[run_a.pk]),
        reverse("responses-response", args=[s["responses"][0].pk]),
        reverse("responses-bank", args=[s["bank"].pk]),
        reverse("responses-bank-download", args=[s["bank"].pk]),
        reverse("responses-label-set", args=[nls.pk]),
        reverse("responses-label-set", args=[cls.pk]) + "?measure=recall",
        reverse("responses-label-set-run", args=[nls.pk, run_a.pk]),
        reverse("responses-label-set-download", args=[nls.pk, "assignments.jsonl"]),
        reverse("responses-label-set-download", args=[cls.pk, "citations.jsonl"]),
        reverse("responses-label-set-download", args=[nls.pk, "per-response.csv"]),
        reverse("responses-label-set-download", args=[cls.pk, "per-run.csv"]),
    ]


def shared_apis(s) -> list[str]:
    """What assessors read too: the answers and nuggets they judge."""
    run_a = s["runs"][0]
    return [
        reverse("api-responses-runs") + f"?collection={s['collection'].pk}",
        reverse("api-responses-run", args=[run_a.pk]),
        reverse("api-responses-run-responses", args=[run_a.pk]),
        reverse("api-responses-response", args=[s["responses"][0].pk]),
        reverse("api-responses-banks"),
        reverse("api-responses-bank", args=[s["bank"].pk]),
        reverse("api-responses-bank-download", args=[s["bank"].pk]),
    ]


def admin_apis(s) -> list[str]:
    nls, cls = s["nugget_set"], s["citation_set"]
    return [
        reverse("api-responses-label-sets"),
        reverse("api-responses-label-set", args=[nls.pk]),
        reverse("api-responses-labels", args=[nls.pk]),
        reverse("api-responses-labels", args=[cls.pk]),
        reverse("api-responses-scores", args=[nls.pk]),
        reverse("api-responses-scores", args=[cls.pk]),
        reverse("api-responses-label-set-download", args=[nls.pk, "per-run.csv"]),
    ]


def deletions(s) -> list[str]:
    return [
        reverse("api-responses-label-set", args=[s["citation_set"].pk]),
        reverse("api-responses-run", args=[s["runs"][1].pk]),
    ]


def test_anonymous_callers_are_sent_to_log_in_or_asked_to_authenticate(scene, client, anon_api):
    for url in pages(scene):
        response = client.get(url)
        assert response.status_code == 302 and "/accounts/login/" in response["Location"], url
    for url in shared_apis(scene) + admin_apis(scene):
        assert anon_api.get(url).status_code == 401, url
    for url in deletions(scene):
        assert anon_api.delete(url).status_code == 401, url


def test_raters_reach_nothing(scene, rater_client, rater_api):
    for url in pages(scene):
        assert rater_client.get(url).status_code == 403, url
    for url in shared_apis(scene) + admin_apis(scene):
        assert rater_api.get(url).status_code == 403, url
    for url in deletions(scene):
        assert rater_api.delete(url).status_code == 403, url


def test_assessors_read_answers_and_nuggets_but_not_labels_scores_or_pages(scene, assessor_client, assessor_api):
    for url in shared_apis(scene):
        assert assessor_api.get(url).status_code == 200, url
    for url in admin_apis(scene):
        assert assessor_api.get(url).status_code == 403, url
    for url in deletions(scene) + [reverse("api-responses-bank", args=[scene["bank"].pk])]:
        assert assessor_api.delete(url).status_code == 403, url
    for url in pages(scene):
        assert assessor_client.get(url).status_code == 403, url
    assert ResponseRun.objects.count() == 2 and ResponseLabelSet.objects.count() == 2


def test_admins_reach_every_page_and_endpoint_and_delete(scene, admin_client, admin_api):
    for url in pages(scene):
        assert admin_client.get(url).status_code == 200, url
    for url in shared_apis(scene) + admin_apis(scene):
        assert admin_api.get(url).status_code == 200, url
    bank_url = reverse("api-responses-bank", args=[scene["bank"].pk])
    refused = admin_api.delete(bank_url)  # the nugget label set still assigns its nuggets
    assert refused.status_code == 409 and refused.json()["code"] == "conflict"
    for url in deletions(scene):
        assert admin_api.delete(url).status_code == 204, url
    assert list(ResponseRun.objects.values_list("name", flat=True)) == ["A"]
    assert list(ResponseLabelSet.objects.values_list("name", flat=True)) == ["assessed"]
    assert admin_api.delete(reverse("api-responses-label-set", args=[scene["nugget_set"].pk])).status_code == 204
    assert admin_api.delete(bank_url).status_code == 204 and not NuggetBank.objects.exists()


def test_the_scores_api_gives_runs_ranked_and_every_scored_response(scene, admin_api):
    body = admin_api.get(reverse("api-responses-scores", args=[scene["nugget_set"].pk]), {"measure": "A"}).json()
    assert body["measure"] == "A" and body["measures"] == ["V_strict", "A_strict", "V", "A"]
    assert [(r["run"], r["rank"], r["values"]["A"]) for r in body["runs"]] == [
        ("A", 1, pytest.approx(0.8)),
        ("B", None, None),
    ]
    assert len(body["responses"]) == 2
    bad = admin_api.get(reverse("api-responses-scores", args=[scene["nugget_set"].pk]), {"measure": "precision"})
    assert bad.status_code == 400


def test_the_answer_api_carries_sentences_and_citations(scene, assessor_api):
    body = assessor_api.get(reverse("api-responses-response", args=[scene["responses"][0].pk])).json()
    assert body["turn"] == "t1" and body["references"] == ["p1", "p2"]
    assert [s["citations"] for s in body["sentences"]][:2] == [["p1", "p2"], ["p2"]]
    bank = assessor_api.get(reverse("api-responses-bank", args=[scene["bank"].pk])).json()
    assert bank["nugget_count"] == 6 and [n["text"] for n in bank["nuggets"]][:2] == ["n0", "n1"]


def test_the_leaderboard_page_rounds_to_4_decimals_and_links_figures_to_their_answers(scene, admin_client):
    nls, run_a = scene["nugget_set"], scene["runs"][0]
    html = admin_client.get(reverse("responses-label-set", args=[nls.pk]) + "?measure=A").content.decode()
    per_topic = reverse("responses-label-set-run", args=[nls.pk, run_a.pk])
    assert f'<a href="{per_topic}">0.8000</a>' in html and f'<a href="{per_topic}">0.6667</a>' in html
    html = admin_client.get(per_topic).content.decode()
    answer = reverse("responses-response", args=[scene["responses"][0].pk])
    assert f'<a href="{answer}">0.3333</a>' in html and f'<a href="{answer}">0.6000</a>' in html


def test_the_answer_page_shows_cited_passage_text_and_labels(scene, admin_client):
    html = admin_client.get(reverse("responses-response", args=[scene["responses"][0].pk])).content.decode()
    assert "Passage one says the thing." in html and "No text for this passage in the corpus." in html
    assert "partial_support" in html and "not_needed" in html


def test_an_empty_collection_says_to_import_a_file(db, admin_client):
    coll = factories.collection(name="Empty")
    html = admin_client.get(reverse("responses-index"), {"collection": coll.pk}).content.decode()
    assert "Nothing here yet" in html and f'href="{reverse("imports")}"' in html


def test_the_index_counts_answers_nuggets_and_labels(scene, admin_client):
    html = admin_client.get(reverse("responses-index"), {"collection": scene["collection"].pk}).content.decode()
    assert "4 vital" in html and "1 added" in html and "5 support" in html and "7 blind" in html


def test_score_csvs_have_one_row_per_scored_response_and_per_run(scene, admin_client):
    url = reverse("responses-label-set-download", args=[scene["nugget_set"].pk, "per-response.csv"])
    rows = list(csv.reader(io.StringIO(b"".join(admin_client.get(url).streaming_content).decode())))
    assert rows[0] == ["label_set", "run", "topic", "V_strict", "A_strict", "V", "A", "labels", "nuggets"]
    assert rows[1][:3] == ["assessed", "A", "t1"] and float(rows[1][6]) == 0.6 and rows[1][7:] == ["5", "5"]
    url = reverse("responses-label-set-download", args=[scene["citation_set"].pk, "per-run.csv"])
    rows = list(csv.reader(io.StringIO(b"".join(admin_client.get(url).streaming_content).decode())))
    assert rows == [
        ["label_set", "run", "precision", "recall", "judged_topics_answered", "judged_topics"],
        ["support", "B", "1.0", "1.0", "1", "1"],
        ["support", "A", "0.5", "0.375", "1", "1"],
    ]
    missing = reverse("responses-label-set-download", args=[scene["citation_set"].pk, "assignments.jsonl"])
    assert admin_client.get(missing).status_code == 404


def test_the_citation_export_writes_unjudged_and_needs_no_citation_as_minus_one(scene, admin_client):
    url = reverse("responses-label-set-download", args=[scene["citation_set"].pk, "citations.jsonl"])
    lines = [json.loads(x) for x in b"".join(admin_client.get(url).streaming_content).decode().splitlines()]
    a = next(x for x in lines if x["run_id"] == "A")
    assert a["topic_id"] == "t1" and len(lines) == 2  # t2 is not a judged topic
    assert [[c["support"] for c in s["citations"]] for s in a["sentences"]] == [
        ["2", "0"],
        ["1"],
        ["0"],
        ["-1"],
        [],
        ["-1"],
    ]


def test_the_labels_api_pages_a_sets_labels_with_their_item_and_condition(scene, admin_api):
    body = admin_api.get(reverse("api-responses-labels", args=[scene["citation_set"].pk])).json()
    assert body["count"] == 7
    first = body["results"][0]
    assert (first["run"], first["turn"], first["sentence"], first["passage_id"], first["support"]) == (
        "A",
        "t1",
        0,
        "p1",
        "full",
    )
    assert first["condition"] == "blind" and first["response"] == scene["responses"][0].pk
    body = admin_api.get(reverse("api-responses-labels", args=[scene["nugget_set"].pk])).json()
    assert [r["label"] for r in body["results"]][:3] == ["support", "partial_support", "not_support"]


def test_the_leaderboard_says_what_its_coverage_counts_and_why_a_set_without_labels_shows_no_figure(
    scene, admin_client
):
    nls, cls = scene["nugget_set"], scene["citation_set"]
    html = admin_client.get(reverse("responses-label-set", args=[nls.pk])).content.decode()
    assert "<th>Scored</th>" in html and 'id="leaderboard-empty"' not in html
    cells = [c.split("</td>")[0] for c in html.split('<td class="coverage">')[1:]]
    assert cells and all(" of " in c and " answer" in c or c == "no answers" for c in cells), cells
    html = admin_client.get(reverse("responses-label-set", args=[cls.pk])).content.decode()
    assert "<th>Judged topics</th>" in html and "answered " in html
    empty = ResponseLabelSet.objects.create(collection=scene["collection"], name="nobody yet", kind="citations")
    html = admin_client.get(reverse("responses-label-set", args=[empty.pk])).content.decode()
    assert 'id="leaderboard-empty"' in html and "This set has no label yet" in html
    assert "no topic judged yet" in html and " / 0" not in html
