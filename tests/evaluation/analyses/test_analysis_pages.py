"""Pages, downloads and API of the analyses: admin-only, report states qrels version and computed time."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.urls import reverse

from evaluation.analyses.services import calibration as calibration_services
from evaluation.analyses.services import pivots as pivot_services
from evaluation.models import MetaEvaluation, PivotAnalysis, StochasticSystem
from tests import factories
from tests.evaluation.analyses.helpers import collection_with_qrels, make_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def done_pivot(django_capture_on_commit_callbacks):
    return _computed_pivot(django_capture_on_commit_callbacks)


def _computed_pivot(django_capture_on_commit_callbacks):
    coll, version = collection_with_qrels(n_topics=2, turns_per_topic=3)
    runs = [make_run(coll, f"sys{i}", q) for i, q in enumerate([1.5, 1.0, 0.5, 0.2])]
    with django_capture_on_commit_callbacks(execute=True):
        obj = pivot_services.pivot_analysis_create(
            collection=coll, runs=runs, qrels_version=version, metrics=["AP", "P@3"], n_splits=4
        )
    obj.refresh_from_db()
    assert obj.status == "succeeded", obj.error
    return obj


PAGES = ["analyses-pivots", "analyses-metaeval", "analyses-calibration"]


@pytest.mark.parametrize("name", PAGES)
def test_raters_and_assessors_cannot_open_analysis_pages(name, rater_client, client, assessor):
    assert rater_client.get(reverse(name)).status_code == 403
    client.force_login(assessor)
    assert client.get(reverse(name)).status_code == 403


def test_anonymous_users_are_sent_to_login(client):
    resp = client.get(reverse("analyses-pivots"))
    assert resp.status_code == 302 and "/accounts/login/" in resp["Location"]


def test_non_admins_cannot_read_reports_downloads_or_api(done_pivot, rater_client, rater_api, assessor_api, anon_api):
    kw = {"kind": "pivots", "pk": done_pivot.pk}
    for url in [
        reverse("analyses-detail", kwargs=kw),
        reverse("analyses-download", kwargs={**kw, "fmt": "csv"}),
        reverse("job-progress", args=["analysis-pivots", done_pivot.pk]),
    ]:
        assert rater_client.get(url).status_code == 403
    assert rater_client.post(reverse("analyses-recompute", kwargs=kw)).status_code == 403
    assert rater_client.post(reverse("analyses-delete", kwargs=kw)).status_code == 403
    api = reverse("api-analyses-detail", kwargs=kw)
    assert rater_api.get(api).status_code == 403
    assert assessor_api.get(api).status_code == 403
    assert anon_api.get(api).status_code in (401, 403)
    create = reverse("api-analyses-pivots-create")
    assert (
        rater_api.post(create, {"collection": done_pivot.collection_id, "runs": [1, 2, 3]}, format="json").status_code
        == 403
    )
    assert PivotAnalysis.objects.count() == 1


def test_pivot_report_shows_qrels_version_computed_time_and_heatmaps(done_pivot, admin_client):
    resp = admin_client.get(reverse("analyses-detail", kwargs={"kind": "pivots", "pk": done_pivot.pk}))
    body = resp.content.decode()
    assert resp.status_code == 200
    assert "qrels version <strong>original</strong>" in body
    assert done_pivot.computed_at.strftime("%Y-%m-%d %H:%M:%S") in body
    assert body.count("<svg") >= 2
    assert 'id="pivot-table"' in body and "sys0" in body
    dist = admin_client.get(
        reverse("analyses-detail", kwargs={"kind": "pivots", "pk": done_pivot.pk}),
        {"dist_metric": "P@3", "dist_pivot": "sys1"},
    ).content.decode()
    assert 'id="distribution-plot"' in dist and "pivot sys1, P@3" in dist


def test_the_report_figures_are_drawn_once_and_again_only_when_the_results_change(
    done_pivot, admin_client, monkeypatch, fresh_cache
):
    from matplotlib.figure import Figure

    drawn = []
    real = Figure.savefig
    monkeypatch.setattr(Figure, "savefig", lambda fig, *a, **kw: drawn.append(fig) or real(fig, *a, **kw))
    url = reverse("analyses-detail", kwargs={"kind": "pivots", "pk": done_pivot.pk})
    first = admin_client.get(url).content.decode()
    n_first = len(drawn)
    assert n_first >= 2  # the two heatmaps at least
    second = admin_client.get(url).content.decode()
    assert second.count("<svg") == first.count("<svg") and len(drawn) == n_first
    results = done_pivot.results
    results["consistency_mean"]["AP"][0] = 0.123  # a recompute that changed one figure's data
    PivotAnalysis.objects.filter(pk=done_pivot.pk).update(results=results)
    assert "0.12" in admin_client.get(url).content.decode()
    n_changed = len(drawn)
    assert n_changed > n_first
    admin_client.get(url)
    assert len(drawn) == n_changed


def test_the_computation_draws_the_report_figures_so_the_first_visit_draws_none(
    fresh_cache, admin_client, monkeypatch, django_capture_on_commit_callbacks
):
    from matplotlib.figure import Figure

    pivot = _computed_pivot(django_capture_on_commit_callbacks)
    drawn = []
    real = Figure.savefig
    monkeypatch.setattr(Figure, "savefig", lambda fig, *a, **kw: drawn.append(fig) or real(fig, *a, **kw))
    page = admin_client.get(reverse("analyses-detail", kwargs={"kind": "pivots", "pk": pivot.pk})).content.decode()
    assert 'id="consistency-plot"' in page and 'id="distribution-plot"' in page and page.count("<svg") >= 3
    assert drawn == []
    # Another metric's histograms were not drawn ahead: asking for them draws them.
    admin_client.get(reverse("analyses-detail", kwargs={"kind": "pivots", "pk": pivot.pk}), {"dist_metric": "P@3"})
    assert len(drawn) == 1


def test_cross_ee_tool_on_the_report_page(done_pivot, admin_client):
    url = reverse("analyses-detail", kwargs={"kind": "pivots", "pk": done_pivot.pk})
    resp = admin_client.get(url, {"metric": "AP", "pivot": "sys2", "ee_sys0": "EE1", "ee_sys1": "EE2"})
    body = resp.content.decode()
    assert 'id="compare-result"' in body and "Pivot <strong>sys2</strong>" in body
    bad = admin_client.get(url, {"metric": "AP", "pivot": "nobody", "ee_sys0": "EE1"})
    assert "unknown pivot" in bad.content.decode()


def test_csv_and_json_downloads(done_pivot, admin_client):
    kw = {"kind": "pivots", "pk": done_pivot.pk}
    resp = admin_client.get(reverse("analyses-download", kwargs={**kw, "fmt": "csv"}))
    rows = list(csv.reader(io.StringIO(resp.content.decode())))
    assert rows[0][:4] == ["metric", "pivot", "full_set_mean", "consistency_mean"]
    assert len(rows) == 1 + 2 * 4
    splits = admin_client.get(reverse("analyses-download", kwargs={**kw, "fmt": "csv"}), {"table": "splits"})
    assert len(list(csv.reader(io.StringIO(splits.content.decode())))) == 1 + 2 * 4 * 4
    data = json.loads(admin_client.get(reverse("analyses-download", kwargs={**kw, "fmt": "json"})).content)
    assert data["meta"]["qrels_version"] == "original" and data["meta"]["computed_at"]
    assert data["results"]["metrics"] == ["AP", "P@3"]
    assert admin_client.get(reverse("analyses-download", kwargs={**kw, "fmt": "xml"})).status_code == 404


def test_admin_creates_a_pivot_analysis_through_the_form(admin_client, django_capture_on_commit_callbacks):
    coll, version = collection_with_qrels(n_topics=2)
    runs = [make_run(coll, f"s{i}", q) for i, q in enumerate([1.0, 0.5, 0.1, 0.05])]
    with django_capture_on_commit_callbacks(execute=True):
        resp = admin_client.post(
            reverse("analyses-pivots"),
            {
                "collection": coll.pk, "runs": [r.pk for r in runs], "qrels_version": version.pk, "ee_kind": "splits",
                "metrics": "AP, RR", "n_splits": 3, "seed": 0, "auto_recompute": "on",
            },
        )  # fmt: skip
    obj = PivotAnalysis.objects.get()
    assert resp.status_code == 302 and resp["Location"].endswith(f"/pivots/{obj.pk}/")
    obj.refresh_from_db()
    assert obj.status == "succeeded"
    page = admin_client.get(reverse("analyses-pivots"), {"collection": coll.pk}).content.decode()
    assert obj.name in page


def test_form_errors_are_shown_and_nothing_is_written(admin_client):
    coll, version = collection_with_qrels(n_topics=1)
    runs = [make_run(coll, f"s{i}", 0.5) for i in range(4)]
    resp = admin_client.post(
        reverse("analyses-pivots"),
        {"collection": coll.pk, "runs": [r.pk for r in runs], "qrels_version": version.pk, "ee_kind": "splits",
         "metrics": "AP, NotAMeasure", "n_splits": 3, "seed": 0},
    )  # fmt: skip
    assert resp.status_code == 400
    assert "unknown measure" in resp.content.decode()
    assert PivotAnalysis.objects.count() == 0


def test_the_forms_refuse_a_missing_upload_and_non_numeric_b_values(admin_client):
    coll, version = collection_with_qrels(n_topics=1)
    resp = admin_client.post(
        reverse("analyses-metaeval"),
        {"collection": coll.pk, "source": "upload", "complex_metrics": "c1, c2", "dimensions": "Rel: p", "depth": 10},
    )
    assert resp.status_code == 400 and "choose a per-topic CSV table to upload" in resp.content.decode()
    runs = [make_run(coll, f"ens-{k}", 0.8, seed=k, probs=True) for k in range(2)]
    resp = admin_client.post(
        reverse("analyses-calibration"),
        {"form": "stochastic", "collection": coll.pk, "runs": [r.pk for r in runs], "qrels_version": version.pk,
         "measure": "nDCG@3", "b_values": "0.5, lots", "depth": 10},
    )  # fmt: skip
    assert "comma-separated numbers" in resp.content.decode()
    assert not MetaEvaluation.objects.exists() and not StochasticSystem.objects.exists()


def test_meta_evaluation_upload_through_the_page(admin_client, django_capture_on_commit_callbacks, tmp_path):
    coll, _ = collection_with_qrels(n_topics=1)
    table = "run,topic,c1,c2,p\n" + "".join(f"A,{t},.6,.1,.9\nB,{t},.5,.2,.1\n" for t in range(5))
    upload = io.BytesIO(table.encode())
    upload.name = "mine.csv"
    with django_capture_on_commit_callbacks(execute=True):
        resp = admin_client.post(
            reverse("analyses-metaeval"),
            {"collection": coll.pk, "source": "upload", "upload": upload, "complex_metrics": "c1, c2",
             "dimensions": "Rel: p", "depth": 10},
        )  # fmt: skip
    assert resp.status_code == 302, resp.content.decode()[:2000]
    obj = MetaEvaluation.objects.get()
    page = admin_client.get(resp["Location"]).content.decode()
    assert "uploaded table <strong>mine.csv</strong>" in page
    assert "<svg" in page
    ranks = admin_client.get(
        reverse("analyses-download", kwargs={"kind": "metaeval", "pk": obj.pk, "fmt": "csv"}), {"table": "ranks"}
    )
    assert "intuitiveness_rank" in ranks.content.decode()


def test_api_creates_and_reads_a_calibration_report(admin_api, django_capture_on_commit_callbacks):
    coll, version = collection_with_qrels(n_topics=1)
    run = make_run(coll, "probs", 1.0, probs=True)
    with django_capture_on_commit_callbacks(execute=True):
        resp = admin_api.post(
            reverse("api-analyses-calibration-create"), {"run": run.pk, "qrels_version": version.pk}, format="json"
        )
    assert resp.status_code == 201, resp.content
    detail = admin_api.get(reverse("api-analyses-detail", kwargs={"kind": "calibration", "pk": resp.data["id"]}))
    assert detail.data["status"] == "succeeded"
    assert detail.data["qrels_version"] == "original"
    assert detail.data["results"]["conditions"][0]["label"] == "all candidates"
    bad = admin_api.post(
        reverse("api-analyses-calibration-create"),
        {"run": make_run(coll, "raw", 1.0).pk, "qrels_version": version.pk},
        format="json",
    )
    assert bad.status_code == 400 and "normalisation" in bad.data


def test_api_compare_through_a_pivot(done_pivot, admin_api):
    resp = admin_api.post(
        reverse("api-analyses-pivots-compare", kwargs={"pk": done_pivot.pk}),
        {"metric": "AP", "pivot": "sys1", "choices": {"sys0": "EE1", "sys2": "EE2"}},
        format="json",
    )
    assert resp.status_code == 200, resp.content
    assert [r["rank"] for r in resp.data["ranking"]] == [1, 2]
    assert set(resp.data["consistency"]) == {"mean", "std"}


def test_calibration_and_stochastic_pages_render(admin_client, django_capture_on_commit_callbacks):
    coll, version = collection_with_qrels(n_topics=1)
    samples = [make_run(coll, f"ens-{k}", 0.8, seed=k, probs=True) for k in range(3)]
    with django_capture_on_commit_callbacks(execute=True):
        rep = calibration_services.calibration_report_create(
            run=samples[0], qrels_version=version, normalisation="softmax"
        )
        sto = calibration_services.stochastic_system_create(
            collection=coll, runs=samples, qrels_version=version, b_values=[0.5]
        )
    body = admin_client.get(reverse("analyses-detail", kwargs={"kind": "calibration", "pk": rep.pk})).content.decode()
    assert "softmax per turn" in body and 'id="reliability-plot"' in body and "<svg" in body
    body = admin_client.get(reverse("analyses-detail", kwargs={"kind": "stochastic", "pk": sto.pk})).content.decode()
    assert 'id="gain-plot"' in body and "<svg" in body
    listing = admin_client.get(reverse("analyses-calibration"), {"collection": coll.pk}).content.decode()
    assert rep.name in listing and sto.name in listing


def test_schema_generates_for_the_analysis_api(admin_client):
    resp = admin_client.get("/api/schema/")
    assert resp.status_code == 200
    assert b"/api/analyses/pivots/" in resp.content


def test_api_meta_evaluation_upload_multipart(admin_api, django_capture_on_commit_callbacks):
    coll, _ = collection_with_qrels(n_topics=1)
    # 8 topics: c1 right 8 times out of 8 → sign test p = 2·0.5^8 < 0.05 (5 would not be significant)
    table = "run,topic,c1,c2,p\n" + "".join(f"A,{t},.6,.1,.9\nB,{t},.5,.2,.1\n" for t in range(8))
    upload = io.BytesIO(table.encode())
    upload.name = "api.csv"
    with django_capture_on_commit_callbacks(execute=True):
        resp = admin_api.post(
            reverse("api-analyses-metaeval-create"),
            {"collection": coll.pk, "complex_metrics": ["c1", "c2"], "dimensions": '{"Rel": ["p"]}', "upload": upload},
            format="multipart",
        )
    assert resp.status_code == 201, resp.content
    detail = admin_api.get(reverse("api-analyses-detail", kwargs={"kind": "metaeval", "pk": resp.data["id"]}))
    assert detail.data["results"]["settings"][0]["intuitiveness_rank"] == {"c1": 1, "c2": 2}
    bad = admin_api.post(
        reverse("api-analyses-metaeval-create"),
        {"collection": coll.pk, "complex_metrics": ["c1", "zz"], "dimensions": '{"Rel": ["p"]}',
         "upload": io.BytesIO(table.encode())},
        format="multipart",
    )  # fmt: skip
    assert bad.status_code == 400 and "zz" in str(bad.data)


def test_a_queued_analysis_page_polls_and_a_failed_one_shows_its_error(admin_client):
    coll, version = collection_with_qrels(n_topics=1)
    queued = PivotAnalysis.objects.create(
        collection=coll, name="queued", qrels_version=version, parameters={"metrics": ["AP"]}
    )
    body = admin_client.get(reverse("analyses-detail", kwargs={"kind": "pivots", "pk": queued.pk})).content.decode()
    assert 'id="analysis-running"' in body and "computed <strong>not yet</strong>" in body
    assert "Waiting for a worker" in body and "Computing in the background" not in body  # queued, not running
    PivotAnalysis.objects.filter(pk=queued.pk).update(status="running")
    running = admin_client.get(reverse("analyses-detail", kwargs={"kind": "pivots", "pk": queued.pk})).content
    assert b"Computing in the background" in running and b"Waiting for a worker" not in running
    PivotAnalysis.objects.filter(pk=queued.pk).update(status="queued")
    assert (
        admin_client.get(
            reverse("analyses-download", kwargs={"kind": "pivots", "pk": queued.pk, "fmt": "csv"})
        ).status_code
        == 409
    )
    status = admin_client.get(reverse("job-progress", args=["analysis-pivots", queued.pk])).json()
    assert status["status"] == "queued"
    failed = PivotAnalysis.objects.create(
        collection=coll, name="failed", qrels_version=version, status="failed", error="boom: no topics"
    )
    body = admin_client.get(reverse("analyses-detail", kwargs={"kind": "pivots", "pk": failed.pk})).content.decode()
    assert "Failed: boom: no topics" in body


def test_pivot_report_across_qrels_versions_offers_them_as_environments(
    admin_client, django_capture_on_commit_callbacks
):
    coll, version = collection_with_qrels(n_topics=2)
    v2 = factories.qrels_derived(version, "with-new")
    runs = [make_run(coll, f"sys{i}", q) for i, q in enumerate([1.5, 1.0, 0.5, 0.2])]
    with django_capture_on_commit_callbacks(execute=True):
        obj = pivot_services.pivot_analysis_create(
            collection=coll, runs=runs, qrels_version=None, ee_kind="qrels_versions", qrels_versions=[version, v2],
            metrics=["AP"], n_splits=5,
        )  # fmt: skip
    body = admin_client.get(reverse("analyses-detail", kwargs={"kind": "pivots", "pk": obj.pk})).content.decode()
    assert "environments: original, with-new" in body
    assert '<option value="with-new">with-new</option>' in body
    assert 'id="distribution-plot"' not in body  # per-split histograms only exist for topic splits


def test_a_stochastic_system_of_runs_on_different_scales_keeps_its_score_for_b_above_zero(
    admin_client, django_capture_on_commit_callbacks
):
    from evaluation.models import RunTurn

    coll, version = collection_with_qrels(n_topics=2)
    bm25 = make_run(coll, "bm25", 0.8, seed=1)
    dense = make_run(coll, "dense", 0.8, seed=2)
    for rt in RunTurn.objects.filter(run=dense):
        rt.scores = [100 + 10 * s for s in rt.scores]  # ≈ 150–200 against BM25's 5–10
        rt.save()
    with django_capture_on_commit_callbacks(execute=True):
        obj = calibration_services.stochastic_system_create(
            collection=coll, runs=[bm25, dense], qrels_version=version, b_values=[0.05, 1.0, 2.0]
        )
    obj.refresh_from_db()
    assert obj.status == "succeeded", obj.error
    res = obj.results
    assert res["normalisation"] == "minmax" and res["max_variance"] <= 0.25
    base = res["curve"][0]["value"]
    assert base > 0.5 and all(c["value"] >= 0.8 * base for c in res["curve"])
    page = admin_client.get(reverse("analyses-detail", kwargs={"kind": "stochastic", "pk": obj.pk})).content.decode()
    assert "so the samples' scores are first mapped to [0, 1] per turn" in page
    assert "(min-max per turn and sample)" in page and "would rank by variance alone" in page


def test_the_analysis_forms_label_every_field_beside_its_widget(admin_client):
    coll, version = collection_with_qrels(n_topics=1)
    pivots_page = admin_client.get(reverse("analyses-pivots"), {"collection": coll.pk}).content.decode()
    assert '<label for="id_ee_kind">Evaluation environments (EEs)</label>' in pivots_page
    assert '<label for="id_runs">Runs</label>' in pivots_page and "Ee kind" not in pivots_page
    assert '<label for="id_qrels_versions">Qrels versions as EEs</label>' in pivots_page
    calibration_page = admin_client.get(reverse("analyses-calibration"), {"collection": coll.pk}).content.decode()
    # two forms on one page: each label points at its own form's field
    assert '<label for="id_qrels_version">' in calibration_page
    assert '<label for="id_stochastic_qrels_version">' in calibration_page
    assert '<label for="id_stochastic_b_values">Risk aversion b values</label>' in calibration_page


def test_a_one_version_collection_starts_the_forms_on_that_version(admin_client):
    coll, version = collection_with_qrels(n_topics=1)
    page = admin_client.get(reverse("analyses-calibration"), {"collection": coll.pk}).content.decode()
    select = page[page.index('id="id_qrels_version"') :]
    select = select[: select.index("</select>")]
    assert f'<option value="{version.pk}" selected>' in select and "---------" not in select


def test_pivots_refuse_three_runs_and_say_why_on_the_form_and_in_the_api(admin_client, admin_api):
    coll, version = collection_with_qrels(n_topics=2)
    runs = [make_run(coll, f"s{i}", q) for i, q in enumerate([1.0, 0.5, 0.1])]
    why = "with 3 runs there are only 2 deltas, whose r is always ±1"
    resp = admin_client.post(
        reverse("analyses-pivots"),
        {"collection": coll.pk, "runs": [r.pk for r in runs], "qrels_version": version.pk, "ee_kind": "splits",
         "metrics": "AP", "n_splits": 3, "seed": 0},
    )  # fmt: skip
    html = resp.content.decode()
    assert resp.status_code == 400
    runs_field = html[html.index('<label for="id_runs">') : html.index('<label for="id_qrels_version">')]
    assert "choose at least 4 runs (got 3)" in runs_field and why in runs_field
    api = admin_api.post(
        reverse("api-analyses-pivots-create"),
        {"collection": coll.pk, "runs": [r.pk for r in runs], "qrels_version": version.pk},
        format="json",
    )
    assert api.status_code == 400 and why in api.json()["detail"]
    reason = f"consistency is the Pearson r between the other runs' deltas to the pivot, and {why}"
    assert api.json()["runs"] == [f"choose at least 4 runs (got 3): {reason}"]
    assert PivotAnalysis.objects.count() == 0
