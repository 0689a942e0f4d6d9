"""A curator imports the NIST nugget file through the import page in a real browser and sees what was written."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import Select, WebDriverWait

from evaluation.models import NuggetAssignment
from tests import factories
from tests.conftest import ARTIFACTS, browser_login


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_curator_imports_the_nist_nugget_file_and_sees_the_counts(browser, live_server, admin_user, shared_data):
    factories.collection("CAsT 2020", 2020)  # a collection, but not one the file fits
    browser_login(browser, live_server, "admin1", "pass-admin1")
    browser.get(f"{live_server.url}/imports/")
    Select(browser.find_element(By.ID, "id_kind")).select_by_value("nuggets")
    assert (
        "bank, label_set, create_turns, queries. Nuggets into a bank" in browser.find_element(By.ID, "option-help").text
    )
    # None fits: the page's link makes one and comes back with it, and the kind picked, chosen.
    link = browser.find_element(By.ID, "new-collection-link")
    assert link.text == "Make a new collection" and "None fits?" in link.find_element(By.XPATH, "..").text
    link.click()
    WebDriverWait(browser, 10).until(ec.presence_of_element_located((By.ID, "new-collection-back")))
    assert "you go back to the page you came from" in browser.find_element(By.ID, "new-collection-back").text
    browser.find_element(By.ID, "id_name").send_keys("TREC RAG 2024")
    browser.find_element(By.ID, "id_year").send_keys("2024")
    browser.find_element(By.CSS_SELECTOR, "#new-collection button[type=submit]").click()
    WebDriverWait(browser, 10).until(ec.url_contains("/imports/?kind=nuggets&collection="))
    assert "Collection “TREC RAG 2024” created." in browser.find_element(By.TAG_NAME, "body").text
    assert Select(browser.find_element(By.ID, "id_kind")).first_selected_option.get_attribute("value") == "nuggets"
    assert Select(browser.find_element(By.ID, "id_collection")).first_selected_option.text == "TREC RAG 2024"
    browser.find_element(By.ID, "id_options").send_keys("create_turns=true")
    path = shared_data / "rag/trec_rag_2024/nugget_assignment.20241108.jl.gz"
    browser.find_element(By.ID, "id_file").send_keys(str(path))
    browser.find_element(By.CSS_SELECTOR, "#import-form button[type=submit]").click()
    WebDriverWait(browser, 120).until(ec.text_to_be_present_in_element((By.ID, "job-status"), "Succeeded"))
    cells = {
        row.find_element(By.TAG_NAME, "th").text: row.find_element(By.TAG_NAME, "td").text
        for row in browser.find_elements(By.CSS_SELECTOR, "table tr")
        if row.find_elements(By.TAG_NAME, "th") and row.find_elements(By.TAG_NAME, "td")
    }
    assert (cells["nuggets"], cells["labels_written"], cells["responses_created"]) == ("298", "13158", "927")
    browser.save_screenshot(str(ARTIFACTS / "import_nugget_file.png"))
    assert NuggetAssignment.objects.count() == 13158
