"""Settings, read from the environment with working defaults (SQLite + a file-backed Celery broker).

Every variable is listed in README.md "Configuration". Bad values fail loudly at start.
"""

import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from kombu import Queue

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("ECAST_VAR_DIR", BASE_DIR / "var"))
VAR_DIR.mkdir(parents=True, exist_ok=True)


def _env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    if raw.lower() in {"1", "true", "yes", "on"}:
        return True
    if raw.lower() in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (1/0/true/false), got {raw!r}")


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be an integer, got {raw!r}") from exc


def _env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return float(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be a number, got {raw!r}") from exc


DEBUG = _env_bool("DJANGO_DEBUG", True)
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("DJANGO_SECRET_KEY must be set when DJANGO_DEBUG is off")
    SECRET_KEY = "dev-only-insecure-key-change-me"  # noqa: S105 - development default only
ALLOWED_HOSTS = [h for h in os.environ.get("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost,testserver").split(",") if h]
CSRF_TRUSTED_ORIGINS = [o for o in os.environ.get("DJANGO_CSRF_TRUSTED_ORIGINS", "").split(",") if o]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI assets served locally: /api/docs/ works offline
    "ecast",
    "judging",
    "evaluation",
]

# Sessions, authentication and messages are Django's own, except that they step aside for token-authenticated calls
# to /api/ (ecast.core.middleware says why); everything else gets them unchanged.
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "ecast.core.middleware.SessionMiddleware",
    # Before anything reads a body (CSRF reads request.POST): refuses oversized ones from Content-Length alone.
    "ecast.core.middleware.RequestBodyLimitMiddleware",
    # A NUL byte in the path or a query parameter: 400 naming it (PostgreSQL text cannot hold one).
    "ecast.core.middleware.NulByteMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "ecast.core.middleware.AuthenticationMiddleware",
    "ecast.core.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "ecast.urls"
WSGI_APPLICATION = "ecast.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "ecast.core.permissions.role_context",
            ],
        },
    },
]

DATABASE_URL = os.environ.get("DATABASE_URL", "")
if DATABASE_URL:
    # Each web thread keeps its own connection for ECAST_DB_CONN_MAX_AGE seconds (0: one per request), so a host
    # holds up to workers × threads connections: with more than a few hosts, put a pooler (PgBouncer in transaction
    # mode) in front of PostgreSQL or lower the age.
    conn_max_age = _env_int("ECAST_DB_CONN_MAX_AGE", 60)
    try:
        # Health checks: a kept connection is tested (SELECT 1) before its first use in a request or a task, so a
        # database restart costs a reconnect instead of failing the first request or task of each process.
        DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=conn_max_age, conn_health_checks=True)}
    except Exception as exc:  # dj_database_url raises several types for bad URLs
        raise ImproperlyConfigured(f"DATABASE_URL is not a valid database URL: {exc}") from exc
    if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
        # Statements are prepared only where a cursor asks for it (the rater's hot statements, see
        # judging.rating.statements.prepared_cursor): Django's own cursors bind client-side and never prepare, and
        # with psycopg's default of None nothing could be prepared at all. No count reaches this threshold.
        DATABASES["default"].setdefault("OPTIONS", {}).setdefault("prepare_threshold", 2**31 - 1)
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": str(VAR_DIR / "ecast.sqlite3"),
            # SQLite serialises writers; a generous timeout keeps the worker and the web process from failing
            # with "database is locked" during bursts.
            "OPTIONS": {"timeout": 30, "transaction_mode": "IMMEDIATE"},
        }
    }

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"
SESSION_COOKIE_AGE = _env_int("ECAST_SESSION_SECONDS", 8 * 3600)
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
# With DJANGO_DEBUG=0 the defaults are the production ones (`manage.py check --deploy` is clean); each can be
# overridden. Browsers send Secure cookies to http://localhost, so the Docker set-up still works there.
SESSION_COOKIE_SECURE = _env_bool("DJANGO_SESSION_COOKIE_SECURE", not DEBUG)
CSRF_COOKIE_SECURE = _env_bool("DJANGO_CSRF_COOKIE_SECURE", not DEBUG)
SECURE_HSTS_SECONDS = _env_int("DJANGO_SECURE_HSTS_SECONDS", 0 if DEBUG else 365 * 24 * 3600)
SECURE_HSTS_INCLUDE_SUBDOMAINS = _env_bool("DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", not DEBUG)
SECURE_HSTS_PRELOAD = _env_bool("DJANGO_SECURE_HSTS_PRELOAD", not DEBUG)
# The header a TLS-terminating proxy sets on https requests, e.g. HTTP_X_FORWARDED_PROTO. Unset by default: trusted
# without such a proxy (one that overwrites it), any client could claim https.
_proxy_ssl_header = os.environ.get("DJANGO_SECURE_PROXY_SSL_HEADER", "")
if _proxy_ssl_header and not _proxy_ssl_header.startswith("HTTP_"):
    raise ImproperlyConfigured(
        f"DJANGO_SECURE_PROXY_SSL_HEADER must be a META name like HTTP_X_FORWARDED_PROTO, got {_proxy_ssl_header!r}"
    )
SECURE_PROXY_SSL_HEADER = (_proxy_ssl_header, "https") if _proxy_ssl_header else None
# gunicorn speaks plain HTTP; TLS, and so the http -> https redirect, belongs to the proxy in front of it. Django can
# redirect too (with DJANGO_SECURE_PROXY_SSL_HEADER); while it does not, check --deploy's reminder is silenced.
SECURE_SSL_REDIRECT = _env_bool("DJANGO_SECURE_SSL_REDIRECT", False)
SILENCED_SYSTEM_CHECKS = [] if SECURE_SSL_REDIRECT else ["security.W008"]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
# The Docker image collects static files into the image (outside the data volume) and points here.
STATIC_ROOT = Path(os.environ.get("ECAST_STATIC_ROOT", VAR_DIR / "staticfiles"))
if not STATIC_ROOT.exists() and os.access(STATIC_ROOT.parent, os.W_OK):
    STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # WhiteNoise warns on every request when it is missing
MEDIA_ROOT = VAR_DIR / "media"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Uploads larger than this are refused with a clear message before anything is parsed: a request body announcing
# more (plus room for the form around the file) is refused from its Content-Length before it is read, on every URL.
ECAST_MAX_UPLOAD_BYTES = _env_int("ECAST_MAX_UPLOAD_BYTES", 512 * 1024 * 1024)
# Only admins upload: anyone else's request body (raters' and assessors' forms and JSON are a few kB) is refused
# above this many bytes, before it is read.
ECAST_MAX_FORM_BYTES = _env_int("ECAST_MAX_FORM_BYTES", 256 * 1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024

# Where models for the generation pipeline and cached indexes live (never downloaded at run time).
ECAST_MODEL_DIR = Path(os.environ.get("ECAST_MODEL_DIR", VAR_DIR / "models"))
ECAST_CACHE_DIR = Path(os.environ.get("ECAST_CACHE_DIR", VAR_DIR / "cache"))
# Imports by ir_datasets id read the files ir_datasets keeps under $IR_DATASETS_HOME; off, a missing file fails the
# import with its path instead of being fetched from the internet.
ECAST_IR_DATASETS_DOWNLOAD = _env_bool("ECAST_IR_DATASETS_DOWNLOAD", False)
ECAST_LOGIN_ATTEMPTS = _env_int("ECAST_LOGIN_ATTEMPTS", 10)
# An OpenAI-compatible chat-completion server (vLLM, Ollama, llama.cpp server, TGI, a hosted API) for the "openai"
# generation backend and the LLM judge; a job may name its own. Empty base URL: the backend is "not configured".
ECAST_OPENAI_BASE_URL = os.environ.get("ECAST_OPENAI_BASE_URL", "")
ECAST_OPENAI_MODEL = os.environ.get("ECAST_OPENAI_MODEL", "")
ECAST_OPENAI_API_KEY = os.environ.get("ECAST_OPENAI_API_KEY", "")  # sent as a bearer token; never shown or logged
ECAST_OPENAI_CONCURRENCY = _env_int("ECAST_OPENAI_CONCURRENCY", 4)  # requests at once, per worker process
ECAST_OPENAI_TIMEOUT = _env_float("ECAST_OPENAI_TIMEOUT", 60.0)  # seconds per request
ECAST_OPENAI_RETRIES = _env_int("ECAST_OPENAI_RETRIES", 3)  # further attempts after a 429, 5xx, timeout, bad reply
ECAST_OPENAI_BACKOFF = _env_float("ECAST_OPENAI_BACKOFF", 1.0)  # seconds before the first retry, doubled each next
ECAST_OPENAI_CACHE_SECONDS = _env_int("ECAST_OPENAI_CACHE_SECONDS", 30 * 24 * 3600)  # replies kept in the cache
if ECAST_OPENAI_CONCURRENCY < 1 or ECAST_OPENAI_RETRIES < 0 or ECAST_OPENAI_TIMEOUT <= 0:
    raise ImproperlyConfigured(
        "ECAST_OPENAI_CONCURRENCY must be at least 1, ECAST_OPENAI_RETRIES at least 0, ECAST_OPENAI_TIMEOUT above 0"
    )
# Debounce windows: a burst of judgments triggers one background recompute per area.
# 0: a judgment's turn is recomputed at once when no drain is queued; later judgments coalesce into the next drain.
ECAST_RECOMPUTE_DELAY_S = _env_float("ECAST_RECOMPUTE_DELAY_S", 0.0)
# A full recompute is split into this many Celery tasks per qrels version (runs divided evenly): match the number of
# worker processes so each takes one part.
ECAST_RECOMPUTE_PARTS = _env_int("ECAST_RECOMPUTE_PARTS", 2)
if ECAST_RECOMPUTE_PARTS < 1:
    raise ImproperlyConfigured("ECAST_RECOMPUTE_PARTS must be at least 1")
# How long one live-event stream stays open before the browser reconnects (holds one web thread meanwhile).
ECAST_EVENTS_STREAM_SECONDS = _env_float("ECAST_EVENTS_STREAM_SECONDS", 25.0)
ECAST_PERMUTATION_RESCORE_DEBOUNCE_S = _env_int("ECAST_PERMUTATION_RESCORE_DEBOUNCE_S", 10)
ECAST_ANALYSIS_DEBOUNCE_SECONDS = _env_int("ECAST_ANALYSIS_DEBOUNCE_SECONDS", 30)
# Failed log-ins are counted per (username, IP) within this window; reaching the limit blocks that pair for it.
ECAST_LOGIN_LOCKOUT_SECONDS = _env_int("ECAST_LOGIN_LOCKOUT_SECONDS", 15 * 60)
# Log-in attempts per address, whatever the username (the log-in page and /api/token/obtain/ share the count).
ECAST_LOGIN_RATE = os.environ.get("ECAST_LOGIN_RATE", "20/min")
_rate_count, _, _rate_period = ECAST_LOGIN_RATE.partition("/")
_RATE_PERIODS = {"s", "sec", "second", "m", "min", "minute", "h", "hour", "d", "day"}  # DRF's spellings
if not (_rate_count.isdigit() and int(_rate_count) > 0 and _rate_period in _RATE_PERIODS):
    raise ImproperlyConfigured(
        f"ECAST_LOGIN_RATE must look like 20/min (per s, min, hour or day), got {ECAST_LOGIN_RATE!r}"
    )
# How many reverse proxies in front of the app append to X-Forwarded-For. 0: the header is ignored (a client can
# forge it); n: the client address is the n-th from its right. Used by the log-in limits and DRF's NUM_PROXIES.
ECAST_TRUSTED_PROXIES = _env_int("ECAST_TRUSTED_PROXIES", 0)
if ECAST_TRUSTED_PROXIES < 0:
    raise ImproperlyConfigured(f"ECAST_TRUSTED_PROXIES must be 0 or more, got {ECAST_TRUSTED_PROXIES}")

REST_FRAMEWORK = {
    # Token first: its WWW-Authenticate challenge makes an anonymous call a 401 (session-first answers 403).
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "ecast.core.auth.CachedTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # DRF's negotiation with a shortcut for the plain "Accept: application/json" every script call sends.
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "ecast.core.negotiation.JsonNegotiation",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    # Names nested Input/Output serializers after their view so schema components never collide.
    "DEFAULT_SCHEMA_CLASS": "ecast.core.schema.AutoSchema",
    # One handler turns Django ValidationError and domain errors (ecast.core.errors.DomainError) into responses.
    "EXCEPTION_HANDLER": "ecast.core.rest.exception_handler",
    # Throttles key on X-Forwarded-For only behind this many trusted proxies (None would trust it blindly).
    "NUM_PROXIES": ECAST_TRUSTED_PROXIES,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "ecast API",
    "DESCRIPTION": "Conversational-search test collections: datasets, judging and evaluation.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Several models have a "kind" choice field; name their enums explicitly so schema components are stable.
    "ENUM_NAME_OVERRIDES": {
        "ParaphraseKindEnum": "ecast.models.Paraphrase.Kind",
        "TestSetKindEnum": "ecast.models.TestSet.Kind",
        "GenerationJobStatusEnum": "ecast.models.GenerationJob.Status",
    },
}

# Celery: Redis when REDIS_URL is set; otherwise kombu's SQLAlchemy transport on a local SQLite file, so
# `make run` needs no server. Eager mode is only ever switched on by tests.
REDIS_URL = os.environ.get("REDIS_URL", "")
CELERY_BROKER_URL = REDIS_URL or f"sqla+sqlite:///{VAR_DIR / 'celery-broker.sqlite3'}"
CELERY_RESULT_BACKEND = REDIS_URL or None
CELERY_TASK_IGNORE_RESULT = not bool(REDIS_URL)
CELERY_TASK_ALWAYS_EAGER = _env_bool("ECAST_TASKS_EAGER", False)
CELERY_TASK_EAGER_PROPAGATES = True
# A task is acknowledged when it ends, so a worker that dies mid-task does not lose it: a killed pool process is
# rejected and requeued at once (reject_on_worker_lost); a killed worker's unacknowledged messages come back from
# Redis after the visibility timeout, and the sweeper below re-queues any job whose heartbeat stopped. Every task
# is idempotent per unit of work, so a unit that runs twice writes once.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
# Redis: longer than the longest unit (an 8.8M-line corpus import); a redelivered copy of a unit still running
# elsewhere finds it claimed, or finished, and does nothing. (The SQLite broker has no such option: there the
# sweeper re-queues what a killed worker held.)
VISIBILITY_TIMEOUT_S = _env_int("ECAST_VISIBILITY_TIMEOUT", 3600)
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": VISIBILITY_TIMEOUT_S} if REDIS_URL else {}
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_SERIALIZER = "json"
# Celery's Django fix-up closes the database connections around every task unless this is set, so each task forked
# a fresh PostgreSQL backend and re-read its catalogs (3-5 ms per task, a tenth of a retrieval chunk). A worker keeps
# its connection as a web thread does: ecast.celery closes it between tasks once it is older than
# ECAST_DB_CONN_MAX_AGE or broken; this only makes Celery's own closing rare.
CELERY_DB_REUSE_MAX = 1_000_000
# Jobs beat every ECAST_JOB_HEARTBEAT_SECONDS while a worker runs them, and every worker master beats as often;
# celery beat runs the sweeper every ECAST_SWEEP_SECONDS. It re-queues a job whose worker master has been silent for
# ECAST_WORKER_LOST_SECONDS (a killed worker, a lost machine: back within half a minute), a job silent for
# ECAST_JOB_STALE_SECONDS whatever its master says (a wedged pool process), and fails a job whose worker died
# ECAST_JOB_MAX_RETRIES times (a file that kills the worker every time must not loop forever).
ECAST_JOB_HEARTBEAT_SECONDS = _env_int("ECAST_JOB_HEARTBEAT_SECONDS", 5)
ECAST_WORKER_LOST_SECONDS = _env_int("ECAST_WORKER_LOST_SECONDS", 15)
ECAST_JOB_STALE_SECONDS = _env_int("ECAST_JOB_STALE_SECONDS", 120)
ECAST_JOB_MAX_RETRIES = _env_int("ECAST_JOB_MAX_RETRIES", 3)
# A unit that meets a lost database or broker connection, a serialization failure or a deadlock is run again in the
# same worker this many times, after 0.5, 1, 2, 4 … s (capped at 8 s), before the error ends the job.
ECAST_JOB_TRANSIENT_RETRIES = _env_int("ECAST_JOB_TRANSIENT_RETRIES", 4)
ECAST_SWEEP_SECONDS = _env_int("ECAST_SWEEP_SECONDS", 5)
for _name, _value in (
    ("ECAST_JOB_STALE_SECONDS", ECAST_JOB_STALE_SECONDS),
    ("ECAST_WORKER_LOST_SECONDS", ECAST_WORKER_LOST_SECONDS),
):
    if _value < 3 * ECAST_JOB_HEARTBEAT_SECONDS:
        # A live job or master misses a beat now and then (a busy machine); the sweeper must not take that for death.
        raise ImproperlyConfigured(
            f"{_name} ({_value}) must be at least 3 × ECAST_JOB_HEARTBEAT_SECONDS ({ECAST_JOB_HEARTBEAT_SECONDS})"
        )
CELERY_BEAT_SCHEDULE = {
    "sweep-stale-jobs": {"task": "ecast.jobs_sweep", "schedule": float(ECAST_SWEEP_SECONDS)},
    "expire-rating-leases": {"task": "judging.rating.leases_expire", "schedule": 600.0},
}
CELERY_ACCEPT_CONTENT = ["json"]

# Two queues, so that a long job never starves the short ones: LLM labelling, generation, permutation experiments,
# test-set baselines and analyses (budget simulations among them) run on the "long" queue; imports, score
# recomputes, pool builds and housekeeping stay on the default one. `make run` and docker compose start a worker
# for each queue, so an hours-long LLM job leaves a worker free for a score recompute or an import.
CELERY_TASK_DEFAULT_QUEUE = "celery"
ECAST_LONG_QUEUE = "long"
ECAST_LONG_TASKS = (
    "judging.llm.run",
    "ecast.generation.dispatch",
    "ecast.generation.chunk",
    "evaluation.permutations.chunk",
    "evaluation.permutations.experiment_score",
    "evaluation.robustness.test_set_baseline",
    "evaluation.analysis_compute",
)
CELERY_TASK_ROUTES = {name: {"queue": ECAST_LONG_QUEUE} for name in ECAST_LONG_TASKS}
# Both queues declared: a worker started without -Q (tests, a single extra machine) serves both; -Q picks one. Each
# has its own routing key: with one key for both, the direct exchange would deliver every message to both queues.
CELERY_TASK_QUEUES = [Queue(name, routing_key=name) for name in (CELERY_TASK_DEFAULT_QUEUE, ECAST_LONG_QUEUE)]

if REDIS_URL:
    # ecast.core.cache.RedisCache: Django's backend reusing one Redis client per pool (it builds one per call).
    # Keys carry the name of the database they describe (ecast.core.cache.database_key): a test run and a server, or a
    # database and its restored copy, sharing one Redis database never read each other's campaigns, whose ids repeat.
    CACHES = {
        "default": {
            "BACKEND": "ecast.core.cache.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_FUNCTION": "ecast.core.cache.database_key",
            # An unreachable Redis fails a call within seconds: the token look-up and log-in counting then go on
            # without it (ecast.core.cache) instead of holding a web thread.
            "OPTIONS": {"socket_connect_timeout": 2, "socket_timeout": 5},
        }
    }
else:
    # File cache is shared by the web process and the local worker (debounce tokens, progress).
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(VAR_DIR / "cache" / "django"),
            # Django's default of 300 entries would cull a model server's reply cache in the middle of one job.
            "OPTIONS": {"MAX_ENTRIES": 20_000},
        }
    }

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("ECAST_LOG_LEVEL", "INFO")},
}
