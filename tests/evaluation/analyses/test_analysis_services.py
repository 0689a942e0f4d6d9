"""Services of the analyses: create → background compute → stored results; validation; debounced recompute."""

from __future__ import annotations

import io

import pytest
from django.core.exceptions import ValidationError

from ecast.core import jobs
from ecast.models import Turn
from evaluation import events
from evaluation.analyses import demo as analyses_demo
from evaluation.analyses.services import calibration as calibration_services
from evaluation.analyses.services import common as services
from evaluation.analyses.services import metaeval as metaeval_services
from evaluation.analyses.services import pivots as pivot_services
from evaluation.analyses.services import toolkit
from evaluation.analyses.tasks import analysis_compute_task
from evaluation.models import (
    CalibrationReport,
    MetaEvaluation,
    PivotAnalysis,
    Qrel,
    StochasticSystem,
)
from tests import factories
from tests.evaluation.analyses.helpers import collection_with_qrels, make_run, make_test_set

pytestmark = pytest.mark.django_db


@pytest.fixture
def setup():
    coll, version = collection_with_qrels(n_topics=3, turns_per_topic=3)
    runs = [make_run(coll, f"sys{i}", q) for i, q in enumerate([1.5, 1.0, 0.6, 0.2])]
    return coll, version, runs


def test_pivot_analysis_over_topic_splits_stores_results_with_qrels_version(setup, django_capture_on_commit_callbacks):
    coll, version, runs = setup
    with django_capture_on_commit_callbacks(execute=True):
        obj = pivot_services.pivot_analysis_create(
            collection=coll, runs=runs, qrels_version=version, metrics=["AP", "nDCG@3"], n_splits=5, seed=1
        )
    obj.refresh_from_db()
    assert obj.status == "succeeded", obj.error
    assert obj.computed_at is not None
    assert obj.qrels_count == Qrel.objects.filter(version=version).count()
    res = obj.results
    assert res["kind"] == "splits" and res["systems"] == ["sys0", "sys1", "sys2", "sys3"]
    assert len(res["consistency_mean"]["AP"]) == 4 and len(res["correctness_splits"]["AP"]) == 5
    assert len(res["topics"]) == 9
    # the best run (quality 1.5) has the highest full-set AP and is shown first
    assert res["pivot_order"][0] == 0


def test_it_rejects_bad_pivot_parameters_and_writes_nothing(setup):
    coll, version, runs = setup
    with pytest.raises(ValidationError, match=r"at least 4 runs \(got 3\): consistency is the Pearson r .* always ±1"):
        pivot_services.pivot_analysis_create(collection=coll, runs=runs[:3], qrels_version=version)
    with pytest.raises(ValidationError, match="unknown measure 'MAPP'"):
        pivot_services.pivot_analysis_create(collection=coll, runs=runs, qrels_version=version, metrics=["MAPP"])
    with pytest.raises(ValidationError, match="at least 2 paraphrase test sets"):
        pivot_services.pivot_analysis_create(collection=coll, runs=runs, qrels_version=version, ee_kind="test_sets")
    other, _ = collection_with_qrels(n_topics=1, name="Other")
    foreign = make_run(other, "foreign", 1.0)
    with pytest.raises(ValidationError, match="not in collection"):
        pivot_services.pivot_analysis_create(collection=coll, runs=[*runs, foreign], qrels_version=version)
    assert PivotAnalysis.objects.count() == 0


def test_pivots_across_qrels_versions_and_the_cross_ee_tool(setup, django_capture_on_commit_callbacks):
    coll, version, runs = setup
    v2 = factories.qrels_derived(version, "original+new")
    Qrel.objects.filter(version=v2, passage_id="n0").update(grade=2)
    with django_capture_on_commit_callbacks(execute=True):
        obj = pivot_services.pivot_analysis_create(
            collection=coll, runs=runs, qrels_version=None, ee_kind="qrels_versions", qrels_versions=[version, v2],
            metrics=["AP"], n_splits=5,
        )  # fmt: skip
    obj.refresh_from_db()
    assert obj.status == "succeeded", obj.error
    assert obj.results["environments"] == ["original", "original+new"]
    out = pivot_services.pivot_cross_ee(
        analysis=obj, metric="AP", pivot="sys3", choices={"sys0": "original", "sys1": "original+new"}
    )
    deltas = [r["delta"] for r in out["ranking"]]
    assert deltas == sorted(deltas, reverse=True) and {r["system"] for r in out["ranking"]} == {"sys0", "sys1"}
    means = obj.results["ee_means"]["AP"]
    assert out["ranking"][0]["delta"] == pytest.approx(
        max(
            means["original"]["sys0"] - means["original"]["sys3"],
            means["original+new"]["sys1"] - means["original+new"]["sys3"],
        )
    )
    with pytest.raises(ValidationError, match="not part of this analysis"):
        pivot_services.pivot_cross_ee(analysis=obj, metric="P@10", pivot="sys3", choices={})


def test_pivots_across_paraphrase_test_sets_group_runs_into_systems(django_capture_on_commit_callbacks):
    coll, version = collection_with_qrels(n_topics=2, turns_per_topic=2)
    runs = []
    for k, ts_name in enumerate(["Rm1", "Rm2"], start=1):
        ts = make_test_set(coll, ts_name, k)
        for name, q in [("bm25", 0.4), ("splade", 1.2), ("dense", 0.8)]:
            runs.append(make_run(coll, f"{name}_{ts_name}", q, seed=k, test_set=ts))
    with django_capture_on_commit_callbacks(execute=True):
        obj = pivot_services.pivot_analysis_create(
            collection=coll, runs=runs, qrels_version=version, ee_kind="test_sets", metrics=["AP"], n_splits=4
        )
    obj.refresh_from_db()
    assert obj.status == "succeeded", obj.error
    assert obj.results["systems"] == ["bm25", "dense", "splade"]
    assert obj.results["environments"] == ["Rm1", "Rm2"]


def test_new_judgments_recompute_the_analysis_debounced(setup, django_capture_on_commit_callbacks, settings):
    coll, version, runs = setup
    with django_capture_on_commit_callbacks(execute=True):
        obj = pivot_services.pivot_analysis_create(
            collection=coll, runs=runs, qrels_version=version, metrics=["AP"], n_splits=3
        )
    obj.refresh_from_db()
    first = obj.computed_at
    turn = Turn.objects.filter(collection=coll).first()
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        Qrel.objects.create(version=version, turn=turn, passage_id="new-doc", grade=3, source="assessed")
        events.qrels_changed(version_id=version.id, turn_ids=[turn.id])
    assert callbacks  # the signal fired on commit and queued the recompute
    obj.refresh_from_db()
    assert obj.status == "succeeded"
    assert obj.computed_at > first
    assert obj.qrels_count == Qrel.objects.filter(version=version).count()


def test_a_burst_of_judgments_recomputes_once_and_a_later_change_again(
    setup, django_capture_on_commit_callbacks, monkeypatch, settings
):
    coll, version, runs = setup
    with django_capture_on_commit_callbacks(execute=True):
        obj = pivot_services.pivot_analysis_create(
            collection=coll, runs=runs, qrels_version=version, metrics=["AP"], n_splits=3
        )
    queued = []
    monkeypatch.setattr(jobs, "enqueue", lambda name, *args, countdown=None: queued.append((name, args, countdown)))
    for _ in range(3):
        with django_capture_on_commit_callbacks(execute=True):
            services.analyses_schedule_for_version(version_id=version.id)
    assert queued == [(toolkit.COMPUTE_TASK, ("pivots", obj.id), settings.ECAST_ANALYSIS_DEBOUNCE_SECONDS)]
    obj.refresh_from_db()
    assert obj.status == "queued"
    first = obj.computed_at
    analysis_compute_task("pivots", obj.id)  # the worker runs the one queued computation
    obj.refresh_from_db()
    assert obj.status == "succeeded" and obj.computed_at > first
    with django_capture_on_commit_callbacks(execute=True):
        services.analyses_schedule_for_version(version_id=version.id)
    assert len(queued) == 2
    analysis_compute_task("pivots", obj.id)  # and releases the debounce for the next test


def test_other_versions_changes_leave_the_analysis_alone(setup):
    coll, version, runs = setup
    other = factories.qrels_version(coll, "other")
    PivotAnalysis.objects.create(collection=coll, name="x", qrels_version=version, parameters={"metrics": ["AP"]})
    assert services.analyses_schedule_for_version(version_id=other.id) == []


UPLOAD = (
    "run,iteration,topic,c1,c2,p\n"
    + "".join(f"A,1,{t},.6,.1,.9\nB,1,{t},.5,.2,.1\nC,1,{t},.4,.3,.05\n" for t in range(6))
    + "A,1,all,0,0,0\n"
)


def test_meta_evaluation_of_an_uploaded_table(django_capture_on_commit_callbacks):
    coll, _ = collection_with_qrels(n_topics=1)
    with django_capture_on_commit_callbacks(execute=True):
        obj = metaeval_services.meta_evaluation_create(
            collection=coll,
            complex_metrics=["c1", "c2"],
            dimensions={"Rel": ["p"]},
            upload=io.BytesIO(UPLOAD.encode()),
            upload_name="dd.csv",
        )
    obj.refresh_from_db()
    assert obj.status == "succeeded", obj.error
    setting = obj.results["settings"][0]
    assert setting["pairs"][0]["correct1"] == 18  # c1 agrees with p on every pair × topic, c2 never
    assert setting["intuitiveness_rank"] == {"c1": 1, "c2": 2}
    assert obj.results["n_topics"] == 6
    assert obj.qrels_version is None and obj.auto_recompute is False


def test_it_rejects_a_bad_upload_naming_the_line_and_writes_nothing():
    coll, _ = collection_with_qrels(n_topics=1)
    bad = "run,topic,c1,c2,p\nA,1,.5,.2,.1\nB,1,.4,oops,.2\n"
    with pytest.raises(ValidationError, match="bad.csv: line 3: column 'c2' is not numeric"):
        metaeval_services.meta_evaluation_create(
            collection=coll, complex_metrics=["c1", "c2"], dimensions={"Rel": ["p"]},
            upload=io.BytesIO(bad.encode()), upload_name="bad.csv",
        )  # fmt: skip
    with pytest.raises(ValidationError, match="unknown column"):
        metaeval_services.meta_evaluation_create(
            collection=coll, complex_metrics=["c1", "c2"], dimensions={"Rel": ["prec"]},
            upload=io.BytesIO(UPLOAD.encode()), upload_name="dd.csv",
        )  # fmt: skip
    assert MetaEvaluation.objects.count() == 0


def test_meta_evaluation_of_app_scores_reports_ranking_stability_across_test_sets(django_capture_on_commit_callbacks):
    coll, version = collection_with_qrels(n_topics=2, turns_per_topic=3)
    runs = []
    for k, ts_name in enumerate(["Rm1", "Rm2", "Rm3"], start=1):
        ts = make_test_set(coll, ts_name, k)
        for name, q in [("bm25", 0.2), ("splade", 1.5), ("dense", 0.9)]:
            runs.append(make_run(coll, f"{name}-{ts_name}", q, seed=k, test_set=ts))
    with django_capture_on_commit_callbacks(execute=True):
        obj = metaeval_services.meta_evaluation_create(
            collection=coll, complex_metrics=["nDCG@3", "RR"], dimensions={"Rel": ["precision"], "Eff": ["tot-time"]},
            runs=runs, qrels_version=version, depth=3,
        )  # fmt: skip
    obj.refresh_from_db()
    assert obj.status == "succeeded", obj.error
    assert [s["dimension"] for s in obj.results["settings"]] == ["Rel", "Eff"]
    stability = {r["measure"]: r for r in obj.results["stability"]}
    assert set(stability) == {"nDCG@3", "RR", "precision", "tot-time"}
    assert len(stability["nDCG@3"]["pairs"]) == 3  # Rm1–Rm2, Rm1–Rm3, Rm2–Rm3
    assert obj.results["notes"]["passages_without_length"] > 0  # no passage texts in this collection


def test_calibration_report_of_probability_scores(django_capture_on_commit_callbacks):
    coll, version = collection_with_qrels(n_topics=2)
    run = make_run(coll, "probs", 1.0, probs=True)
    with django_capture_on_commit_callbacks(execute=True):
        obj = calibration_services.calibration_report_create(run=run, qrels_version=version)
    obj.refresh_from_db()
    assert obj.status == "succeeded", obj.error
    all_cands = obj.results["conditions"][0]
    assert all_cands["n"] == 6 * 6 and 0 <= all_cands["ece"] <= 1
    assert obj.results["normalisation"] == "none"


def test_calibration_refuses_raw_scores_without_a_normalisation():
    coll, version = collection_with_qrels(n_topics=1)
    run = make_run(coll, "bm25", 1.0)  # scores 10, 9, ...
    with pytest.raises(ValidationError, match="not a probability; choose min-max or softmax"):
        calibration_services.calibration_report_create(run=run, qrels_version=version)
    assert CalibrationReport.objects.count() == 0
    obj = calibration_services.calibration_report_create(run=run, qrels_version=version, normalisation="minmax")
    assert obj.parameters["normalisation"] == "minmax"


def test_stochastic_system_gain_curve(django_capture_on_commit_callbacks):
    coll, version = collection_with_qrels(n_topics=2)
    samples = [make_run(coll, f"dropout-{k}", 0.8, seed=k, probs=True) for k in range(4)]
    with django_capture_on_commit_callbacks(execute=True):
        obj = calibration_services.stochastic_system_create(
            collection=coll, runs=samples, qrels_version=version, b_values=[0.5, 1.0], measure="nDCG@3"
        )
    obj.refresh_from_db()
    assert obj.status == "succeeded", obj.error
    assert [c["b"] for c in obj.results["curve"]] == [0.0, 0.5, 1.0]
    assert obj.results["curve"][0]["gain"] == 0.0
    assert len(obj.results["members"]) == 4
    assert obj.results["mean_variance"] > 0
    with pytest.raises(ValidationError, match="at least 2 runs"):
        calibration_services.stochastic_system_create(collection=coll, runs=samples[:1], qrels_version=version)
    assert StochasticSystem.objects.count() == 1


def _demo_collection_with_pool():
    """The demo collection with four DECAF-like runs and "original + new", the version the demo pool feeds."""
    from judging.models import Pool

    coll, version = collection_with_qrels(n_topics=2, name=analyses_demo.DEMO_COLLECTION)
    for i, q in enumerate([1.2, 0.8, 0.3, 0.1]):
        make_run(coll, f"decaf-exp{i + 1}", q, probs=False)
    fed = factories.qrels_derived(version, "original + new")
    Pool.objects.create(collection=coll, name="Demo pool", qrels_version=version, target_version=fed)
    return coll, version, fed


def test_the_demo_loader_builds_and_computes_analyses_idempotently(shared_data):
    coll, version, fed = _demo_collection_with_pool()
    out = io.StringIO()
    analyses_demo.load(stdout=out)
    assert PivotAnalysis.objects.get(name=analyses_demo.PIVOT_NAME).status == "succeeded", out.getvalue()
    assert CalibrationReport.objects.get(name=analyses_demo.CALIBRATION_NAME).status == "succeeded"
    assert StochasticSystem.objects.get(name=analyses_demo.STOCHASTIC_NAME).status == "succeeded"
    assert MetaEvaluation.objects.get(name=analyses_demo.METAEVAL_NAME).status == "succeeded", out.getvalue()
    analyses_demo.load(stdout=out)
    assert PivotAnalysis.objects.count() == 1 and MetaEvaluation.objects.count() == 1


def test_the_demo_analyses_use_the_version_the_demo_pool_feeds_so_they_follow_new_judgments(shared_data):
    coll, version, fed = _demo_collection_with_pool()
    analyses_demo.load(stdout=io.StringIO())
    for model in (PivotAnalysis, CalibrationReport, StochasticSystem):
        obj = model.objects.get(collection=coll)
        assert obj.qrels_version == fed and obj.auto_recompute, model.__name__
    from evaluation.analyses.selectors import analyses_for_version

    assert sorted(kind for kind, _ in analyses_for_version(version_id=fed.pk)) == [
        "calibration",
        "pivots",
        "stochastic",
    ]


def test_the_trec_dd_demo_is_filed_under_its_own_collection(shared_data):
    coll, version, fed = _demo_collection_with_pool()
    analyses_demo.load(stdout=io.StringIO())
    dd = MetaEvaluation.objects.get(name=analyses_demo.METAEVAL_NAME)
    assert dd.collection.name == analyses_demo.DD_COLLECTION != coll.name
    assert dd.collection.year == 2016 and "TREC Dynamic Domain 2016" in dd.collection.corpus_note
    assert not MetaEvaluation.objects.filter(collection=coll).exists()


def test_reloading_an_older_demo_moves_its_analyses_where_they_belong(shared_data):
    coll, version, fed = _demo_collection_with_pool()
    stale = calibration_services.stochastic_system_create(
        collection=coll,
        runs=list(coll.runs.order_by("name")[:2]),
        qrels_version=version,
        name=analyses_demo.STOCHASTIC_NAME,
    )
    services.analysis_compute(kind="stochastic", analysis_id=stale.pk)
    dd = metaeval_services.meta_evaluation_create(
        collection=coll,
        complex_metrics=["c1", "c2"],
        dimensions={"Rel": ["p"]},
        upload=io.BytesIO(b"run,topic,c1,c2,p\nA,1,.6,.1,.9\nB,1,.5,.2,.1\n"),
        upload_name="dd.csv",
        name=analyses_demo.METAEVAL_NAME,
    )
    out = io.StringIO()
    analyses_demo.load(stdout=out)
    stale.refresh_from_db()
    dd.refresh_from_db()
    assert stale.qrels_version == fed and stale.status == "succeeded"
    assert f"{analyses_demo.STOCHASTIC_NAME}: moved to qrels version 'original + new'" in out.getvalue()
    assert dd.collection.name == analyses_demo.DD_COLLECTION
    assert StochasticSystem.objects.count() == 1 and MetaEvaluation.objects.count() == 1


def test_uploaded_document_lengths_feed_tot_time(django_capture_on_commit_callbacks):
    coll, version = collection_with_qrels(n_topics=1, turns_per_topic=2)
    runs = [make_run(coll, f"s{i}", q) for i, q in enumerate([1.0, 0.2])]
    with pytest.raises(ValidationError, match="len.tsv: line 2: expected 'passage_id<TAB>length in words'"):
        metaeval_services.meta_evaluation_create(
            collection=coll, complex_metrics=["nDCG@3", "RR"], dimensions={"Eff": ["tot-time"]}, runs=runs,
            qrels_version=version, lengths_upload=io.BytesIO(b"r0\t10\nr1 ten\n"), lengths_name="len.tsv",
        )  # fmt: skip
    lengths = "".join(f"{d}\t{10 * (k + 1)}\n" for k, d in enumerate(["r0", "r1", "r2", "n0", "n1", "n2"]))
    with django_capture_on_commit_callbacks(execute=True):
        obj = metaeval_services.meta_evaluation_create(
            collection=coll, complex_metrics=["nDCG@3", "RR"], dimensions={"Eff": ["tot-time"]}, runs=runs,
            qrels_version=version, depth=3, lengths_upload=io.BytesIO(lengths.encode()), lengths_name="len.tsv",
        )  # fmt: skip
    obj.refresh_from_db()
    assert obj.status == "succeeded", obj.error
    assert obj.results["notes"]["passages_without_length"] == 0


def test_a_failing_computation_is_recorded_not_left_running(setup, django_capture_on_commit_callbacks):
    coll, version, runs = setup
    with django_capture_on_commit_callbacks(execute=True):
        obj = pivot_services.pivot_analysis_create(collection=coll, runs=runs, qrels_version=version, metrics=["AP"])
    Qrel.objects.filter(version=version).delete()  # no judged turns left: nothing to split
    services.analysis_compute(kind="pivots", analysis_id=obj.id)
    obj.refresh_from_db()
    assert obj.status == "failed"
    assert "at least 4 topics" in obj.error
    assert obj.results  # the previous results stay readable
