"""Leaderboard, runs, compare, history, robustness pages and the evaluation API: content and permissions."""

from __future__ import annotations

import io
import re

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from evaluation import scoring, services
from evaluation.models import EvaluationJob, Qrel, Run
from tests import factories
from tests.evaluation.helpers import add_run, build, derive

pytestmark = pytest.mark.django_db


@pytest.fixture
def scored():
    coll, version, runs = build()
    services.scores_compute_for_version(version=version)
    return coll, version, runs


PAGES = [
    ("evaluation-leaderboard", {}),
    ("evaluation-runs", {}),
    ("evaluation-compare", {}),
    ("evaluation-history", {}),
    ("evaluation-robustness", {}),
]


@pytest.mark.parametrize("name,kwargs", PAGES)
def test_raters_and_assessors_cannot_open_evaluation_pages(name, kwargs, rater_client, scored):
    assert rater_client.get(reverse(name, kwargs=kwargs)).status_code == 403


def test_assessors_cannot_open_the_leaderboard(assessor_client, scored):
    assert assessor_client.get(reverse("evaluation-leaderboard")).status_code == 403


def test_anonymous_users_are_sent_to_login(client, scored):
    resp = client.get(reverse("evaluation-leaderboard"))
    assert resp.status_code == 302 and "/accounts/login/" in resp["Location"]


def test_the_leaderboard_ranks_runs_and_states_version_and_threshold(admin_client, scored):
    coll, version, runs = scored
    resp = admin_client.get(reverse("evaluation-leaderboard"), {"version": version.pk})
    html = resp.content.decode()
    assert resp.status_code == 200
    assert "relevance threshold <strong>1</strong>" in html and "trec_eval -c" in html
    assert html.index(">strong<") < html.index(">weak<")
    assert "<svg" in html


def test_leaderboard_downloads_carry_the_exact_numbers(admin_client, scored):
    coll, version, runs = scored
    from evaluation.selectors import score_means

    mean = score_means(version=version, measures=["nDCG@3"])[runs["strong"].pk]["nDCG@3"]
    csv_text = admin_client.get(reverse("evaluation-leaderboard-export", args=[version.pk, "csv"])).content.decode()
    assert "# relevance_threshold=1" in csv_text and repr(mean) in csv_text
    data = admin_client.get(reverse("evaluation-leaderboard-export", args=[version.pk, "json"])).json()
    assert data["rows"][0]["means"]["nDCG@3"] == mean and data["threshold"] == 1


def test_run_detail_shows_per_turn_scores_and_links_a_test_set(admin_client, scored):
    coll, version, runs = scored
    ts = factories.testset(coll, "R^m_1", "manual")
    url = reverse("evaluation-run", args=[runs["weak"].pk])
    html = admin_client.get(url, {"version": version.pk}).content.decode()
    assert "2_1" in html and "Per topic" in html
    assert f'<option value="{ts.pk}">R^m_1</option>' in html  # the test set by its name
    upload = admin_client.get(reverse("evaluation-runs")).content.decode()
    assert f'<option value="{ts.pk}">R^m_1 · {coll.name}</option>' in upload  # and its collection, among all
    resp = admin_client.post(url, {"test_set": ts.pk, "description": "paraphrase run"})
    assert resp.status_code == 302
    assert Run.objects.get(pk=runs["weak"].pk).test_set == ts


def test_compare_runs_a_paired_test(admin_client, scored):
    coll, version, runs = scored
    resp = admin_client.get(
        reverse("evaluation-compare"),
        {"version": version.pk, "a": runs["strong"].pk, "b": runs["weak"].pk, "format": "json"},
    )
    data = resp.json()
    assert data["result"]["n"] == 4 and 0 < data["result"]["randomization_pvalue"] <= 1
    assert set(data["per_turn"]) == {"1_1", "1_2", "2_1", "2_2"}


def test_history_shows_kendall_tau_between_versions(admin_client, scored):
    coll, version, runs = scored
    child = derive(version, "original + new", {"2_1": {"d6": 0, "d7": 0}, "1_1": {"x1": 4}})
    services.scores_compute_for_version(version=child)
    data = admin_client.get(
        reverse("evaluation-history"), {"version": version.pk, "against": child.pk, "format": "json"}
    ).json()
    assert data["stability"]["n"] == 2 and data["snapshots"]
    html = admin_client.get(reverse("evaluation-history"), {"version": version.pk, "against": child.pk}).content
    assert b"Kendall" in html


def test_the_robustness_report_builds_tables_11_13_14(admin_client, scored):
    coll, version, runs = scored
    ts = factories.testset(coll, "R^m_1", "manual")
    add_run(coll, "paraphrase-m1", {"1_1": ["x1", "z9", "d1"], "2_2": ["x4"]}, test_set=ts)
    baseline = runs["strong"]
    child = derive(version, "original + new", {"1_1": {"z9": 4, "x1": 0}, "2_2": {"x4": 2}})
    services.scores_compute_for_version(version=version)
    services.scores_compute_for_version(version=child)
    params = {"collection": coll.pk, "base": version.pk, "extended": child.pk, "baseline_manual": baseline.pk}
    html = admin_client.get(reverse("evaluation-robustness"), params).content.decode()
    assert "Table 11" in html and "Table 13" in html and "Table 14" in html and "<svg" in html
    data = admin_client.get(reverse("evaluation-robustness-export", args=["all", "json"]), params).json()
    t13 = data["table13"]["runs"]["R^m_1"]
    assert (t13["top_k"], t13["unjudged"], t13["grades"]["4"], t13["grades"]["0"]) == (4, 3, 1, 1)
    row = data["table11"]["rows"][0]
    assert row["label"] == "R^m_1" and row["values"]["nDCG@3"]["baseline"] is not None
    assert data["table14"]["rows"] and data["threshold"] == 1
    csv_text = admin_client.get(reverse("evaluation-robustness-export", args=["table13", "csv"]), params).content
    assert b"unjudged_pct" in csv_text and b"# depth=3" in csv_text


def test_without_test_set_runs_tables_13_and_14_show_every_run_and_table_11_says_what_to_do(admin_client, scored):
    coll, version, runs = scored
    child = derive(version, "original + new", {"1_1": {"x1": 4}})
    services.scores_compute_for_version(version=child)
    params = {"collection": coll.pk, "base": version.pk}
    data = admin_client.get(reverse("evaluation-robustness-export", args=["all", "json"]), params).json()
    assert data["extended_version"] == "original + new"  # the derived version is the default "after"
    assert set(data["table13"]["runs"]) >= {"strong", "weak"} and data["table11"]["rows"] == []
    strong = next(r for r in data["table14"]["rows"] if r["label"] == "strong")
    assert strong["values"]["nDCG@3"]["before"] != strong["values"]["nDCG@3"]["after"]  # x1 is strong's top 1_1
    html = admin_client.get(reverse("evaluation-robustness"), params).content.decode()
    assert "No run is linked to a test set yet" in html and "draw paraphrase test sets" in html
    # The admin can narrow Tables 13-14 to chosen runs (an empty choice shows none).
    chosen = admin_client.get(
        reverse("evaluation-robustness-export", args=["all", "json"]), {**params, "runs": ["", runs["weak"].pk]}
    ).json()
    assert list(chosen["table13"]["runs"]) == ["weak"]
    html = admin_client.get(reverse("evaluation-robustness"), {**params, "extended": "", "runs": [""]}).content.decode()
    assert "No run to analyse" in html
    assert 'id="pool-form"' not in html and "Create an assessor pool" not in html  # no button to pool nothing


def test_without_a_derived_version_table_14_says_how_to_get_one(admin_client, scored):
    coll, version, runs = scored
    html = admin_client.get(reverse("evaluation-robustness"), {"collection": coll.pk, "base": version.pk}).content
    assert "No qrels version is derived from original yet" in html.decode()


def test_the_robustness_pool_button_creates_a_pool_of_unjudged_passages(admin_client, scored):
    coll, version, runs = scored
    ts = factories.testset(coll, "R^r_1", "raw")
    add_run(coll, "paraphrase-r1", {"1_1": ["n1", "d1"], "1_2": ["n2"]}, test_set=ts)
    from judging.models import Pool, PoolPair

    resp = admin_client.post(
        reverse("evaluation-robustness-pool"),
        {"collection": coll.pk, "base": version.pk, "depth": 3, "baseline_manual": "none", "baseline_raw": "none"},
    )
    assert resp.status_code == 302
    pool = Pool.objects.get()
    assert set(PoolPair.objects.filter(pool=pool).values_list("passage_id", flat=True)) == {"n1", "n2"}


# --- API ------------------------------------------------------------------------------------------------------


def test_the_leaderboard_api_is_admin_only(rater_api, assessor_api, anon_api, admin_api, scored):
    coll, version, runs = scored
    url = reverse("api-eval-leaderboard", args=[version.pk])
    assert rater_api.get(url).status_code == 403
    assert assessor_api.get(url).status_code == 403
    assert anon_api.get(url).status_code == 401  # asked for a token, not refused
    data = admin_api.get(url, {"measure": "AP"}).json()
    assert data["measure"] == "AP" and data["rows"][0]["rank"] == 1


def test_the_scores_api_returns_per_turn_values_and_rejects_bad_measures(admin_api, rater_api, scored):
    coll, version, runs = scored
    url = reverse("api-eval-run-scores", args=[runs["weak"].pk])
    assert rater_api.get(url, {"version": version.pk}).status_code == 403
    data = admin_api.get(url, {"version": version.pk, "measure": "nDCG@3"}).json()
    assert data["turns"]["2_1"] == 0.0 and data["threshold"] == 1
    assert admin_api.get(url, {"version": version.pk, "measure": "bogus@3"}).status_code == 400
    assert admin_api.get(url).status_code == 400


def test_significance_and_stability_apis(admin_api, rater_api, scored):
    coll, version, runs = scored
    q = {"a": runs["strong"].pk, "b": runs["weak"].pk, "version": version.pk, "permutations": 1000}
    assert rater_api.get(reverse("api-eval-significance"), q).status_code == 403
    sig = admin_api.get(reverse("api-eval-significance"), q).json()
    assert sig["n"] == 4 and sig["permutations"] == 1000
    st = admin_api.get(reverse("api-eval-stability"), {"before": version.pk, "after": version.pk}).json()
    assert st["tau"] == pytest.approx(1.0) and st["swapped"] == []


def test_recompute_and_job_apis(admin_api, rater_api, scored, django_capture_on_commit_callbacks):
    coll, version, runs = scored
    url = reverse("api-eval-recompute", args=[coll.pk])
    assert rater_api.post(url).status_code == 403
    with django_capture_on_commit_callbacks(execute=True):
        job = admin_api.post(url).json()
    status = admin_api.get(reverse("api-eval-job", args=[job["id"]])).json()
    assert status["status"] == "succeeded" and status["done"] == status["total"] == 2


def test_uploading_a_run_through_the_api_imports_and_evaluates_it(
    admin_api, rater_api, scored, monkeypatch, django_capture_on_commit_callbacks
):
    coll, version, runs = scored
    body = b"1_1 Q0 d1 1 3.0 up\n1_1 Q0 d3 2 2.0 up\n2_1 Q0 d7 1 1.0 up\n"
    url = reverse("api-eval-run-upload")
    f = io.BytesIO(body)
    f.name = "up.run"
    assert rater_api.post(url, {"collection": coll.pk, "file": f}, format="multipart").status_code == 403
    f = io.BytesIO(body)
    f.name = "up.run"
    with django_capture_on_commit_callbacks(execute=True):
        resp = admin_api.post(url, {"collection": coll.pk, "file": f, "name": "up"}, format="multipart")
    assert resp.status_code == 201, resp.content
    job = EvaluationJob.objects.get(pk=resp.json()["job"]["id"])
    assert job.status == "succeeded"
    scores = admin_api.get(reverse("api-eval-run-scores", args=[resp.json()["run"]]), {"version": version.pk}).json()
    assert scores["turns"]["1_1"] > 0 and scores["turns"]["2_2"] == 0.0


def test_a_bad_run_file_is_rejected_with_file_line_and_reason(admin_api, scored, monkeypatch):
    coll, version, runs = scored
    f = io.BytesIO(b"1_1 Q0 d1 1 3.0 up\nbroken line\n")
    f.name = "bad.run"
    resp = admin_api.post(reverse("api-eval-run-upload"), {"collection": coll.pk, "file": f}, format="multipart")
    assert resp.status_code == 400
    assert "bad.run:2: expected 6 columns" in resp.json()["detail"]
    assert not Run.objects.filter(name="uploaded").exists()


def test_run_update_rejects_a_test_set_of_another_collection(scored):
    coll, version, runs = scored
    other, _, _ = build(name="Other")
    ts = factories.testset(other, "R^m_1", "manual")
    with pytest.raises(ValidationError, match="another collection"):
        services.run_update(run=runs["weak"], test_set=ts)


@pytest.mark.parametrize(
    "name",
    ["evaluation-leaderboard", "evaluation-compare", "evaluation-history", "evaluation-robustness", "evaluation-runs"],
)
def test_pages_render_an_empty_state_without_any_collection(admin_client, name):
    assert admin_client.get(reverse(name)).status_code == 200


def test_a_picked_collection_without_qrels_is_named_and_the_picker_stays_to_switch_back(admin_client, scored):

    coll, _, _ = scored
    bare = factories.collection("Bare", 2024)
    for name in ("evaluation-leaderboard", "evaluation-robustness"):
        html = admin_client.get(reverse(name), {"collection": bare.pk}).content.decode()
        assert "<strong>Bare</strong> has no qrels version yet" in html, name
        assert "No collection has a qrels version" not in html, name
        assert 'id="version-picker"' in html and f'<option value="{coll.pk}" >{coll.name}</option>' in html, name


def test_pages_render_a_version_without_runs_or_scores(admin_client):
    coll = factories.collection_with_turns(name="Empty", year=2019, conversations={"1": ["a"]})
    version = factories.qrels_version(coll)
    for name in ("evaluation-leaderboard", "evaluation-compare", "evaluation-history", "evaluation-robustness"):
        assert admin_client.get(reverse(name), {"version": version.pk}).status_code == 200, name


def test_an_unknown_measure_on_a_page_is_a_400_naming_it_not_a_crash(admin_client, scored):
    coll, version, runs = scored
    resp = admin_client.get(reverse("evaluation-leaderboard"), {"measure": "nope@3"})
    assert resp.status_code == 400 and "unknown measure &#x27;nope@3&#x27;" in resp.content.decode()


def test_uploading_a_real_run_file_through_the_page_uses_the_importer_and_evaluates_it(
    admin_client, scored, django_capture_on_commit_callbacks
):
    from django.core.files.uploadedfile import SimpleUploadedFile

    coll, version, runs = scored
    ts = factories.testset(coll, "R^r_1", "raw")
    body = b"1_1\tQ0\td3\t0\t2.5\tmine\n1_1\tQ0\td1\t1\t2.5\tmine\n2_1\tQ0\td7\t0\t1.0\tmine\n"
    upload = SimpleUploadedFile("mine.run", body)
    with django_capture_on_commit_callbacks(execute=True):
        resp = admin_client.post(
            reverse("evaluation-runs"), {"collection": coll.pk, "file": upload, "name": "mine", "test_set": ts.pk}
        )
    assert resp.status_code == 302, resp.content.decode()[:2000]
    run = Run.objects.get(collection=coll, name="mine")
    assert run.test_set == ts
    assert EvaluationJob.objects.filter(run=run, status="succeeded").count() == 1
    from evaluation.selectors import per_turn_scores

    # Tied scores: trec_eval puts d3 (larger docid) first, so d1 (grade 2) sits at rank 2.
    rr = per_turn_scores(run=run, version=version, measure="RR")
    assert rr["1_1"] == 1.0  # d3 has grade 1 ≥ threshold 1 at rank 1
    assert per_turn_scores(run=run, version=version, measure="nDCG@3")["2_2"] == 0.0


def test_a_bad_real_run_file_shows_file_line_and_reason_on_the_page(admin_client, scored):
    from django.core.files.uploadedfile import SimpleUploadedFile

    coll, version, runs = scored
    upload = SimpleUploadedFile("broken.run", b"1_1 Q0 d1 1 2.0 t\n1_1 Q0 d2 two 1.0 t\n")
    resp = admin_client.post(reverse("evaluation-runs"), {"collection": coll.pk, "file": upload, "name": "broken"})
    assert resp.status_code == 200
    html = resp.content.decode()
    assert "broken.run:2" in html
    assert not Run.objects.filter(name="broken").exists()


def test_get_on_the_runs_endpoint_lists_runs_filterable_by_collection(admin_api, rater_api, scored):
    coll, version, runs = scored
    other, _, _ = build(name="Other")
    listed = admin_api.get(f"/api/evaluation/runs/?collection={coll.pk}")
    assert listed.status_code == 200
    body = listed.json()
    assert body["count"] == 2 and [r["name"] for r in body["results"]] == ["strong", "weak"]
    assert {r["collection"] for r in body["results"]} == {coll.pk} and body["results"][0]["test_set"] is None
    assert admin_api.get("/api/evaluation/runs/").json()["count"] == 4
    assert rater_api.get("/api/evaluation/runs/").status_code == 403


def test_the_run_upload_form_starts_on_the_only_collection(admin_client, scored):
    coll, version, runs = scored
    page = admin_client.get(reverse("evaluation-runs")).content.decode()
    select = page[page.index('name="collection"') :]
    select = select[: select.index("</select>")]
    assert f'<option value="{coll.pk}" selected>' in select and "---------" not in select
    build(name="Second")
    page = admin_client.get(reverse("evaluation-runs")).content.decode()
    assert "---------" in page  # with two collections the admin chooses


def test_pages_open_on_the_version_that_gained_judgments_and_robustness_compares_it_with_its_parent(
    admin_client, scored
):
    coll, original, _runs = scored
    assert admin_client.get(reverse("evaluation-leaderboard")).context["version"] == original
    derived = derive(original, "original + pool", {"1_1": {"d9": 2}})
    assert admin_client.get(reverse("evaluation-leaderboard")).context["version"] == derived
    assert admin_client.get(reverse("evaluation-leaderboard"), {"version": original.pk}).context["version"] == original
    params = admin_client.get(reverse("evaluation-robustness")).context["p"]
    assert (params.base, params.extended) == (original, derived)


def test_the_score_event_stream_pushes_a_scores_event_when_the_version_changes(admin_client, scored, settings):
    coll, version, _runs = scored
    settings.ECAST_EVENTS_STREAM_SECONDS = 0.3
    scoring.scores_stamp_touch(version_id=version.pk)
    response = admin_client.get(reverse("evaluation-score-events", args=[version.pk]), {"since": "stale"})
    assert response["Content-Type"] == "text/event-stream" and response["Cache-Control"] == "no-cache"
    body = b"".join(response.streaming_content).decode()
    stamp = cache_stamp(version.pk)
    assert body.startswith("retry: 300") and f"id: {stamp}\nevent: scores\ndata: {stamp}\n\n" in body
    # A page that has seen the current stamp hears nothing until the next change.
    quiet = admin_client.get(reverse("evaluation-score-events", args=[version.pk]), {"since": stamp})
    assert "event: scores" not in b"".join(quiet.streaming_content).decode()


def test_the_score_event_stream_is_for_admins(rater_client, scored):
    from django.test import Client

    _coll, version, _runs = scored
    url = reverse("evaluation-score-events", args=[version.pk])
    assert rater_client.get(url).status_code == 403
    assert Client().get(url).status_code == 302


def cache_stamp(version_id: int) -> str:
    from evaluation.selectors import scores_stamp

    return scores_stamp(version_id=version_id)


def test_an_llm_pre_judgment_version_is_not_the_default_after_version_of_the_robustness_report(admin_client, scored):
    coll, version, _ = scored
    derive(version, "original + new", {"1_1": {"x1": 4}})
    first = Qrel.objects.filter(version=version).first()
    llm = factories.qrels_version(
        coll, "llm: tiny", {first.turn.turn_id: {first.passage_id: 4}}, parent=version, source=Qrel.Source.LLM
    )
    params = {"collection": coll.pk, "base": version.pk}
    data = admin_client.get(reverse("evaluation-robustness-export", args=["all", "json"]), params).json()
    assert data["extended_version"] == "original + new"  # newer, but it re-labels the base's items
    params["extended"] = llm.pk
    data = admin_client.get(reverse("evaluation-robustness-export", args=["all", "json"]), params).json()
    assert data["extended_version"] == "llm: tiny"  # still comparable when picked


def test_the_full_recompute_button_queues_a_job_the_jobs_table_names_for_every_run(
    admin_client, scored, django_capture_on_commit_callbacks
):
    coll, version, runs = scored
    url = reverse("evaluation-recompute")
    assert admin_client.get(url).status_code == 405  # a button, not a link
    with django_capture_on_commit_callbacks(execute=True):  # the parts run inline once the request commits
        resp = admin_client.post(url, {"collection": coll.pk})
    job = EvaluationJob.objects.get(kind="full")
    html = admin_client.get(resp["Location"]).content.decode()
    assert f"Full recompute queued (job {job.pk})" in html
    opening = f'<tr data-job="{job.pk}"><td>{job.pk}</td><td>Full recompute'
    row = next(line for line in html.splitlines() if opening in line)
    assert "every run · every version" in row and "status-succeeded" in row and "2/2" in row


def test_raters_cannot_start_a_full_recompute(rater_client, scored):
    coll, _, _ = scored
    assert rater_client.post(reverse("evaluation-recompute"), {"collection": coll.pk}).status_code == 403
    assert not EvaluationJob.objects.filter(kind="full").exists()


def test_the_compare_form_starts_on_two_different_runs(admin_client):
    coll, _, _ = build()
    html = admin_client.get("/evaluation/compare/", {"collection": coll.pk}).content.decode()
    selects = dict(re.findall(r'<select name="(a|b)">(.*?)</select>', html, flags=re.S))

    def shown(options: str) -> str:  # the selected option, else the first (as a browser shows it)
        picked = re.search(r'<option value="(\d+)" selected', options)
        return picked.group(1) if picked else re.search(r'<option value="(\d+)"', options).group(1)

    assert shown(selects["a"]) != shown(selects["b"])
