"""Any ir_measures measure on demand: asked for by a page or the API, computed for every run in the worker, stored for
the version and kept live from then on; a malformed or uncomputable string is refused by name."""

from __future__ import annotations

import gzip
import re

import ir_measures
import pytest
from django.urls import reverse

from evaluation import events, metrics, services
from evaluation.measures import measure_check, measure_registry
from evaluation.models import EvaluationJob, Qrel, QrelsVersion, Run
from evaluation.selectors import per_turn_scores, score_means
from tests.evaluation.helpers import build, cast2019_decaf, derive, stored

pytestmark = pytest.mark.django_db

# Twenty measures none of which is among the stored defaults.
ON_DEMAND = [
    "nDCG@100",
    "nDCG@20",
    "nDCG",
    "P(rel=2)@5",
    "P@20",
    "RR(rel=2)",
    "R@50",
    "R@200",
    "Bpref(rel=2)",
    "infAP(rel=2)",
    "AP(rel=2)",
    "AP@100",
    "Rprec(rel=2)",
    "NumRel",
    "SetF",
    "SetP",
    "SetR",
    "Success@5",
    "IPrec@0.1",
    "nDCG(judged_only=True)@10",
]


def test_twenty_on_demand_measures_equal_ir_measures_on_decaf_runs(shared_data, django_capture_on_commit_callbacks):
    assert not set(ON_DEMAND) & set(metrics.DEFAULT_MEASURES) and len(set(ON_DEMAND)) == 20
    runs = (1, 16)
    coll, version = cast2019_decaf(shared_data, runs, "CAsT 2019 (on demand)")
    services.scores_compute_for_version(version=version)
    with django_capture_on_commit_callbacks(execute=True):
        for m in ON_DEMAND:
            state = services.measure_request(version=version, measure=m)
            assert state.measure == m
    assert EvaluationJob.objects.filter(kind="measures", status="succeeded").count() == len(ON_DEMAND)
    qrels = list(ir_measures.read_trec_qrels(str(shared_data / "cast/2019/2019qrels.txt")))
    parsed = [ir_measures.parse_measure(m) for m in ON_DEMAND]
    for n in runs:
        with gzip.open(shared_data / f"runs/cast2019_decaf/exp{n}.run.gz", "rt") as fh:
            run = list(ir_measures.read_trec_run(fh.read()))
        expected = {(str(x.measure), x.query_id): x.value for x in ir_measures.iter_calc(parsed, qrels, run)}
        db_run = Run.objects.get(collection=coll, name=f"exp{n}")
        for m in ON_DEMAND:
            got = per_turn_scores(run=db_run, version=version, measure=m)
            want = {q: v for (name, q), v in expected.items() if name == m}
            assert want and set(want) <= set(got), (n, m)
            for q, v in want.items():
                assert got[q] == pytest.approx(v, abs=1e-9), (n, m, q)


def test_the_leaderboard_shows_numbers_for_ndcg_at_100_after_its_job(admin_client, django_capture_on_commit_callbacks):
    coll, version, runs = build()
    services.scores_compute_for_version(version=version)
    with django_capture_on_commit_callbacks(execute=False) as queued:
        html = admin_client.get(reverse("evaluation-leaderboard"), {"version": version.pk, "measure": "nDCG@100"})
    page = html.content.decode()
    assert html.status_code == 200
    assert "Computing <strong>nDCG@100</strong>" in page and "computing…" in page
    # no "Turns 0" or "± s.e. 0.0000" beside a score not computed yet
    strong = re.search(rf'<tr data-run="{runs["strong"].pk}">(.*?)</tr>', page, flags=re.S).group(1)
    cells = re.findall(r'<td class="num">(.*?)</td>', strong)
    assert cells[1] == "–" and cells[-1] == "–", cells
    job = EvaluationJob.objects.get(kind="measures")
    assert f"/jobs/evaluation/{job.pk}/progress/" in page
    for callback in queued:
        callback()
    job.refresh_from_db()
    assert job.status == "succeeded" and job.progress_done == job.progress_total == 2
    page = admin_client.get(reverse("evaluation-leaderboard"), {"version": version.pk, "measure": "nDCG@100"})
    text = page.content.decode()
    assert "Computing" not in text
    mean = score_means(version=version, measures=["nDCG@100"])[runs["strong"].pk]["nDCG@100"]
    assert mean > 0 and f"{mean:.4f}" in text
    assert QrelsVersion.objects.get(pk=version.pk).requested_measures == ["nDCG@100"]


def test_a_malformed_measure_is_refused_by_name_on_the_page_and_the_api(admin_client, admin_api):
    coll, version, runs = build()
    services.scores_compute_for_version(version=version)
    resp = admin_client.get(reverse("evaluation-leaderboard"), {"version": version.pk, "measure": "nDCG@"})
    assert (
        resp.status_code == 400 and "nDCG@" in resp.content.decode() and 'id="measure-error"' in resp.content.decode()
    )
    api = admin_api.get(reverse("api-eval-leaderboard", args=[version.pk]), {"measure": "Bogus@5"})
    assert api.status_code == 400 and "Bogus@5" in str(api.json())
    uncomputable = admin_api.get(reverse("api-eval-leaderboard", args=[version.pk]), {"measure": "ERR@10"})
    assert uncomputable.status_code == 400 and "ERR@10" in str(uncomputable.json())
    assert not EvaluationJob.objects.filter(kind="measures").exists()


def test_the_api_answers_202_while_a_measure_is_computed_then_its_values(admin_api, django_capture_on_commit_callbacks):
    coll, version, runs = build()
    services.scores_compute_for_version(version=version)
    url = reverse("api-eval-run-scores", args=[runs["strong"].pk])
    with django_capture_on_commit_callbacks(execute=False) as queued:
        first = admin_api.get(url, {"version": version.pk, "measure": "RR(rel=2)"})
    assert first.status_code == 202
    body = first.json()
    assert body["status"] == "computing" and body["measure"] == "RR(rel=2)" and body["progress"].startswith("/jobs/")
    for callback in queued:
        callback()
    done = admin_api.get(url, {"version": version.pk, "measure": "RR(rel=2)"})
    assert done.status_code == 200 and done.json()["turns"]["1_1"] == 1.0  # d1 (grade 2) at rank 1
    board = admin_api.get(reverse("api-eval-leaderboard", args=[version.pk]), {"measure": "RR(rel=2)"})
    assert board.status_code == 200 and board.json()["rows"][0]["means"]["RR(rel=2)"] is not None


def test_a_new_judgment_updates_an_on_demand_measure_too(django_capture_on_commit_callbacks):
    coll, version, runs = build()
    services.scores_compute_for_version(version=version)
    with django_capture_on_commit_callbacks(execute=True):
        services.measure_request(version=version, measure="P(rel=2)@5")
    turn = coll.turns.get(turn_id="2_2")
    (before,) = stored(run=runs["strong"], turn=turn, version=version, measure="P(rel=2)@5")
    assert before.value == 0.0
    with django_capture_on_commit_callbacks(execute=True):
        Qrel.objects.create(version=version, turn=turn, passage_id="x4", grade=3, source="assessed")
        events.qrels_changed(version_id=version.pk, turn_ids=[turn.pk])
    (after,) = stored(run=runs["strong"], turn=turn, version=version, measure="P(rel=2)@5")
    assert after.value == pytest.approx(1 / 5)  # x4 at rank 1 is now relevant at level 2


def test_measure_strings_are_checked_and_spelled_as_ir_measures_does():
    assert measure_check("ndcg@100") == "nDCG@100" and measure_check("map") == "AP"
    with pytest.raises(metrics.MeasureError, match="'nDCG@'"):
        measure_check("nDCG@")
    with pytest.raises(metrics.MeasureError, match="'alpha_nDCG@10'.*pytrec_eval"):
        measure_check("alpha_nDCG@10")


def test_the_picker_offers_ir_measures_registry_names_with_their_parameters(admin_client):
    coll, version, runs = build()
    names = dict(measure_registry())
    assert {"SetF", "NumRel", "Success@10", "IPrec@0.1"} <= set(names)
    assert "ranking cutoff" in names["Success@10"]
    html = admin_client.get(reverse("evaluation-leaderboard"), {"version": version.pk}).content.decode()
    assert '<option value="SetF" label="SetF — ' in html


def test_robustness_tables_take_any_measure_and_compute_it_under_both_versions(
    admin_client, django_capture_on_commit_callbacks
):
    coll, version, runs = build()
    extended = derive(version, "original + new", {"2_2": {"x4": 3}})
    services.scores_compute_for_version(version=version)
    services.scores_compute_for_version(version=extended)
    params = {"base": version.pk, "extended": extended.pk, "collection": coll.pk, "measures": "nDCG@100, SetF"}
    with django_capture_on_commit_callbacks(execute=False) as queued:
        page = admin_client.get(reverse("evaluation-robustness"), params)
    assert page.status_code == 200 and 'id="measure-computing"' in page.content.decode()
    assert EvaluationJob.objects.filter(kind="measures").count() == 4  # two measures × two versions
    for callback in queued:
        callback()
    table = admin_client.get(reverse("evaluation-robustness-export", args=["table14", "json"]), params).json()
    strong = next(r for r in table["table14"]["rows"] if r["label"] == "strong")
    assert strong["values"]["nDCG@100"]["before"] > 0 and strong["values"]["SetF"]["after"] is not None
    assert strong["values"]["nDCG@100"]["after"] > strong["values"]["nDCG@100"]["before"]  # x4 became relevant
    bad = admin_client.get(reverse("evaluation-robustness"), {**params, "measures": "nDCG@3, ERR@10"})
    assert bad.status_code == 400 and "ERR@10" in bad.content.decode()


def test_significance_and_stability_apis_compute_a_measure_not_stored_yet(
    admin_api, django_capture_on_commit_callbacks
):
    coll, version, runs = build()
    extended = derive(version, "original + new", {"2_2": {"x4": 3}})
    for v in (version, extended):
        services.scores_compute_for_version(version=v)
    baseline = {"version": version.pk, "baseline": runs["weak"].pk, "measures": "nDCG@7, AP"}
    with django_capture_on_commit_callbacks(execute=False) as queued:
        first = admin_api.get(reverse("api-eval-significance-baseline"), baseline)
    assert first.status_code == 202 and first.json()["measures"] == ["nDCG@7"]
    for callback in queued:
        callback()
    done = admin_api.get(reverse("api-eval-significance-baseline"), baseline)
    assert done.status_code == 200 and {r["measure"] for r in done.json()["rows"]} == {"nDCG@7", "AP"}
    stability = {"before": version.pk, "after": extended.pk, "measure": "SetP"}
    with django_capture_on_commit_callbacks(execute=True):
        assert admin_api.get(reverse("api-eval-stability"), stability).status_code == 202
    again = admin_api.get(reverse("api-eval-stability"), stability)
    assert again.status_code == 200 and again.json()["n"] == 2


def test_the_compare_page_tests_runs_on_a_measure_typed_in_after_its_job(
    admin_client, django_capture_on_commit_callbacks
):
    coll, version, runs = build()
    services.scores_compute_for_version(version=version)
    q = {"version": version.pk, "baseline": runs["weak"].pk, "measures": "AP", "more": "Success@3", "test": "t"}
    q |= {"correction": "holm", "alpha": "0.05"}
    with django_capture_on_commit_callbacks(execute=False) as queued:
        page = admin_client.get(reverse("evaluation-compare"), q)
    assert page.status_code == 200 and "Computing <strong>Success@3</strong>" in page.content.decode()
    for callback in queued:
        callback()
    html = admin_client.get(reverse("evaluation-compare"), q).content.decode()
    assert "<td>strong</td><td>Success@3</td>" in html and "<td>strong</td><td>AP</td>" in html
    assert 'value="Success@3"' in html  # now a stored measure of the version, offered as a box to tick


def test_analyses_take_any_ir_measures_string_and_refuse_one_pytrec_eval_cannot_compute(
    django_capture_on_commit_callbacks,
):
    from django.core.exceptions import ValidationError

    from evaluation.analyses.services import pivots as pivot_services
    from tests.evaluation.analyses.helpers import collection_with_qrels, make_run

    coll, version = collection_with_qrels(n_topics=3, turns_per_topic=3)
    runs = [make_run(coll, f"sys{i}", q) for i, q in enumerate([1.5, 1.0, 0.6, 0.2])]
    with django_capture_on_commit_callbacks(execute=True):
        obj = pivot_services.pivot_analysis_create(
            collection=coll, runs=runs, qrels_version=version, metrics=["ndcg@100", "P(rel=2)@5"], n_splits=3, seed=1
        )
    obj.refresh_from_db()
    assert obj.status == "succeeded", obj.error
    assert set(obj.results["consistency_mean"]) == {"nDCG@100", "P(rel=2)@5"}
    with pytest.raises(ValidationError, match="'alpha_nDCG@10'.*pytrec_eval"):
        pivot_services.pivot_analysis_create(
            collection=coll, runs=runs, qrels_version=version, metrics=["alpha_nDCG@10"]
        )
