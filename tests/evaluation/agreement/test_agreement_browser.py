"""In headless Chromium an admin opens the agreement report and reads κ, then follows a confusion cell."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By
from sklearn.metrics import cohen_kappa_score

from tests.conftest import ARTIFACTS, browser_login
from tests.evaluation.agreement.helpers import GRADES_A, GRADES_B, build_pair


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_an_admin_reads_kappa_on_the_agreement_page(browser, live_server, admin_user):
    coll, original, derived, runs = build_pair()
    browser_login(browser, live_server, "admin1", "pass-admin1")
    browser.get(f"{live_server.url}/evaluation/agreement/?collection={coll.pk}")

    kappa = cohen_kappa_score(GRADES_A, GRADES_B, weights="linear", labels=[0, 1, 2, 3, 4])
    assert browser.find_element(By.ID, "kappa-value").text == f"{kappa:.3f}"
    assert "95% CI" in browser.find_element(By.ID, "kappa-ci").text
    picked = [browser.find_element(By.ID, f"pick-{side}") for side in ("a", "b")]
    assert [p.find_element(By.CSS_SELECTOR, "option:checked").text for p in picked] == ["original", "original + new"]
    cell = browser.find_element(By.CSS_SELECTOR, "#confusion a[href*='ga=2'][href*='gb=0']")
    assert cell.text == "1"
    assert "swapped" in browser.find_element(By.ID, "ranking").text
    browser.set_window_size(1280, 1900)
    browser.save_screenshot(str(ARTIFACTS / "evaluation-agreement.png"))
