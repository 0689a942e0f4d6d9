"""Oversized request bodies are refused from their Content-Length before anything reads them, on every URL.

The refusals are measured against a real gunicorn server over a raw socket: the answer must come while the client is
still sending (or has sent nothing), and no temporary upload file may appear.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import quote

import pytest
from django.contrib.auth.models import Group, User
from django.db import connection
from django.test import Client
from django.urls import reverse
from rest_framework.authtoken.models import Token

from ecast.core.permissions import ADMIN, RATER
from tests.conftest import REPO
from tests.ecast.core.server_helpers import free_port, wait_for_port

UPLOAD = 60_000_000  # under the upload limit, far over what a rater may post
HUGE = 600_000_000  # over the upload limit (512 MiB)
ANSWER_WITHIN_S = 3.0  # the refusal comes at once; reading the body (or waiting for it) takes far longer

# Every test needs the test database set up (the server's users live there), even those that only talk to the server.
pytestmark = pytest.mark.django_db


def _database_url(tmp: Path) -> str:
    """A URL to the test database that another process can open (SQLite's in-memory one is copied to a file)."""
    db = connection.settings_dict
    if connection.vendor == "sqlite":
        path = tmp / "db.sqlite3"
        connection.ensure_connection()
        target = sqlite3.connect(path)
        connection.connection.backup(target)
        target.close()
        return f"sqlite:///{path}"
    auth = quote(db["USER"] or "") + (":" + quote(db["PASSWORD"]) if db.get("PASSWORD") else "")
    return f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def _session_cookie(user: User) -> str:
    client = Client()
    client.force_login(user)
    return client.cookies["sessionid"].value


@pytest.fixture(scope="module")
def server(django_db_setup, django_db_blocker, tmp_path_factory):
    """gunicorn (gthread) on the test database; yields (port, temp dir of the server, cookies by role)."""
    tmp = tmp_path_factory.mktemp("body-limit")
    uploads_tmp = tmp / "tmp"
    uploads_tmp.mkdir()
    with django_db_blocker.unblock():
        users = {}
        for name, role, staff in (("gate-admin", ADMIN, True), ("gate-rater", RATER, False)):
            user = User.objects.create_user(username=name, password="x", is_staff=staff)
            user.groups.add(Group.objects.get_or_create(name=role)[0])
            users[role] = user
        cookies = {role: f"sessionid={_session_cookie(user)}; csrftoken=" + "c" * 32 for role, user in users.items()}
        tokens = {role: Token.objects.create(user=user).key for role, user in users.items()}
        database_url = _database_url(tmp)
    port = free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DATABASE_URL": database_url,
        "ECAST_VAR_DIR": str(tmp / "var"),
        "TMPDIR": str(uploads_tmp),  # where Django would spool an upload
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "ecast.wsgi:application", "--bind", f"127.0.0.1:{port}",
         "--workers", "1", "--threads", "4", "--worker-class", "gthread", "--log-level", "warning"],
        cwd=REPO, env=env,
    )  # fmt: skip
    try:
        wait_for_port(port)
        with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:  # the first request loads the URLs
            sock.sendall(b"GET /accounts/login/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            assert _status(sock)[0] == 200
        yield port, uploads_tmp, cookies, tokens
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        with django_db_blocker.unblock():
            User.objects.filter(username__startswith="gate-").delete()


def _head(path: str, length: int, *, cookie: str = "", token: str = "") -> bytes:
    lines = [
        f"POST {path} HTTP/1.1",
        "Host: 127.0.0.1",
        "Content-Type: multipart/form-data; boundary=XyZ",
        f"Content-Length: {length}",
    ]
    if cookie:
        lines.append(f"Cookie: {cookie}")
    if token:
        lines.append(f"Authorization: Token {token}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _status(sock: socket.socket) -> tuple[int, bytes]:
    got = b""
    while b"\r\n\r\n" not in got:
        chunk = sock.recv(65536)
        if not chunk:
            break
        got += chunk
    return int(got.split(b" ", 2)[1]), got


class Upload:
    """Sends the announced body as fast as the server takes it, in a thread, while the test waits for the answer."""

    def __init__(self, sock: socket.socket, length: int):
        self.sock, self.length, self.sent = sock, length, 0
        self.thread = threading.Thread(target=self._send, daemon=True)
        self.thread.start()

    def _send(self) -> None:
        file_part = b'--XyZ\r\nContent-Disposition: form-data; name="file"; filename="big.tsv"\r\n\r\n'
        try:
            self.sent = self.sock.send(file_part)
            while self.sent < self.length:
                self.sent += self.sock.send(b"x" * min(65_536, self.length - self.sent))
        except OSError:  # the server closed the connection: it stopped taking the body
            pass


def _largest_file(folder: Path) -> int:
    return max((p.stat().st_size for p in folder.rglob("*") if p.is_file()), default=0)


def _refused_while_uploading(port: int, tmp: Path, path: str, *, cookie: str) -> tuple[int, float, int, int]:
    """(status, seconds to the answer, bytes the client got to send, largest temporary file seen meanwhile)."""
    largest, done = [0], threading.Event()

    def watch() -> None:
        while not done.is_set():
            largest[0] = max(largest[0], _largest_file(tmp))
            time.sleep(0.005)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        start = time.perf_counter()
        sock.sendall(_head(path, UPLOAD, cookie=cookie))
        upload = Upload(sock, UPLOAD)
        status, _ = _status(sock)
        seconds = time.perf_counter() - start
        upload.thread.join(timeout=30)
    done.set()
    watcher.join()
    return status, seconds, upload.sent, largest[0]


def test_an_anonymous_upload_to_a_page_is_refused_before_its_body_is_read(server):
    port, tmp, _, _ = server
    status, seconds, sent, largest = _refused_while_uploading(port, tmp, "/imports/", cookie="csrftoken=" + "c" * 32)
    assert status == 413
    assert seconds < ANSWER_WITHIN_S
    assert sent < UPLOAD // 2, f"the server took {sent:,} of {UPLOAD:,} bytes"
    assert largest < 1_000_000, f"a {largest:,}-byte temporary file appeared"


def test_a_raters_upload_is_refused_before_its_body_is_read(server):
    port, tmp, cookies, _ = server
    status, seconds, sent, largest = _refused_while_uploading(port, tmp, "/imports/", cookie=cookies[RATER])
    assert status == 413
    assert seconds < ANSWER_WITHIN_S
    assert sent < UPLOAD // 2 and largest < 1_000_000


@pytest.mark.parametrize("path", ["/imports/", "/api/imports/", "/collections/", "/no/such/page/"])
def test_an_admin_announcing_more_than_the_upload_limit_is_answered_at_once_without_sending_it(server, path):
    port, _, cookies, _ = server
    with socket.create_connection(("127.0.0.1", port), timeout=ANSWER_WITHIN_S) as sock:
        start = time.perf_counter()
        sock.sendall(_head(path, HUGE, cookie=cookies[ADMIN]) + b"--XyZ\r\n")
        status, answer = _status(sock)
        assert status == 413 and time.perf_counter() - start < ANSWER_WITHIN_S
    assert (b"application/json" in answer) == path.startswith("/api/")


def test_a_token_raters_upload_to_the_api_is_refused_with_json_before_its_body_is_read(server):
    port, _, _, tokens = server
    with socket.create_connection(("127.0.0.1", port), timeout=ANSWER_WITHIN_S) as sock:
        sock.sendall(_head("/api/imports/", UPLOAD, token=tokens[RATER]) + b"--XyZ\r\n")
        status, head = _status(sock)
    assert status == 413 and b"application/json" in head


def test_an_admins_upload_under_the_limit_still_reaches_the_page(server):
    port, _, cookies, _ = server
    body = b"--XyZ\r\n" + b'Content-Disposition: form-data; name="kind"\r\n\r\n' + b"x" * 300_000 + b"\r\n--XyZ--\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(_head("/imports/", len(body), cookie=cookies[ADMIN]) + body)
        status, _ = _status(sock)
    assert status == 403  # read, and refused by the CSRF check (no token in the form): not by its size


def test_a_body_of_unknown_length_is_refused_rather_than_silently_dropped(server):
    port, _, cookies, _ = server
    head = (
        "POST /imports/ HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n"
        f"Content-Type: multipart/form-data; boundary=XyZ\r\nCookie: {cookies[ADMIN]}\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", port), timeout=ANSWER_WITHIN_S) as sock:
        sock.sendall(head.encode() + b"10000\r\n" + b"x" * 100)
        status, _ = _status(sock)
    assert status == 411


# --- the same refusals through Django's test client: the answer's shape ----------------------------------------------


def test_the_refusal_is_json_under_the_api_and_a_short_page_elsewhere(rater_api, client):
    r = rater_api.post("/api/imports/", b"x", content_type="application/octet-stream", CONTENT_LENGTH=str(UPLOAD))
    assert r.status_code == 413 and r.json()["code"] == "too_large" and "ECAST_MAX_FORM_BYTES" in r.json()["detail"]
    r = client.post(reverse("imports"), b"x", content_type="application/octet-stream", CONTENT_LENGTH=str(HUGE))
    assert r.status_code == 413 and r["Content-Type"].startswith("text/html")
    assert b"ECAST_MAX_UPLOAD_BYTES" in r.content


def test_raters_small_forms_pass_and_admins_may_post_past_the_form_limit(rater_client, admin_api, settings):
    settings.ECAST_MAX_FORM_BYTES = 1000
    r = rater_client.post(reverse("login"), {"username": "x" * 500})
    assert r.status_code != 413
    r = rater_client.post(reverse("login"), {"username": "x" * 1500})
    assert r.status_code == 413
    r = admin_api.post("/api/collections/create/", {"name": "n" * 1500, "year": 2020}, format="json")
    assert r.status_code != 413
