"""Test settings: the real settings, with tasks run eagerly unless a test starts a real worker."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from ecast.settings import *  # noqa: E402,F403
from ecast.settings import VAR_DIR  # noqa: E402

CELERY_TASK_ALWAYS_EAGER = True
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # speed only; never in the app
if not os.environ.get("REDIS_URL"):
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
MEDIA_ROOT = VAR_DIR / "test-media"
# Many tests log in from the test client's one address; the per-address limit's own tests set the real rate.
ECAST_LOGIN_RATE = "1000/min"
# An event stream ends this soon (the browser reconnects and misses nothing), so when a browser test ends, the
# stream its page had open finishes within seconds and the test's teardown waits for it (tests/conftest.py).
ECAST_EVENTS_STREAM_SECONDS = 2.0
