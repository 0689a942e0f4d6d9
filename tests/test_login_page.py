"""The login page works in a real browser and sends a logged-in user home."""

import pytest

from tests.conftest import ARTIFACTS, browser_login


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_user_logs_in_through_the_browser(browser, live_server, rater):
    browser_login(browser, live_server, "rater1", "pass-rater1")
    assert "Welcome, rater1" in browser.page_source
    browser.save_screenshot(str(ARTIFACTS / "home.png"))


@pytest.mark.django_db
def test_a_wrong_password_shows_an_error(client, rater):
    response = client.post("/accounts/login/", {"username": "rater1", "password": "nope"})
    assert response.status_code == 200
    assert b"didn&#x27;t match" in response.content or b"didn't match" in response.content
