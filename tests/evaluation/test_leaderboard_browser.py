"""In headless Chromium the leaderboard picks up a new judgment's score without a page reload."""

from __future__ import annotations

import pytest
from django.db import transaction
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from evaluation import events, services
from evaluation.models import Qrel
from tests import factories
from tests.conftest import ARTIFACTS, browser_login, page_wait
from tests.evaluation.helpers import build, derive


def _cell(browser, run_id: int) -> str:
    row = browser.find_element(By.CSS_SELECTOR, f"#lb-table tr[data-run='{run_id}']")
    return row.find_elements(By.TAG_NAME, "td")[4].text  # first measure column = nDCG@3


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_leaderboard_updates_live_when_a_judgment_arrives(browser, live_server, admin_user):
    coll, version, runs = build()
    services.scores_compute_for_version(version=version)
    browser_login(browser, live_server, "admin1", "pass-admin1")
    browser.get(f"{live_server.url}/evaluation/?version={version.pk}")
    weak = runs["weak"].pk
    before = _cell(browser, weak)
    browser.execute_script("window.__noReload = 'still here';")
    # The page listens to the server's score events (the poll is only the fallback).
    page_wait(browser).until(lambda d: "as soon as they are computed" in d.find_element(By.ID, "lb-live").text)

    # The weak run's rank-1 document for 1_1 ("x1") becomes highly relevant.
    turn = coll.turns.get(turn_id="1_1")
    with transaction.atomic():
        Qrel.objects.create(version=version, turn=turn, passage_id="x1", grade=4, source="assessed")
        events.qrels_changed(version_id=version.pk, turn_ids=[turn.pk])

    page_wait(browser).until(lambda d: _cell(d, weak) != before)
    assert browser.execute_script("return window.__noReload;") == "still here"
    assert float(_cell(browser, weak)) > float(before)
    assert "<svg" in browser.find_element(By.ID, "lb-plot").get_attribute("innerHTML")
    browser.save_screenshot(str(ARTIFACTS / "evaluation-leaderboard.png"))


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_choosing_a_qrels_version_shows_its_leaderboard_without_pressing_show(browser, live_server, admin_user):
    coll, version, runs = build()
    # In the derived version the weak run's rank-1 document for 1_1 is highly relevant: its nDCG@3 differs.
    derived = derive(version, "original + new", {"1_1": {"x1": 4}})
    services.scores_compute_for_version(version=version)
    services.scores_compute_for_version(version=derived)
    browser_login(browser, live_server, "admin1", "pass-admin1")
    browser.get(f"{live_server.url}/evaluation/?version={version.pk}")
    weak = runs["weak"].pk
    before = _cell(browser, weak)
    assert "Qrels version original ·" in browser.find_element(By.ID, "leaderboard").text

    Select(browser.find_element(By.NAME, "version")).select_by_visible_text("original + new")
    page_wait(browser).until(lambda d: "Qrels version original + new" in d.find_element(By.ID, "leaderboard").text)
    assert float(_cell(browser, weak)) > float(before)
    assert Select(browser.find_element(By.NAME, "version")).first_selected_option.text == "original + new"


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_run_report_refreshes_itself_when_judgments_arrive(browser, live_server, admin_user):
    coll, version, runs = build()
    services.scores_compute_for_version(version=version)
    browser_login(browser, live_server, "admin1", "pass-admin1")
    browser.get(f"{live_server.url}/evaluation/runs/{runs['weak'].pk}/?version={version.pk}")
    before = browser.find_element(By.ID, "run-mean").text
    browser.execute_script("window.__noReload = 'still here';")
    turn = coll.turns.get(turn_id="1_1")
    with transaction.atomic():
        Qrel.objects.create(version=version, turn=turn, passage_id="x1", grade=4, source="assessed")
        events.qrels_changed(version_id=version.pk, turn_ids=[turn.pk])
    page_wait(browser).until(lambda d: d.find_element(By.ID, "run-mean").text != before)
    assert browser.execute_script("return window.__noReload;") == "still here"
    assert float(browser.find_element(By.ID, "run-mean").text) > float(before)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_one_click_on_the_robustness_report_pools_the_unjudged_passages(browser, live_server, admin_user):
    from judging.models import Pool, PoolPair
    from tests.evaluation.helpers import add_run, derive

    coll, version, runs = build()
    ts = factories.testset(coll, "R^m_1", "manual")
    add_run(coll, "paraphrase-m1", {"1_1": ["x1", "z9", "d1"], "2_2": ["x4"]}, test_set=ts)
    child = derive(version, "original + new", {"1_1": {"z9": 4}})
    services.scores_compute_for_version(version=version)
    services.scores_compute_for_version(version=child)
    browser_login(browser, live_server, "admin1", "pass-admin1")
    browser.get(
        f"{live_server.url}/evaluation/robustness/?collection={coll.pk}&base={version.pk}"
        f"&extended={child.pk}&baseline_manual={runs['strong'].pk}"
    )
    assert "Table 13" in browser.find_element(By.ID, "table13").text
    browser.save_screenshot(str(ARTIFACTS / "evaluation-robustness.png"))
    browser.find_element(By.CSS_SELECTOR, "#pool-form button").click()
    WebDriverWait(browser, 10).until(lambda d: Pool.objects.exists())
    pool = Pool.objects.get()
    assert pool.qrels_version == version and pool.depth == 3
    assert set(PoolPair.objects.filter(pool=pool).values_list("passage_id", flat=True)) >= {"x1", "z9", "x4"}


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_job_started_from_the_leaderboard_shows_its_progress_and_end_without_a_reload(
    browser, live_server, admin_user
):
    from django.utils import timezone

    from evaluation.models import EvaluationJob

    coll, version, runs = build()
    services.scores_compute_for_version(version=version)
    job = EvaluationJob.objects.create(
        collection=coll, kind="full", status="running", progress_done=0, progress_total=4
    )
    browser_login(browser, live_server, "admin1", "pass-admin1")
    browser.get(f"{live_server.url}/evaluation/?version={version.pk}")
    browser.execute_script("window.__noReload = 'still here';")

    def row(d):
        return d.find_element(By.CSS_SELECTOR, f"#lb-jobs tr[data-job='{job.pk}']").text

    assert "running" in row(browser) and "0/4" in row(browser)
    EvaluationJob.objects.filter(pk=job.pk).update(progress_done=2)
    page_wait(browser).until(lambda d: "2/4" in row(d))
    EvaluationJob.objects.filter(pk=job.pk).update(status="succeeded", progress_done=4, finished_at=timezone.now())
    page_wait(browser).until(lambda d: "succeeded" in row(d) and "4/4" in row(d))
    assert "running" not in row(browser)
    assert browser.execute_script("return window.__noReload;") == "still here"


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_measure_typed_in_says_computing_then_shows_its_numbers(browser, live_server, admin_user, monkeypatch):
    coll, version, runs = build()
    services.scores_compute_for_version(version=version)
    held: list[int] = []  # the job is queued, not run, until the page has said it is computing
    monkeypatch.setattr("evaluation.services.measures.enqueue_job", lambda job: held.append(job.pk))
    browser_login(browser, live_server, "admin1", "pass-admin1")
    browser.get(f"{live_server.url}/evaluation/?version={version.pk}")
    field = browser.find_element(By.NAME, "measure")
    field.clear()
    field.send_keys("nDCG@100")
    browser.find_element(By.CSS_SELECTOR, "#version-picker button").click()
    page_wait(browser).until(lambda d: "Computing nDCG@100" in d.find_element(By.ID, "measure-computing").text)
    strong = runs["strong"].pk
    assert _cell(browser, strong) == "computing…"
    assert held
    services.evaluation_job_execute(job_id=held[0])
    # The page follows the job (static/ecast/poll.js): the new scores arrive live, and the notice goes once it ends.
    page_wait(browser).until(lambda d: not d.find_elements(By.ID, "measure-computing"))
    page_wait(browser).until(lambda d: _cell(d, strong).replace(".", "", 1).isdigit())
    assert float(_cell(browser, strong)) > 0
    assert browser.find_element(By.CSS_SELECTOR, "#lb-table thead th:nth-child(5)").text == "nDCG@100"
