"""Production settings: the Docker Compose environment passes `check --deploy`; security settings come from env."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]


def _env_file(path: Path) -> dict[str, str]:
    pairs = (line.split("=", 1) for line in path.read_text().splitlines() if "=" in line and not line.startswith("#"))
    return {key.strip(): value.strip() for key, value in pairs}


def _compose_environment(dotenv: dict[str, str]) -> dict[str, str]:
    """The web service's `environment:` block, with ${VAR:-default} filled from .env as compose does."""
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    block = compose["services"]["web"].get("environment") or {}
    fill = re.compile(r"\$\{(\w+)(?::-([^}]*))?\}")
    return {k: fill.sub(lambda m: dotenv.get(m.group(1), m.group(2) or ""), str(v)) for k, v in block.items()}


def _production_env(tmp_path: Path) -> dict[str, str]:
    """What the container sees: the Dockerfile's paths (here under tmp), .env.example, then compose's block."""
    dotenv = _env_file(REPO / ".env.example")
    # .env.example leaves the key empty on purpose (the app refuses to start without one); the README's first step
    # is to set it, as done here.
    dotenv["DJANGO_SECRET_KEY"] = dotenv.get("DJANGO_SECRET_KEY") or secrets.token_urlsafe(50)
    keep = {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}
    paths = {"ECAST_VAR_DIR": str(tmp_path / "data"), "ECAST_STATIC_ROOT": str(tmp_path / "static")}
    return {**keep, **paths, **dotenv, **_compose_environment(dotenv), "DJANGO_SETTINGS_MODULE": "ecast.settings"}


def _manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "manage.py", *args]
    return subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=False)


def _python(env: dict[str, str], code: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-c", "import django; django.setup(); from django.conf import settings as s; " + code]
    return subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=False)


def test_check_deploy_is_clean_under_the_docker_compose_environment(tmp_path):
    env = _production_env(tmp_path)
    assert env["DJANGO_DEBUG"] == "0"
    result = _manage(env, "check", "--deploy", "--fail-level", "DEBUG")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout, result.stdout + result.stderr


def test_production_defaults_are_secure(tmp_path):
    code = (
        "print(s.DEBUG, s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SECURE_HSTS_SECONDS, "
        "s.SECURE_HSTS_INCLUDE_SUBDOMAINS, s.SECURE_PROXY_SSL_HEADER, s.ECAST_TRUSTED_PROXIES)"
    )
    result = _python(_production_env(tmp_path), code)
    assert result.stdout.split() == ["False", "True", "True", "31536000", "True", "None", "0"], result.stderr


def test_security_settings_come_from_the_environment(tmp_path):
    env = {
        **_production_env(tmp_path),
        "DJANGO_SESSION_COOKIE_SECURE": "0",
        "DJANGO_CSRF_COOKIE_SECURE": "0",
        "DJANGO_SECURE_HSTS_SECONDS": "3600",
        "DJANGO_SECURE_PROXY_SSL_HEADER": "HTTP_X_FORWARDED_PROTO",
        "ECAST_TRUSTED_PROXIES": "1",
    }
    code = (
        "print(s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SECURE_HSTS_SECONDS, *s.SECURE_PROXY_SSL_HEADER, "
        "s.ECAST_TRUSTED_PROXIES, s.REST_FRAMEWORK['NUM_PROXIES'])"
    )
    result = _python(env, code)
    assert result.stdout.split() == ["False", "False", "3600", "HTTP_X_FORWARDED_PROTO", "https", "1", "1"], (
        result.stderr
    )


def test_bad_security_values_stop_the_start(tmp_path):
    for name, value in [
        ("DJANGO_SESSION_COOKIE_SECURE", "maybe"),
        ("DJANGO_SECURE_PROXY_SSL_HEADER", "X-Forwarded-Proto"),
        ("ECAST_TRUSTED_PROXIES", "-1"),
        ("ECAST_LOGIN_RATE", "lots"),
        ("ECAST_DB_CONN_MAX_AGE", "forever"),
    ]:
        result = _python({**_production_env(tmp_path), name: value}, "print(s.DEBUG)")
        assert result.returncode != 0 and name in result.stderr, (name, result.stderr[-300:])


def test_a_stale_threshold_a_live_job_could_reach_between_two_heartbeats_stops_the_start(tmp_path):
    env = {
        **_production_env(tmp_path),
        "ECAST_JOB_HEARTBEAT_SECONDS": "10",
        "ECAST_JOB_STALE_SECONDS": "20",
        "ECAST_WORKER_LOST_SECONDS": "30",
    }
    result = _python(env, "print(s.ECAST_JOB_STALE_SECONDS)")
    assert result.returncode != 0 and "ECAST_JOB_STALE_SECONDS (20) must be at least 3" in result.stderr
    result = _python({**env, "ECAST_JOB_STALE_SECONDS": "30"}, "print(s.ECAST_JOB_STALE_SECONDS)")
    assert result.returncode == 0 and result.stdout.strip() == "30", result.stderr[-300:]


def test_a_worker_loss_time_a_live_master_could_reach_between_two_beats_stops_the_start(tmp_path):
    env = {**_production_env(tmp_path), "ECAST_JOB_HEARTBEAT_SECONDS": "10", "ECAST_JOB_STALE_SECONDS": "120"}
    result = _python(env, "print(s.ECAST_WORKER_LOST_SECONDS)")  # the default 15 s is under three 10 s beats
    assert result.returncode != 0 and "ECAST_WORKER_LOST_SECONDS (15) must be at least 3" in result.stderr
    result = _python({**env, "ECAST_WORKER_LOST_SECONDS": "30"}, "print(s.ECAST_WORKER_LOST_SECONDS)")
    assert result.returncode == 0 and result.stdout.strip() == "30", result.stderr[-300:]


def test_the_database_connection_age_comes_from_the_environment(tmp_path):
    env = {**_production_env(tmp_path), "ECAST_DB_CONN_MAX_AGE": "0"}
    result = _python(env, "print(s.DATABASES['default']['CONN_MAX_AGE'])")
    assert result.returncode == 0 and result.stdout.strip().splitlines()[-1] == "0", result.stderr[-300:]


def test_on_postgresql_only_statements_that_ask_are_prepared(tmp_path):
    # psycopg prepares nothing at all when its threshold is None, and after that many runs when it is a count:
    # the one set here lets a cursor that asks prepare, and no count of Django's own statements reaches it.
    result = _python(_production_env(tmp_path), "print(s.DATABASES['default']['OPTIONS']['prepare_threshold'])")
    assert result.returncode == 0 and result.stdout.strip().splitlines()[-1] == str(2**31 - 1), result.stderr[-300:]


def test_the_web_process_imports_every_view_when_it_loads_not_on_its_first_request(tmp_path):
    code = "import sys, ecast.wsgi; print('judging.rating.apis' in sys.modules, 'evaluation.views' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=_production_env(tmp_path),
                            capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert result.returncode == 0 and result.stdout.strip().splitlines()[-1] == "True True", result.stderr[-300:]
