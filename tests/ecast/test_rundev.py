"""`manage.py rundev`: supervises the web server and the worker, forwards Ctrl-C, stops both cleanly."""

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from io import StringIO
from pathlib import Path

import pytest

from ecast.management.commands.rundev import supervise, web_command, worker_command

REPO = Path(__file__).resolve().parents[2]


def test_the_worker_runs_solo_on_sqlite_and_two_wide_with_redis():
    assert worker_command(redis=False, queue="celery")[1:6] == ["-m", "celery", "-A", "ecast.celery", "worker"]
    assert "--pool=solo" in worker_command(redis=False, queue="celery")
    with_redis = worker_command(redis=True, queue="long")
    assert "--concurrency=2" in with_redis and "--pool=solo" not in with_redis
    assert web_command(addr="127.0.0.1:8000", server="runserver")[-2:] == ["127.0.0.1:8000", "--noreload"]


def test_when_one_child_dies_the_other_is_stopped_and_its_code_returned():
    out = StringIO()
    started = time.monotonic()
    code = supervise([[sys.executable, "-c", "import sys; sys.exit(3)"], ["sleep", "60"]], out=out)
    assert code == 3
    assert time.monotonic() - started < 20
    assert "exited with 3" in out.getvalue()


def test_a_worker_that_dies_is_restarted_and_the_web_server_keeps_serving(tmp_path):
    starts = tmp_path / "starts"
    worker = [sys.executable, "-c", f"open({str(starts)!r}, 'a').write('x'); import sys; sys.exit(9)"]
    # The "web server" ends the supervision itself once the worker was started three times.
    wait = f"import os, time\nwhile not os.path.exists({str(starts)!r}) or len(open({str(starts)!r}).read()) < 3:"
    web = [sys.executable, "-c", wait + " time.sleep(0.05)"]
    out = StringIO()
    code = supervise([web, worker], out=out, restartable=[False, True])
    assert starts.read_text().count("x") >= 3
    assert "exited with 9; restarting it" in out.getvalue()
    assert code == 1  # the web server's own exit still stops everything (it exited 0, so the code is 1)


def test_a_crash_looping_worker_stops_the_supervisor_instead_of_spinning():
    out = StringIO()
    code = supervise(
        [["sleep", "60"], [sys.executable, "-c", "import sys; sys.exit(4)"]], out=out, restartable=[False, True]
    )
    assert code == 4
    assert "keeps crashing" in out.getvalue()
    assert out.getvalue().count("restarting it") == 5


def test_sigint_is_forwarded_once_and_both_children_exit(tmp_path):
    pids = tmp_path / "pids"
    script = f"""
import sys
sys.path.insert(0, {str(REPO)!r})
import os
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
import django; django.setup()
from ecast.management.commands.rundev import supervise
child = ("import os, signal, sys, time; open({str(pids)!r}, 'a').write(str(os.getpid()) + chr(10)); "
         "signal.signal(signal.SIGTERM, lambda *a: sys.exit(0)); time.sleep(60)")
sys.exit(supervise([[sys.executable, "-c", child], [sys.executable, "-c", child]], out=sys.stdout))
"""
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (not pids.exists() or len(pids.read_text().split()) < 2):
        time.sleep(0.1)
    child_pids = [int(p) for p in pids.read_text().split()]
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0
    assert "Received SIGINT" in out
    for pid in child_pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def _child_pid(parent: int, word: str) -> int:
    """The pid of ``parent``'s child whose command line contains ``word``."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, IndexError, ValueError):
            continue
        if ppid == parent and word in cmdline:
            return int(entry.name)
    raise AssertionError(f"no child of {parent} runs {word}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_rundev_serves_pages_runs_a_worker_and_stops_on_ctrl_c(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL", "ECAST_TASKS_EAGER"}}
    env.update(ECAST_VAR_DIR=str(tmp_path / "var"), DJANGO_SETTINGS_MODULE="ecast.settings", PYTHONUNBUFFERED="1")
    manage = [sys.executable, str(REPO / "manage.py")]
    subprocess.run([*manage, "migrate", "--run-syncdb", "-v0"], env=env, check=True, cwd=REPO, timeout=120)
    port = _free_port()
    log = (tmp_path / "rundev.log").open("w+")
    proc = subprocess.Popen(
        [*manage, "rundev", "--addr", f"127.0.0.1:{port}"],
        env=env,
        cwd=REPO,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group, like a terminal's foreground job
    )
    try:
        status, deadline = None, time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                status = urllib.request.urlopen(f"http://127.0.0.1:{port}/accounts/login/", timeout=2).status
                if "ready" in (tmp_path / "rundev.log").read_text():
                    break
            except OSError:
                pass
            time.sleep(0.3)
        text = (tmp_path / "rundev.log").read_text()
        assert status == 200, text
        assert f"http://127.0.0.1:{port}/" in text and "demo-admin" in text
        assert "ready" in text, "the Celery worker never reported ready:\n" + text
        # Two workers: the default queue's and the long jobs' (each under its own node name).
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (tmp_path / "rundev.log").read_text().count(" ready") < 2:
            time.sleep(0.3)
        text = (tmp_path / "rundev.log").read_text()
        assert "celery@" in text and "long@" in text and text.count(" ready") >= 2, text

        # A worker killed outright is restarted; the web server never stops serving.
        os.kill(_child_pid(proc.pid, "-Q long"), signal.SIGKILL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (tmp_path / "rundev.log").read_text().count(" ready") < 3:
            time.sleep(0.3)
        text = (tmp_path / "rundev.log").read_text()
        assert "exited with -9; restarting it" in text, text
        assert text.count(" ready") >= 3, text
        assert urllib.request.urlopen(f"http://127.0.0.1:{port}/accounts/login/", timeout=5).status == 200
        assert _child_pid(proc.pid, " beat ")  # beat queues the job sweeper
    finally:
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C does: SIGINT to the whole foreground group
        code = proc.wait(timeout=45)
    text = (tmp_path / "rundev.log").read_text()
    assert code == 0, text
    assert "Stopped cleanly." in text
