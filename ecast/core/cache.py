"""Django's Redis cache with one Redis client per connection pool instead of one per call, and keys per database.

Django builds a new ``redis.Redis`` object for every cache operation; its constructor (response callbacks, options)
costs about as much CPU as the round trip itself, and every API call makes one or two cache reads (the token, the
campaign). A ``redis.Redis`` object is safe to share: it takes a connection from its pool for each command.

While Redis is unreachable, what only reads through the cache (the API-token look-up, the log-in counters) goes on
without it: :data:`CACHE_DOWN` names the errors, :func:`cache_down` logs them at most once a minute per process and
:func:`cache_recently_down` lets callers skip Redis for a few seconds instead of trying it on every request.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from functools import lru_cache
from typing import Any

from django.core.cache.backends.redis import RedisCache as DjangoRedisCache
from django.core.cache.backends.redis import RedisCacheClient
from django.db import DEFAULT_DB_ALIAS, connections
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

logger = logging.getLogger(__name__)

# What a cache call raises while Redis is down or unreachable (redis-py's own classes, not the built-in ones).
CACHE_DOWN = (RedisConnectionError, RedisTimeoutError)
# After a failure, callers that can do without the cache skip it this long rather than pay a failed connect per call.
RETRY_AFTER_S = 5.0
WARN_EVERY_S = 60.0

_down = {"since": 0.0, "warned": 0.0}
_down_lock = threading.Lock()


def cache_down(what: str, exc: BaseException) -> None:
    """Record that the cache failed while doing ``what``; logs a warning at most once a minute per process."""
    now = time.monotonic()
    with _down_lock:
        _down["since"] = now
        warn = now - _down["warned"] >= WARN_EVERY_S or not _down["warned"]
        if warn:
            _down["warned"] = now
    if warn:
        logger.warning("cache unavailable (%s): %s; going on without it (warned at most once a minute)", what, exc)


def cache_recently_down() -> bool:
    """Whether the cache failed within the last ``RETRY_AFTER_S`` seconds in this process."""
    since = _down["since"]
    return bool(since) and time.monotonic() - since < RETRY_AFTER_S


class ReusedClientRedisCacheClient(RedisCacheClient):
    # Django's own client, whose private helpers the stubs do not declare.
    def get_client(self, key: Any = None, *, write: bool = False) -> Any:
        index = self._get_connection_pool_index(write)  # type: ignore[attr-defined]
        clients = self.__dict__.setdefault("_clients", {})
        if index not in clients:
            pool = self._get_connection_pool(write)  # type: ignore[attr-defined]
            clients[index] = self._client(connection_pool=pool)  # type: ignore[attr-defined]
        return clients[index]


class RedisCache(DjangoRedisCache):
    """``django.core.cache.backends.redis.RedisCache``, reusing its Redis clients."""

    def __init__(self, server: Any, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = ReusedClientRedisCacheClient


@lru_cache(maxsize=16)
def _database_tag(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()[:12]


def database_key(key: str, key_prefix: str, version: int) -> str:
    """Django's key layout (prefix:version:key) behind a tag of the default database's name, read at each call so a
    test run's processes, which switch to the test database after start-up, agree on it."""
    name = str(connections[DEFAULT_DB_ALIAS].settings_dict.get("NAME") or "")
    return f"{_database_tag(name)}:{key_prefix}:{version}:{key}"
