"""static/ecast/forms.js in headless Chromium: what the markup declares instead of inline handlers."""

from __future__ import annotations

import time

import pytest
from django.http import HttpRequest, HttpResponse
from django.templatetags.static import static
from django.urls import path
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from tests.conftest import page_wait

pytestmark = [pytest.mark.browser, pytest.mark.urls(__name__)]


def page(request: HttpRequest) -> HttpResponse:
    got = "&".join(f"{k}={v}" for k, v in sorted(request.GET.items()))
    return HttpResponse(
        "<!doctype html><html><body>"
        f'<p id="got">{got or "nothing"}</p>'
        '<form method="get" id="picker">'
        '<select name="collection" data-autosubmit data-clear="version absent">'
        '<option value="1">one</option><option value="2">two</option></select>'
        '<select name="version"><option value="">—</option><option value="7" selected>v7</option></select></form>'
        '<form method="get" id="delete" data-confirm="Delete this analysis?">'
        '<input type="hidden" name="deleted" value="1"><button id="delete-button">Delete</button></form>'
        '<form method="get"><input type="hidden" name="replaced" value="1">'
        '<button id="replace" data-confirm="Replace the token?">Replace</button></form>'
        '<input id="token" readonly value="abc123" data-select-on-click>'
        f'<script src="{static("ecast/forms.js")}"></script></body></html>'
    )


urlpatterns = [path("forms-test/", page)]


def _got(driver) -> str:
    return driver.find_element(By.ID, "got").text


def test_a_picker_submits_on_change_after_emptying_the_fields_it_names(browser, live_server):
    browser.get(live_server.url + "/forms-test/")
    Select(browser.find_element(By.NAME, "collection")).select_by_visible_text("two")
    page_wait(browser, 20).until(lambda d: _got(d) != "nothing")
    assert _got(browser) == "collection=2&version="


def test_a_confirmation_sends_nothing_unless_the_person_agrees(browser, live_server):
    browser.get(live_server.url + "/forms-test/")
    for button, sent in (("delete-button", "deleted=1"), ("replace", "replaced=1")):
        browser.execute_script("window.confirm = () => false; window.stillHere = true;")
        browser.find_element(By.ID, button).click()
        time.sleep(0.5)
        assert browser.execute_script("return window.stillHere === true;") and _got(browser) == "nothing"
        browser.execute_script("window.confirm = () => true;")
        browser.find_element(By.ID, button).click()
        page_wait(browser, 20).until(lambda d, sent=sent: _got(d) == sent)
        browser.get(live_server.url + "/forms-test/")


def test_a_click_selects_the_whole_token(browser, live_server):
    browser.get(live_server.url + "/forms-test/")
    browser.find_element(By.ID, "token").click()
    selected = browser.execute_script(
        "const t = document.getElementById('token'); return [t.selectionStart, t.selectionEnd];"
    )
    assert selected == [0, 6]
