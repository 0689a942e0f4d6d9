"""Budget simulation of adjudication orders: equal to a plain loop on CAsT 2019; job, report, CSV, permissions."""

from __future__ import annotations

import csv
import io
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from ecast.core import jobs
from ecast.imports.formats.qrels import read_qrels
from ecast.imports.formats.runs import read_run
from evaluation.analyses import budget
from evaluation.analyses.services import budget as budget_services
from evaluation.models import BudgetSimulation
from tests.evaluation.analyses.budget_helpers import TREC_EVAL, plain_loop
from tests.evaluation.analyses.helpers import collection_with_qrels, make_run


@pytest.mark.slow
def test_the_simulation_equals_a_plain_loop_on_cast_2019(shared_data):
    runs = {f"exp{i}": read_run(shared_data / f"runs/cast2019_decaf/exp{i}.run.gz") for i in range(1, 17)}
    qrels = read_qrels(shared_data / "cast/2019/2019qrels.txt")
    strategies = ("depth_first", "mtf", "mm_ns")
    fractions = (0.1, 0.25)
    got = budget.simulate(
        runs=runs,
        qrels=qrels,
        depth=10,
        threshold=1,
        strategies=strategies,
        measures=list(TREC_EVAL),
        fractions=fractions,
    )
    want = plain_loop(runs, qrels, depth=10, threshold=1, strategies=strategies, fractions=fractions)
    assert got["topics"] == 173 and got["pool_size"] > 0
    for name in strategies:
        mine = got["strategies"][name]
        assert [(p["budget"], p["judgments"], p["found"]) for p in mine["curve"]] == want[name]["curve"]
        assert mine["cost"] == want[name]["cost"]
        for row, ref in zip(mine["tau"], want[name]["tau"], strict=True):
            for m in TREC_EVAL:
                assert row[m] == pytest.approx(ref[m], abs=1e-9), (name, row["fraction"], m)
    # The adaptive orders find half the relevant passages with fewer judgments than depth-first.
    assert got["strategies"]["mtf"]["cost"]["0.5"] < got["strategies"]["depth_first"]["cost"]["0.5"]
    assert got["strategies"]["mm_ns"]["cost"]["0.5"] < got["strategies"]["depth_first"]["cost"]["0.5"]


def test_costs_count_single_judgments_spread_over_topics():
    # topic a: [x(rel), y], topic b: [z, w(rel)]; sequence a1 b1 a2 b2 → x✓ z✗ y✗ w✓
    orders = {"a": ["x", "y"], "b": ["z", "w"]}
    rel = {"a": {"x"}, "b": {"w"}}
    assert budget.budget_costs(orders, rel, {"half": 1, "all": 2, "more": 3}) == {"half": 1, "all": 4, "more": None}


def test_the_simulation_refuses_a_single_run_and_unranked_topics():
    with pytest.raises(ValueError, match="two runs"):
        budget.simulate(runs={"a": {"t": {"d": 1.0}}}, qrels={"t": {"d": 1}}, depth=5, threshold=1)
    with pytest.raises(ValueError, match="no judged topic"):
        budget.simulate(runs={"a": {"t": {"d": 1.0}}, "b": {}}, qrels={"u": {"d": 1}}, depth=5, threshold=1)


@pytest.fixture
def done_budget(db, django_capture_on_commit_callbacks):
    coll, version = collection_with_qrels(n_topics=2, turns_per_topic=3)
    runs = [make_run(coll, f"sys{i}", q) for i, q in enumerate([1.5, 1.0, 0.5])]
    with django_capture_on_commit_callbacks(execute=True):
        obj = budget_services.budget_simulation_create(
            collection=coll, runs=runs, qrels_version=version, depth=6, fractions=[0.5, 1.0]
        )
    obj.refresh_from_db()
    assert obj.status == "succeeded", obj.error
    return obj


@pytest.mark.django_db
def test_the_job_stores_curves_and_the_report_shows_them_with_csv(done_budget, admin_client):
    res = done_budget.results
    assert set(res["strategies"]) == set(budget.DEFAULT_STRATEGIES)
    assert done_budget.progress_done == done_budget.progress_total == 4 * (6 + 2)
    # Every run ranks the same 6 documents per turn (3 relevant): at depth 6 the pool holds them all.
    assert res["pool_size"] == 36 and res["relevant_in_pool"] == 18
    for s in res["strategies"].values():
        full = next(r for r in s["tau"] if r["fraction"] == 1.0)
        assert full["AP"] == pytest.approx(1.0)  # everything judged: the full-qrels ranking
    kw = {"kind": "budget", "pk": done_budget.pk}
    page = admin_client.get(reverse("analyses-detail", kwargs=kw)).content.decode()
    assert 'id="budget-summary"' in page and "Move-to-front" in page and "<svg" in page
    assert '<strong id="pool-relevant">18</strong>' in page and 'class="muted small cost-spread"' in page
    body = admin_client.get(reverse("analyses-download", kwargs={**kw, "fmt": "csv"})).content.decode()
    rows = list(csv.reader(io.StringIO(body)))
    assert rows[0] == ["strategy", "budget_per_topic", "judgments", "relevant_found", "relevant_in_pool"]
    assert rows[-1][3] == "18"
    tau = list(
        csv.reader(
            io.StringIO(
                admin_client.get(
                    reverse("analyses-download", kwargs={**kw, "fmt": "csv"}) + "?table=tau"
                ).content.decode()
            )
        )
    )
    assert tau[0][:3] == ["strategy", "fraction_of_pool", "judgments"]


@pytest.mark.django_db
def test_the_budget_page_and_api_are_for_admins_only(done_budget, rater_client, assessor_api, anon_api, admin_api):
    kw = {"kind": "budget", "pk": done_budget.pk}
    assert Client().get(reverse("analyses-budget")).status_code == 302
    assert rater_client.get(reverse("analyses-budget")).status_code == 403
    assert rater_client.get(reverse("analyses-detail", kwargs=kw)).status_code == 403
    body = {"collection": done_budget.collection_id, "runs": [r.pk for r in done_budget.runs.all()]}
    assert assessor_api.post(reverse("api-analyses-budget-create"), body, format="json").status_code == 403
    assert anon_api.post(reverse("api-analyses-budget-create"), body, format="json").status_code == 401
    bad = admin_api.post(
        reverse("api-analyses-budget-create"),
        {**body, "qrels_version": done_budget.qrels_version_id, "strategies": ["random"]},
        format="json",
    )
    assert bad.status_code == 400 and "strategies" in bad.json()
    version = done_budget.qrels_version_id
    no_bandit = admin_api.post(
        reverse("api-analyses-budget-create"),
        {**body, "qrels_version": version, "strategies": ["mtf"], "prior_version": version},
        format="json",
    )
    assert no_bandit.status_code == 400 and "prior_version" in no_bandit.json()


@pytest.mark.django_db
def test_an_admin_starts_a_simulation_from_the_page(admin_client, django_capture_on_commit_callbacks):
    coll, version = collection_with_qrels(n_topics=1, turns_per_topic=2)
    runs = [make_run(coll, f"sys{i}", q) for i, q in enumerate([1.0, 0.3])]
    page = admin_client.get(reverse("analyses-budget") + f"?collection={coll.pk}").content.decode()
    assert 'id="budget-form"' in page and "None yet." in page
    with django_capture_on_commit_callbacks(execute=True):
        resp = admin_client.post(
            reverse("analyses-budget"),
            {
                "collection": coll.pk,
                "runs": [r.pk for r in runs],
                "qrels_version": version.pk,
                "depth": 3,
                "strategies": ["mtf", "mm_ns"],
                "measures": "AP, Bpref",
                "fractions": "0.5, 1",
            },
        )
    assert resp.status_code == 302, resp.content.decode()[:2000]
    report = admin_client.get(resp["Location"]).content.decode()
    assert "MM-NS bandit" in report and "Depth-first" not in report


@pytest.mark.django_db
@pytest.mark.usefixtures("fresh_cache")
def test_a_simulation_whose_worker_died_is_queued_again_by_the_sweeper(settings, monkeypatch):
    import evaluation.analyses.tasks  # noqa: F401 - registers the analysis job kinds with the sweeper
    from evaluation.analyses.services import common

    coll, version = collection_with_qrels(n_topics=1)
    obj = BudgetSimulation.objects.create(collection=coll, name="b", qrels_version=version, status="running")
    queued = []
    monkeypatch.setattr(common, "enqueue", lambda task, *args: queued.append((task, *args)))
    jobs.heartbeat_beat("analysis-budget", obj.pk)
    later = timezone.now() + timedelta(seconds=settings.ECAST_JOB_STALE_SECONDS + 60)
    actions = jobs.sweep_once(now=later)
    assert [(a["kind"], a["job"]) for a in actions] == [("analysis-budget", obj.pk)]
    assert queued == [("evaluation.analysis_compute", "budget", obj.pk)]


def test_a_prior_seeds_the_bandits_in_the_simulation():
    runs = {
        "A": {"t": {"a1": 3.0, "a2": 2.0, "a3": 1.0}},
        "B": {"t": {"b1": 3.0, "b2": 2.0, "b3": 1.0}},
        "C": {"t": {"c1": 3.0, "c2": 2.0}},
    }
    qrels = {"t": {"a1": 1, "b1": 1, "b2": 1, "b3": 1}}
    common = {"runs": runs, "qrels": qrels, "depth": 3, "threshold": 1, "measures": ["AP"], "fractions": [1.0]}
    plain = budget.simulate(strategies=["mm_ns", "mtf"], **common)
    # Earlier labels (wrongly) called C's documents relevant: C's arm starts at (1 + 1.9)/(2 + 1.9) and plays first,
    # c1 and c2 are not relevant, so the first two judgments find nothing; unseeded, A plays first and a1 is relevant.
    seeded = budget.simulate(strategies=["mm_ns", "mtf"], prior={"t": {"c1": 2, "c2": 2}}, **common)
    found = lambda res, s: [p["found"] for p in res["strategies"][s]["curve"]]  # noqa: E731
    assert found(plain, "mm_ns")[:3] == [0, 1, 1]
    assert found(seeded, "mm_ns")[:3] == [0, 0, 0]
    assert found(seeded, "mtf") == found(plain, "mtf")  # move-to-front takes no prior
    assert seeded["prior"] is True and plain["prior"] is False


def test_the_budget_is_spread_over_turns_in_natural_order():
    # The first round judges 68_2 before 68_10 (string order would take 68_10 first and spend 2 judgments).
    orders = {"68_10": ["x"], "68_2": ["y"]}
    assert budget.budget_costs(orders, {"68_10": set(), "68_2": {"y"}}, {"one": 1}) == {"one": 1}


def test_the_tie_dependent_costs_come_with_their_spread_over_seeded_run_orders():
    runs = {f"exp{i}": {"t": {f"d{i}": 2.0, f"e{i}": 1.0}} for i in (1, 2, 10)}
    qrels = {"t": {"e10": 1, "d2": 1}}
    common = {"runs": runs, "qrels": qrels, "depth": 2, "threshold": 1, "measures": ["AP"], "fractions": [1.0]}
    res = budget.simulate(strategies=["depth_first", "mtf", "mm_ns"], **common)
    assert res["runs"] == ["exp1", "exp2", "exp10"] and res["order_seeds"] == list(budget.ORDER_SEEDS)
    assert res["strategies"]["depth_first"]["cost_spread"] == {}
    spread = res["strategies"]["mtf"]["cost_spread"]["0.8"]
    name_order = res["strategies"]["mtf"]["cost"]["0.8"]
    # The bracket spans the seeded shuffles and the name order, so the cost shown always lies inside it.
    assert len(spread["values"]) == len(budget.ORDER_SEEDS)
    assert spread["min"] == min([*spread["values"], name_order]) and spread["max"] == max(
        [*spread["values"], name_order]
    )
    assert spread["min"] <= name_order <= spread["max"] and spread["min"] < spread["max"]  # the tie order matters
    assert budget.simulate(strategies=["mtf"], **common)["strategies"]["mtf"]["cost_spread"]["0.8"] == spread
    assert budget.simulate(strategies=["mtf"], order_seeds=(), **common)["strategies"]["mtf"]["cost_spread"] == {}
