"""The import page in a real browser: upload a file, land on the job page, see the result or the error table."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import Select, WebDriverWait

from ecast.models import Passage
from tests.conftest import ARTIFACTS, browser_login


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_an_admin_imports_passages_and_then_sees_a_bad_files_errors(browser, live_server, admin_user, tmp_path):
    good = tmp_path / "passages.tsv"
    good.write_text("MARCO_1\tfirst passage\nMARCO_2\tsecond passage\n", encoding="utf-8")
    bad = tmp_path / "broken.tsv"
    bad.write_text("MARCO_3\tok\nno tab here\n\tempty id\n", encoding="utf-8")
    browser_login(browser, live_server, "admin1", "pass-admin1")

    browser.get(f"{live_server.url}/imports/")
    Select(browser.find_element(By.ID, "id_kind")).select_by_value("passages_tsv")
    assert "Options for passages_tsv" in browser.find_element(By.ID, "option-help").text
    browser.find_element(By.ID, "id_file").send_keys(str(good))
    browser.find_element(By.CSS_SELECTOR, "#import-form button[type=submit]").click()
    WebDriverWait(browser, 15).until(ec.text_to_be_present_in_element((By.ID, "job-status"), "Succeeded"))
    assert "passages_created" in browser.page_source
    assert Passage.objects.count() == 2

    browser.get(f"{live_server.url}/imports/")
    Select(browser.find_element(By.ID, "id_kind")).select_by_value("passages_tsv")
    browser.find_element(By.ID, "id_file").send_keys(str(bad))
    browser.find_element(By.CSS_SELECTOR, "#import-form button[type=submit]").click()
    WebDriverWait(browser, 15).until(ec.presence_of_element_located((By.ID, "error-table")))
    rows = browser.find_elements(By.CSS_SELECTOR, "#error-table tbody tr")
    assert [r.find_elements(By.TAG_NAME, "td")[1].text for r in rows] == ["2", "3"]
    browser.save_screenshot(str(ARTIFACTS / "import_job_errors.png"))
    assert Passage.objects.count() == 2  # nothing of the bad file was written
