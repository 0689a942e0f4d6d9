"""The keyboard-first labelling page in a real browser: keys save labels and redraw the dependency forest."""

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from ecast.models import Turn
from evaluation.permutations import services as svc
from tests.conftest import ARTIFACTS, browser_login

from .helpers import labelled_collection


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_keys_label_turns_save_them_and_draw_the_forest(browser, live_server, admin_user):
    coll, _ = labelled_collection(classes=False)
    conv = coll.conversations.get(topic_id="1")
    browser_login(browser, live_server, "admin1", "pass-admin1")
    browser.get(f"{live_server.url}/permutations/labels/conversation/{conv.pk}/")
    body = browser.find_element(By.TAG_NAME, "body")
    for key in "fspp":  # turns 2..5: FT, SE, PT, PT (focus advances after each label)
        body.send_keys(key)
    try:
        WebDriverWait(browser, 10).until(lambda d: d.find_element(By.ID, "save-summary").text == "All labels saved.")
    finally:
        browser.save_screenshot(str(ARTIFACTS / "permutations-labeling.png"))
    classes = list(Turn.objects.filter(conversation=conv).order_by("number").values_list("utterance_class", flat=True))
    assert classes[1:] == ["FT", "SE", "PT", "PT"]
    edges = {
        (e.get_attribute("data-from"), e.get_attribute("data-to"))
        for e in browser.find_elements(By.CSS_SELECTOR, "#forest path.edge")
    }
    assert edges == {("2", "1"), ("4", "3"), ("5", "3")}
    assert browser.find_element(By.ID, "order-count").text == "Valid orders: 4"
    # focus stayed on the last turn; k moves up to turn 4, and relabelling it FT makes units {2}, {3, 5}, {4}: 3! = 6
    body.send_keys("k")
    body.send_keys("f")
    WebDriverWait(browser, 10).until(lambda d: d.find_element(By.ID, "order-count").text == "Valid orders: 6")
    # Read the database once the page says the label is stored: polling it while the live server writes the label
    # can meet SQLite's table lock.
    WebDriverWait(browser, 10).until(lambda d: d.find_element(By.ID, "save-summary").text == "All labels saved.")
    assert Turn.objects.get(conversation=conv, number=4).utterance_class == "FT"
    browser.save_screenshot(str(ARTIFACTS / "permutations-labeling.png"))


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_report_page_draws_figures_and_filters_systems(browser, live_server, admin_user, settings, tmp_path):
    settings.ECAST_CACHE_DIR = tmp_path
    coll, version = labelled_collection()
    exp = svc.permutation_experiment_create(
        collection=coll, name="report", qrels_version=version, systems=["current", "cu", "lp"], k=5, seed=1
    )  # autocommit in this test: the eager tasks ran on commit
    exp.refresh_from_db()
    assert exp.status == "succeeded"
    browser_login(browser, live_server, "admin1", "pass-admin1")
    browser.get(f"{live_server.url}/permutations/{exp.pk}/")
    assert len(browser.find_elements(By.CSS_SELECTOR, ".figure svg")) == 2
    rows = browser.find_elements(By.XPATH, "//h2[contains(., 'Table 2')]/following-sibling::table[1]/tbody/tr")
    assert len(rows) == 3
    browser.find_element(By.CSS_SELECTOR, "input[name=systems][value=current]").click()
    browser.find_element(By.XPATH, "//button[.='Update']").click()
    WebDriverWait(browser, 10).until(lambda d: "systems=cu" in d.current_url)
    rows = browser.find_elements(By.XPATH, "//h2[contains(., 'Table 2')]/following-sibling::table[1]/tbody/tr")
    assert sorted(r.find_element(By.TAG_NAME, "td").text for r in rows) == ["CU", "LP"]
    browser.set_window_size(1280, 3000)
    browser.save_screenshot(str(ARTIFACTS / "permutations-report.png"))
