"""While Redis is down, API calls authenticate from the database and log-in counts in memory: never a 500.

A real redis-server is started on a free port, used as the cache, and killed mid-test.
"""

from __future__ import annotations

import logging
import shutil
import subprocess

import pytest
from django.core.cache import cache
from django.urls import reverse

from ecast.core import cache as cache_module
from ecast.core.auth import token_cache_key
from tests import factories
from tests.ecast.core.server_helpers import free_port, wait_for_port

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server"),
]


@pytest.fixture
def redis_cache(settings):
    """The cache on a redis-server of this test's own; yields a function that kills that server."""
    port = free_port()
    proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )
    wait_for_port(port)
    settings.CACHES = {
        "default": {
            "BACKEND": "ecast.core.cache.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{port}/0",
            "KEY_FUNCTION": "ecast.core.cache.database_key",
            "OPTIONS": {"socket_connect_timeout": 2, "socket_timeout": 5},
        }
    }

    def kill() -> None:
        proc.kill()
        proc.wait(timeout=10)

    yield kill
    if proc.poll() is None:
        kill()
    cache_module._down.update(since=0.0, warned=0.0)


def test_a_token_call_answers_for_the_right_user_after_redis_dies(redis_cache, rater_api, admin_api, caplog):
    r = rater_api.get("/api/token/")
    assert r.status_code == 200 and r.json()["username"] == "rater1"
    assert cache.get(token_cache_key(r.json()["token"])) is not None  # served from Redis until now

    redis_cache()
    with caplog.at_level(logging.WARNING, logger="ecast.core.cache"):
        for _ in range(3):
            r = rater_api.get("/api/token/")
            assert r.status_code == 200 and r.json()["username"] == "rater1"
        assert admin_api.get("/api/collections/").status_code == 200
        assert rater_api.get("/api/collections/").status_code == 403  # roles read from the database, too
    warnings = [rec for rec in caplog.records if rec.name == "ecast.core.cache"]
    assert len(warnings) == 1 and "cache unavailable" in warnings[0].getMessage()


def test_the_first_failed_look_up_also_answers_and_redis_is_not_tried_again_at_once(redis_cache, rater_api):
    redis_cache()
    r = rater_api.get("/api/token/")  # the call that finds Redis gone
    assert r.status_code == 200 and r.json()["username"] == "rater1"
    assert cache_module.cache_recently_down()


def test_log_in_works_and_is_still_limited_while_redis_is_down(redis_cache, rater, anon_api, client, settings):
    redis_cache()
    r = anon_api.post("/api/token/obtain/", {"username": "rater1", "password": "pass-rater1"}, format="json")
    assert r.status_code == 200 and r.json()["username"] == "rater1"
    r = client.post(reverse("login"), {"username": "rater1", "password": "pass-rater1"})
    assert r.status_code == 302
    settings.ECAST_LOGIN_ATTEMPTS = 2
    answers = [
        anon_api.post("/api/token/obtain/", {"username": "rater1", "password": "wrong"}, format="json").status_code
        for _ in range(3)
    ]
    assert answers == [400, 400, 429]  # counted in this process's memory meanwhile


def test_what_cannot_be_done_without_redis_is_a_json_503_not_a_500(redis_cache, rater_api):
    redis_cache()
    r = rater_api.post("/api/token/")  # replacing a token must drop its cached look-up, which needs Redis
    assert r.status_code == 503 and r.json()["code"] == "unavailable"


def test_a_raters_next_item_without_redis_is_a_json_503_not_a_500(redis_cache, rater_api):
    camp = factories.rating_campaign(factories.paraphrase_collection(), size=4, n=2)
    redis_cache()
    r = rater_api.post(f"/api/rating/campaigns/{camp.pk}/next/")
    assert r.status_code == 503 and r.json()["code"] == "unavailable"  # the campaign is read from Redis
