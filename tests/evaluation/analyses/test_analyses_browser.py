"""In a real browser: an admin starts a pivot analysis, reads the heatmaps and uses the cross-EE tool."""

from __future__ import annotations

import pytest

from tests.conftest import ARTIFACTS, browser_login
from tests.evaluation.analyses.helpers import collection_with_qrels, make_run


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_an_admin_runs_a_pivot_analysis_and_compares_systems_across_environments(browser, live_server, admin_user):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import Select, WebDriverWait

    coll, version = collection_with_qrels(n_topics=2, turns_per_topic=3)
    for i, q in enumerate([1.5, 1.0, 0.5, 0.2]):
        make_run(coll, f"sys{i}", q)
    browser_login(browser, live_server, "admin1", "pass-admin1")
    # The navigation opens the Evaluation group on hover, as a person would.
    from selenium.webdriver.common.action_chains import ActionChains

    group = browser.find_element(By.XPATH, "//div[@class='navgroup'][span='Evaluation']")
    ActionChains(browser).move_to_element(group).perform()
    browser.find_element(By.LINK_TEXT, "Pivots").click()
    form = browser.find_element(By.ID, "pivot-form")
    runs = Select(form.find_element(By.NAME, "runs"))
    for option in runs.options:
        runs.select_by_visible_text(option.text)
    Select(form.find_element(By.NAME, "qrels_version")).select_by_visible_text(str(version))
    n_splits = form.find_element(By.NAME, "n_splits")
    n_splits.clear()
    n_splits.send_keys("10")
    form.find_element(By.CSS_SELECTOR, "button.primary").click()

    WebDriverWait(browser, 20).until(ec.presence_of_element_located((By.ID, "consistency-plot")))
    assert "qrels version" in browser.page_source and "original" in browser.page_source
    assert browser.find_elements(By.CSS_SELECTOR, "#consistency-plot svg")
    assert browser.find_elements(By.CSS_SELECTOR, "#correctness-plot svg")

    tool = browser.find_element(By.ID, "compare-form")
    Select(tool.find_element(By.NAME, "pivot")).select_by_visible_text("sys3")
    Select(tool.find_element(By.NAME, "ee_sys0")).select_by_visible_text("EE1")
    Select(tool.find_element(By.NAME, "ee_sys1")).select_by_visible_text("EE2")
    tool.find_element(By.CSS_SELECTOR, "button.primary").click()
    result = WebDriverWait(browser, 10).until(ec.presence_of_element_located((By.ID, "compare-result")))
    assert "Pivot sys3" in result.text
    assert result.text.count("EE1") == 1 and "sys1" in result.text
    browser.save_screenshot(str(ARTIFACTS / "analyses-pivots.png"))


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_an_admin_simulates_judging_budgets_and_reads_the_report(browser, live_server, admin_user):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import Select, WebDriverWait

    coll, version = collection_with_qrels(n_topics=2, turns_per_topic=3)
    for i, q in enumerate([1.5, 1.0, 0.5]):
        make_run(coll, f"sys{i}", q)
    browser_login(browser, live_server, "admin1", "pass-admin1")
    group = browser.find_element(By.XPATH, "//div[@class='navgroup'][span='Evaluation']")
    ActionChains(browser).move_to_element(group).perform()
    browser.find_element(By.LINK_TEXT, "Judging budget").click()
    form = browser.find_element(By.ID, "budget-form")
    runs = Select(form.find_element(By.NAME, "runs"))
    for option in runs.options:
        runs.select_by_visible_text(option.text)
    Select(form.find_element(By.NAME, "qrels_version")).select_by_visible_text(str(version))
    depth = form.find_element(By.NAME, "depth")
    depth.clear()
    depth.send_keys("6")
    form.find_element(By.CSS_SELECTOR, "button.primary").click()

    WebDriverWait(browser, 30).until(ec.presence_of_element_located((By.ID, "budget-summary")))
    # 6 turns × 6 pooled documents, 3 relevant each; every strategy's row names its 50 % / 80 % cost.
    assert browser.find_element(By.ID, "pool-size").text == "36"
    assert browser.find_element(By.ID, "pool-relevant").text == "18"
    rows = browser.find_elements(By.CSS_SELECTOR, "#budget-summary tbody tr")
    assert [r.find_elements(By.TAG_NAME, "td")[0].text for r in rows] == [
        "Depth-first by run rank (DocId / depth-k)",
        "Move-to-front (Cormack et al. 1998)",
        "MM-NS bandit (Losada et al. 2016/2017)",
        "MM bandit, stationary (Losada et al. 2017)",
    ]
    costs = [r.find_elements(By.TAG_NAME, "td")[1].text for r in rows]
    assert all(c.split()[0].isdigit() for c in costs), costs
    # The strategies whose ties depend on the run order show their spread over seeded run orders beside the cost.
    assert [bool(r.find_elements(By.CSS_SELECTOR, ".cost-spread")) for r in rows] == [False, True, True, True]
    assert browser.find_elements(By.CSS_SELECTOR, "#found-plot svg")
    browser.save_screenshot(str(ARTIFACTS / "budget-report.png"))
    browser.execute_script("document.getElementById('found-plot').scrollIntoView()")
    browser.save_screenshot(str(ARTIFACTS / "budget-report-plots.png"))
