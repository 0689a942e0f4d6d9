"""The experiment page in a real browser while its chunks run: the "orders used" column fills in without a reload."""

import pytest
from selenium.webdriver.common.by import By

from evaluation.models import Permutation, PermutationExperiment
from evaluation.permutations import services as svc
from tests.conftest import ARTIFACTS, browser_login, page_wait

from .helpers import labelled_collection


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_running_experiment_shows_each_conversations_orders_as_its_chunk_samples_them(
    browser, live_server, admin_user, settings, tmp_path
):
    settings.ECAST_CACHE_DIR = tmp_path / "cache"
    coll, version = labelled_collection()
    exp = svc.permutation_experiment_create(
        collection=coll, name="live", qrels_version=version, systems=["current"], k=5, seed=1
    )
    conv = coll.conversations.get(topic_id="1")
    # As mid-run: the experiment still retrieving and conversation 1's chunk not yet run (its orders put aside).
    orders = list(Permutation.objects.filter(experiment=exp, conversation=conv))
    assert orders
    Permutation.objects.filter(pk__in=[p.pk for p in orders]).delete()
    PermutationExperiment.objects.filter(pk=exp.pk).update(status=PermutationExperiment.Status.RUNNING)

    browser_login(browser, live_server, "admin1", "pass-admin1")
    browser.get(f"{live_server.url}/permutations/{exp.pk}/")
    cell = f'[data-sampled="{conv.pk}:"]'
    assert browser.find_element(By.CSS_SELECTOR, cell).text == "sampled when its chunk runs"
    loaded = browser.execute_script("return performance.timeOrigin")

    for p in orders:  # the chunk samples its orders
        p.pk = None
    Permutation.objects.bulk_create(orders)
    try:
        page_wait(browser).until(lambda d: d.find_element(By.CSS_SELECTOR, cell).text == str(len(orders)))
    finally:
        browser.save_screenshot(str(ARTIFACTS / "permutations-running.png"))
    assert browser.execute_script("return performance.timeOrigin") == loaded  # filled in place, not by a reload
    assert browser.find_element(By.ID, "status-text").text == "Retrieving"  # the poll words it as the page does
