"""A refused page: the site's layout with a plain explanation, one warning line in the log and no traceback."""

import logging

import pytest

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("who", ["rater_client", "assessor_client"])
def test_a_refused_page_uses_the_site_layout_and_logs_no_traceback(request, who, caplog):
    client = request.getfixturevalue(who)
    with caplog.at_level(logging.INFO):
        response = client.get("/collections/")
    assert response.status_code == 403
    page = response.content.decode()
    assert 'class="topbar"' in page and "Log out" in page  # base.html, with the logged-in user's header
    assert "No access" in page and "Your role does not give access to this page." in page
    assert [r.exc_info for r in caplog.records if r.exc_info] == []
    forbidden = [r for r in caplog.records if r.name == "django.request"]
    assert len(forbidden) == 1 and forbidden[0].levelno == logging.WARNING and "/collections/" in forbidden[0].message
