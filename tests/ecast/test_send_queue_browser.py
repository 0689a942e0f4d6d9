"""The one send queue (static/ecast/send.js) in headless Chromium against a live server that answers as told.

A small page loads send.js; its saves go to a test endpoint that answers each item with the statuses the test sets
(a 500, then 200; a 400 with a reason) or slowly, and records what arrived, in which order and how many requests of
an item were on their way at once.
"""

from __future__ import annotations

import json
import threading
import time

import pytest
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.middleware.csrf import get_token
from django.templatetags.static import static
from django.urls import path
from selenium.webdriver.support.ui import WebDriverWait

from tests.conftest import page_wait

pytestmark = [pytest.mark.browser, pytest.mark.urls(__name__)]


class Server:
    """What the save endpoint answers and what it saw."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.plan: dict[str, list[int]] = {}  # item -> statuses still to answer (then 200)
        self.slow: dict[str, float] = {}  # item -> seconds each request of it takes
        self.received: list[tuple[str, object, int]] = []  # (item, value, status) in arrival order
        self.stored: dict[str, object] = {}
        self.in_flight: dict[str, int] = {}
        self.most_in_flight: dict[str, int] = {}
        self.csrf_headers: set[bool] = set()


SERVER = Server()


def page(request: HttpRequest) -> HttpResponse:
    return HttpResponse(
        "<!doctype html><html><body>"
        f'<input type="hidden" name="csrfmiddlewaretoken" value="{get_token(request)}">'
        '<p id="state"></p><p id="message"></p>'
        f'<script src="{static("ecast/send.js")}"></script></body></html>'
    )


def save(request: HttpRequest) -> HttpResponse:
    data = json.loads(request.body)
    item, value = data["item"], data["value"]
    s = SERVER
    with s.lock:
        s.csrf_headers.add(bool(request.headers.get("X-CSRFToken")))
        s.in_flight[item] = s.in_flight.get(item, 0) + 1
        s.most_in_flight[item] = max(s.most_in_flight.get(item, 0), s.in_flight[item])
        status = s.plan[item].pop(0) if s.plan.get(item) else 200
    time.sleep(s.slow.get(item, 0))
    with s.lock:
        s.in_flight[item] -= 1
        s.received.append((item, value, status))
        if status == 200:
            s.stored[item] = value
    if status == 400:
        return JsonResponse({"detail": "a grade is a whole number from 0 to 4"}, status=400)
    if status >= 500:
        return HttpResponse("server error", status=status)
    return JsonResponse({"item": item, "value": value})


urlpatterns = [path("send-test/", page), path("send-test/save/", save)]

# The page's queue: its state word in #state after every change, its messages in #message.
SETUP = """
const stateEl = document.getElementById("state");
window.q = EcastSend.queue({
  url: "/send-test/save/",
  payload: (item, value) => ({ item: item, value: value }),
  message: document.getElementById("message"),
  onChange: () => { if (window.q) stateEl.textContent = window.q.state().word; },
});
"""


@pytest.fixture
def queue_page(browser, live_server):
    global SERVER
    SERVER = Server()
    browser.get(live_server.url + "/send-test/")
    browser.execute_script(SETUP)
    return browser


def _text(driver, element_id: str) -> str:
    return driver.execute_script(f"return document.getElementById('{element_id}').textContent;")


def _unload_is_held(driver) -> bool:
    return driver.execute_script(
        "const ev = new Event('beforeunload', {cancelable: true});window.dispatchEvent(ev); return ev.defaultPrevented;"
    )


def _send_until_message(driver, plan: dict[str, list[int]], calls: str, words: str):
    """Set what the server answers, make the page's saves, wait for the page's message to say ``words``."""
    SERVER.plan.update(plan)
    driver.execute_script(calls)
    wait = page_wait(driver, 20)
    wait.until(lambda d: words in _text(d, "message"))
    return wait


def test_a_5xx_is_retried_and_saved_once_and_the_item_behind_it_waits_its_turn(queue_page):
    wait = _send_until_message(queue_page, {"a": [500]}, "q.send('a', 3); q.send('b', 1);", "retrying")
    assert _text(queue_page, "state") == "not saved"
    assert _unload_is_held(queue_page)  # unsaved work: leaving asks first
    wait.until(lambda d: _text(d, "state") == "all saved")
    assert SERVER.received == [("a", 3, 500), ("a", 3, 200), ("b", 1, 200)]
    assert SERVER.stored == {"a": 3, "b": 1}
    assert SERVER.csrf_headers == {True}
    assert _text(queue_page, "message") == ""
    assert not _unload_is_held(queue_page)


def test_a_4xx_is_not_retried_and_the_servers_reason_is_shown(queue_page):
    wait = _send_until_message(queue_page, {"c": [400]}, "q.send('c', 9); q.send('d', 2);", "Not saved")
    assert _text(queue_page, "message") == "Not saved: a grade is a whole number from 0 to 4"
    assert queue_page.execute_script("return document.getElementById('message').className;") == "error"
    wait.until(lambda d: d.execute_script("return q.size();") == 0)  # c dropped, d saved: nothing waits
    assert SERVER.stored == {"d": 2}
    assert _text(queue_page, "message") == "Not saved: a grade is a whole number from 0 to 4"  # d did not wipe it
    assert _text(queue_page, "state") == "not saved"  # the refused item stays marked
    assert queue_page.execute_script("return q.refusedReason('c');") == "a grade is a whole number from 0 to 4"
    assert not _unload_is_held(queue_page)
    # Nothing can send c again: the queue holds nothing and no back-off timer is set (a retry waits on one).
    assert queue_page.execute_script("const s = q.state(); return [s.pending, s.retrying];") == [0, False]
    assert [r for r in SERVER.received if r[0] == "c"] == [("c", 9, 400)]
    queue_page.execute_script("q.send('c', 4);")  # a corrected value is sent and clears the mark
    page_wait(queue_page, 20).until(lambda d: _text(d, "state") == "all saved")
    assert SERVER.stored == {"c": 4, "d": 2}
    assert _text(queue_page, "message") == ""


def test_saves_of_an_item_in_flight_wait_for_it_and_then_only_the_last_value_is_sent(queue_page):
    SERVER.slow["e"] = 1.0
    queue_page.execute_script("q.send('e', 1);")
    WebDriverWait(queue_page, 10).until(lambda d: SERVER.in_flight.get("e") == 1)
    queue_page.execute_script("q.send('e', 2); q.send('e', 3);")  # while 1 is on its way
    assert _text(queue_page, "state") == "saving…"
    page_wait(queue_page, 20).until(lambda d: _text(d, "state") == "all saved")
    assert SERVER.received == [("e", 1, 200), ("e", 3, 200)]
    assert SERVER.most_in_flight == {"e": 1}
    assert SERVER.stored == {"e": 3}
