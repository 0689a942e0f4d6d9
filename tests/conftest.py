"""Shared fixtures: role users, API clients, a small collection, and the path to ../shared/data."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from ecast.core.permissions import ADMIN, ASSESSOR, RATER
from tests import factories

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("ECAST_SHARED_DATA", REPO.parent / "shared" / "data"))
# ir_datasets fixes its folder when first imported: every test sees one empty folder of its own (filled by the
# tests that need files), never the developer's cache, and nothing is ever downloaded.
IR_DATASETS_HOME = Path(tempfile.mkdtemp(prefix="ecast-test-ir-datasets-"))
os.environ["IR_DATASETS_HOME"] = str(IR_DATASETS_HOME)
atexit.register(shutil.rmtree, IR_DATASETS_HOME, True)


@pytest.fixture
def fresh_cache():
    """An empty cache before and after the test, so heartbeats and marks never leak between tests."""
    cache.clear()
    yield
    cache.clear()


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real public data beside the checkout; CI always has it, so its absence is a failure there."""
    if not SHARED_DATA.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"shared data not found at {SHARED_DATA}")
        pytest.skip(f"shared data not found at {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture(scope="session")
def ir_datasets_home(shared_data) -> Path:
    """ir_datasets' folder holding the CAsT 2019 and 2020 topics and qrels at the paths it expects (links to the
    shared data); the 2019 training files are left out, for the tests of a missing file."""
    cast = shared_data / "cast"
    for year, name in (
        ("2019", "evaluation_topics_v1.0.json"),
        ("2019", "2019qrels.txt"),
        ("2020", "2020_manual_evaluation_topics_v1.0.json"),
        ("2020", "2020qrels.txt"),
    ):
        target = IR_DATASETS_HOME / "trec-cast" / year / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists():
            target.symlink_to(cast / year / name)
    return IR_DATASETS_HOME


@pytest.fixture(scope="session")
def tiny_causal(tmp_path_factory):
    """A tiny random causal chat model saved once per session (no download): LLM judge and fine-tune tests."""
    from ecast.pipeline.tiny import make_tiny_causal

    # Two shared cores: torch's default thread pool makes tiny models slower there.
    os.environ.setdefault("ECAST_TORCH_THREADS", "1")
    return make_tiny_causal(tmp_path_factory.mktemp("tiny-causal"), seed=0)


@pytest.fixture
def admin_user(db) -> User:
    return factories.user("admin1", ADMIN, staff=True)


@pytest.fixture
def rater(db) -> User:
    return factories.user("rater1", RATER)


@pytest.fixture
def other_rater(db) -> User:
    return factories.user("rater2", RATER)


@pytest.fixture
def assessor(db) -> User:
    return factories.user("assessor1", ASSESSOR)


def _api_client(user: User | None) -> APIClient:
    client = APIClient()
    if user is not None:
        token, _ = Token.objects.get_or_create(user=user)
        client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


@pytest.fixture
def admin_api(admin_user) -> APIClient:
    return _api_client(admin_user)


@pytest.fixture
def rater_api(rater) -> APIClient:
    return _api_client(rater)


@pytest.fixture
def assessor_api(assessor) -> APIClient:
    return _api_client(assessor)


@pytest.fixture
def anon_api() -> APIClient:
    return _api_client(None)


@pytest.fixture
def admin_client(client, admin_user):
    client.force_login(admin_user)
    return client


@pytest.fixture
def rater_client(client, rater):
    client.force_login(rater)
    return client


@pytest.fixture
def assessor_client(client, assessor):
    client.force_login(assessor)
    return client


@pytest.fixture
def small_collection(db):
    """Two conversations of three turns each, with manual rewrites, as a compact, hand-checkable collection."""
    return factories.collection_with_turns(
        name="Mini",
        year=2020,
        conversations={
            "1": ["What is throat cancer?", "Is it treatable?", "What causes it?"],
            "2": ["Tell me about bees.", "Why are they dying?", "How to help?"],
        },
    )


ARTIFACTS = REPO / "test-artifacts"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-quic",
    "--no-first-run",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]


@pytest.fixture
def browser(tmp_path):
    """Headless Debian Chromium driven by Selenium; screenshots go to ``test-artifacts/``."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for flag in CHROMIUM_FLAGS:
        opts.add_argument(flag)
    opts.add_argument(f"--user-data-dir={tmp_path / 'chromium-profile'}")
    opts.add_argument("--window-size=1280,900")
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
    driver.implicitly_wait(0)
    ARTIFACTS.mkdir(exist_ok=True)
    yield driver
    driver.get("about:blank")  # closes the page's polls and event streams before the browser goes
    driver.quit()
    live_server_requests_drain()


LIVE_SERVER_DRAIN_S = 30.0


def live_server_requests_drain(seconds: float = LIVE_SERVER_DRAIN_S) -> None:
    """Wait until the session's live server has finished every request the browser started.

    The live server outlives each test. A request still running when its test ends (an event stream only learns
    that the browser left at its next write) would touch the database after the test's access is closed and print
    its traceback during a later test; printing a traceback parses source with ``ast`` in that thread, which races
    another thread's ``ast.parse`` in CPython 3.11 ("AST constructor recursion depth mismatch"). So the browser
    test that started the request waits for it here, while its database is still open.
    """
    deadline = time.monotonic() + seconds
    # socketserver names each request's thread after its target: "Thread-N (process_request_thread)".
    busy = [t for t in threading.enumerate() if t.name.endswith("(process_request_thread)")]
    for thread in busy:
        thread.join(max(0.0, deadline - time.monotonic()))
    running = [t.name for t in busy if t.is_alive()]
    assert not running, f"live server still busy with {len(running)} request(s) {seconds:.0f} s after the browser quit"


def page_wait(driver, seconds: float = 30):
    """A wait for pages that re-render: an element replaced between finding and reading it is tried again.

    30 s by default because a loaded CI host can take seconds per page; a passing wait returns at once.
    """
    from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(
        driver, seconds, poll_frequency=0.2, ignored_exceptions=(StaleElementReferenceException, WebDriverException)
    )


def browser_login(driver, live_server, username: str, password: str) -> None:
    """Log in through the real login form."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(live_server.url + "/accounts/login/")
    driver.find_element(By.ID, "id_username").send_keys(username)
    driver.find_element(By.ID, "id_password").send_keys(password)
    driver.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    WebDriverWait(driver, 10).until(ec.url_changes(live_server.url + "/accounts/login/"))


@pytest.fixture
def redis_url() -> str:
    """The Redis broker URL for real-worker tests: in CI its absence or unreachability fails the test."""
    import redis

    url = os.environ.get("REDIS_URL", "")
    problem = None
    if not url:
        problem = "REDIS_URL is not set"
    else:
        try:
            redis.Redis.from_url(url, socket_connect_timeout=2).ping()
        except Exception as exc:  # noqa: BLE001 - any failure means the worker test cannot run
            problem = f"Redis at {url} unreachable: {exc}"
    if problem:
        if os.environ.get("CI"):
            pytest.fail(problem)
        pytest.skip(problem)
    return url


@pytest.fixture
def fleet(settings, tmp_path, redis_url):
    """Real Celery workers and beat in other processes (tests/worker_helpers.py), stopped and cleared after the test."""
    from ecast.celery import app
    from tests.concurrency_helpers import require_postgres
    from tests.worker_helpers import Fleet, clear_broker

    require_postgres("workers in other processes need a shared PostgreSQL database")
    settings.ECAST_JOB_STALE_SECONDS = 5
    clear_broker(redis_url)
    eager = app.conf.task_always_eager
    fleet = Fleet(tmp_path, redis_url)
    yield fleet
    app.conf.task_always_eager = eager
    settings.CELERY_TASK_ALWAYS_EAGER = eager
    fleet.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def scratch_db(request, tmp_path):
    """A scratch database URL for a real ``migrate``: a SQLite file, and a fresh PostgreSQL database (named for the
    test module) when the suite runs on PostgreSQL, where column types and indexes differ."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'db.sqlite3'}"
        return
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith("postgres"):
        if os.environ.get("CI"):
            pytest.fail("CI must run the PostgreSQL leg (DATABASE_URL is not PostgreSQL)")
        pytest.skip("PostgreSQL leg runs when DATABASE_URL is PostgreSQL")
    import psycopg

    parts = urlsplit(url)
    name = f"{parts.path.lstrip('/')}_{request.module.__name__.rsplit('.', 1)[-1]}"
    admin = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    yield urlunsplit(parts._replace(path="/" + name))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
