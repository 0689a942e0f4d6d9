"""Settings, read from the environment with working defaults (SQLite + a file-backed Celery broker).

Every variable is listed in README.md "Configuration". Bad values fail loudly at start.
"""

import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

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

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
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
                "ecast.permissions.role_context",
            ],
        },
    },
]

DATABASE_URL = os.environ.get("DATABASE_URL", "")
if DATABASE_URL:
    try:
        DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60)}
    except Exception as exc:  # dj_database_url raises several types for bad URLs
        raise ImproperlyConfigured(f"DATABASE_URL is not a valid database URL: {exc}") from exc
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

# Uploads larger than this are refused with a clear message before anything is parsed.
ECAST_MAX_UPLOAD_BYTES = _env_int("ECAST_MAX_UPLOAD_BYTES", 512 * 1024 * 1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024

# Where models for the generation pipeline and cached indexes live (never downloaded at run time).
ECAST_MODEL_DIR = Path(os.environ.get("ECAST_MODEL_DIR", VAR_DIR / "models"))
ECAST_CACHE_DIR = Path(os.environ.get("ECAST_CACHE_DIR", VAR_DIR / "cache"))
ECAST_LOGIN_ATTEMPTS = _env_int("ECAST_LOGIN_ATTEMPTS", 10)
# Debounce windows: a burst of judgments triggers one background recompute per area.
ECAST_RECOMPUTE_DELAY_S = _env_int("ECAST_RECOMPUTE_DELAY_S", 2)
ECAST_PERMUTATION_RESCORE_DEBOUNCE_S = _env_int("ECAST_PERMUTATION_RESCORE_DEBOUNCE_S", 10)
ECAST_ANALYSIS_DEBOUNCE_SECONDS = _env_int("ECAST_ANALYSIS_DEBOUNCE_SECONDS", 30)
# Failed log-ins are counted per (username, IP) within this window; reaching the limit blocks that pair for it.
ECAST_LOGIN_LOCKOUT_SECONDS = _env_int("ECAST_LOGIN_LOCKOUT_SECONDS", 15 * 60)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "rest_framework.authentication.TokenAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    # Names nested Input/Output serializers after their view so schema components never collide.
    "DEFAULT_SCHEMA_CLASS": "ecast.schema.AutoSchema",
    # One handler turns Django ValidationError and domain errors (ecast.errors.DomainError) into responses.
    "EXCEPTION_HANDLER": "ecast.rest.exception_handler",
    "DEFAULT_THROTTLE_RATES": {"login": os.environ.get("ECAST_LOGIN_RATE", "20/min")},
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
CELERY_TASK_ACKS_LATE = True  # a killed worker's task is redelivered; tasks are idempotent per unit of work
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]

if REDIS_URL:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}}
else:
    # File cache is shared by the web process and the local worker (debounce tokens, progress).
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(VAR_DIR / "cache" / "django"),
        }
    }

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("ECAST_LOG_LEVEL", "INFO")},
}
