"""The one poller in a real browser: a job page follows its job's progress in place and shows the end."""

import pytest
from selenium.webdriver.common.by import By

from ecast.core.models import JobStatus
from ecast.models import ImportJob
from judging.models import LlmJudgeJob, LlmLabel
from tests import factories
from tests.conftest import ARTIFACTS, browser_login, page_wait


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_an_import_page_follows_its_job_in_place_then_shows_the_finished_import(browser, live_server, admin_user):
    job = ImportJob.objects.create(
        kind="cast_topics", file_name="topics.json", status=JobStatus.RUNNING, progress_total=5
    )
    browser_login(browser, live_server, "admin1", "pass-admin1")
    browser.get(f"{live_server.url}/imports/{job.pk}/")
    assert browser.find_element(By.ID, "job-progress").text == "0 %"
    loaded = browser.execute_script("return performance.timeOrigin")

    ImportJob.objects.filter(pk=job.pk).update(progress_done=2)
    page_wait(browser).until(lambda d: d.find_element(By.ID, "job-progress").text == "40 %")
    assert browser.execute_script("return performance.timeOrigin") == loaded  # in place, not by a reload
    assert browser.find_element(By.ID, "job-bar").get_attribute("style") == "width: 40%;"

    ImportJob.objects.filter(pk=job.pk).update(status=JobStatus.SUCCEEDED, progress_done=5, counts={"turns": 5})
    try:
        page_wait(browser).until(lambda d: d.execute_script("return performance.timeOrigin") != loaded)
        page_wait(browser).until(lambda d: d.find_element(By.ID, "job-status").text == "Succeeded")
    finally:
        browser.save_screenshot(str(ARTIFACTS / "poll-import-finished.png"))
    assert "turns" in browser.find_element(By.TAG_NAME, "main").text  # the finished page shows its counts


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_an_llm_job_page_fills_its_rate_and_eta_and_shows_the_labels_made_so_far(browser, live_server, admin_user):
    coll = factories.collection(name="Poll")
    turn = factories.turn(factories.conversation(coll), 1, "why is the sky blue?")
    job = LlmJudgeJob.objects.create(
        collection=coll,
        source_version=factories.qrels_version(coll),
        model="smollm",
        model_id="SmolLM2-135M-Instruct",
        status=JobStatus.QUEUED,
        progress_total=8,
    )
    browser_login(browser, live_server, "admin1", "pass-admin1")
    browser.get(f"{live_server.url}/judging/llm/{job.pk}/")
    assert browser.find_element(By.ID, "job-status").text == "Queued"
    assert "Nothing labelled yet." in browser.find_element(By.ID, "first-labels").text
    for passage in ("p1", "p2", "p3"):
        LlmLabel.objects.create(
            job=job, turn=turn, passage_id=passage, grade=2, probabilities=[0, 0, 1, 0, 0], digit_mass=0.9, prompt="q"
        )
    LlmJudgeJob.objects.filter(pk=job.pk).update(status=JobStatus.RUNNING, progress_done=3, seconds=2.0)
    page_wait(browser).until(lambda d: d.find_element(By.ID, "counts").text == "3 / 8 pairs labelled")
    # The labels made so far come in with the counts: the page never says "nothing labelled" beside "3 / 8".
    page_wait(browser).until(lambda d: "p3" in d.find_element(By.ID, "first-labels").text)
    assert "Nothing labelled yet." not in browser.find_element(By.ID, "first-labels").text
    assert browser.find_element(By.ID, "job-status").text == "Running"
    assert browser.find_element(By.ID, "rate").text == "1.5"
    assert browser.find_element(By.ID, "eta").text == "3 s"
