"""The one way to queue background work, and the one debounce.

Tasks are queued by their registered name, so a service never imports the tasks module that imports it. A debounced
task runs once, ``delay`` seconds after the first request; requests that arrive before it starts fold into that run,
and the task calls :func:`debounce_release` as it starts so later requests schedule the next run. Latency is bounded
by ``delay`` even under a steady stream of requests (a trailing debounce would postpone forever).

No job is lost when a worker dies: units run inside :func:`job_unit` (heartbeat, and a claim where a unit must not
run twice at once), and :func:`jobs_sweep` re-queues what went silent (see the section below).
"""

from __future__ import annotations

import logging
import os
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from celery import current_app, current_task
from django.conf import settings
from django.core.cache import cache
from django.db import DatabaseError, InterfaceError, OperationalError, connection, connections

from ecast.core.models import Job
from ecast.models import JobRecovery

log = logging.getLogger(__name__)
T = TypeVar("T")

# The mark outlives its window by this much: if a worker dies before releasing it, the next request schedules anew.
DEBOUNCE_GRACE_S = 120


def enqueue(task_name: str, *args: Any, countdown: float | None = None) -> Any:
    """Queue the registered task ``task_name`` with ``args`` (run at once in eager mode, as the tests do)."""
    return current_app.tasks[task_name].apply_async(args=list(args), countdown=countdown)


def debounce_key(key: str) -> str:
    return f"ecast:debounce:{key}"


def debounce(key: str, task_name: str, *args: Any, delay: float) -> bool:
    """Queue ``task_name(*args)`` in ``delay`` seconds unless a run for ``key`` is already queued; True if queued."""
    # cache.add is atomic (also on Redis and the file cache shared with the local worker): one caller wins.
    if cache.add(debounce_key(key), "1", timeout=int(delay) + DEBOUNCE_GRACE_S):
        enqueue(task_name, *args, countdown=delay)
        return True
    return False


def debounce_release(key: str) -> None:
    """Called by a debounced task as it starts: requests from now on schedule another run."""
    cache.delete(debounce_key(key))


# --- surviving worker death -----------------------------------------------------------------------------------
#
# A unit of work (an import, a generation chunk, a pool build, …) runs inside ``job_unit``: a thread records a
# heartbeat in the shared cache every ECAST_JOB_HEARTBEAT_SECONDS, and an exclusive unit also holds a PostgreSQL
# advisory lock, which the database releases the moment the worker's connection dies, so a redelivered copy can
# take over at once while a duplicate of a unit still running elsewhere does nothing. Each feature registers its
# job kind (which jobs should be running, how to resume one, how to fail one); ``jobs_sweep``, run by celery beat,
# re-queues the unfinished units of any job silent for ECAST_JOB_STALE_SECONDS.


@dataclass(frozen=True)
class JobKind:
    """A kind of background job the sweeper watches.

    ``active()`` yields ``(job id, since)`` for every job that should be queued or running (``since``: when it was
    created or last queued); ``resume(id)`` re-queues its unfinished units and says what it queued; ``fail(id,
    reason)`` ends it with that reason shown on its page. ``model``: the :class:`ecast.core.models.Job` subclass
    whose rows are this kind's jobs (None for a kind whose unit is not a job row, e.g. the per-version drain of
    re-judged turns); its progress is then served at ``/jobs/<name>/<id>/progress/``, with ``detail(job)`` adding
    what only this kind's page shows.
    """

    name: str
    active: Callable[[], Iterable[tuple[int, datetime]]]
    resume: Callable[[int], str]
    fail: Callable[[int, str], None]
    model: type[Job] | None = None
    detail: Callable[[Any], dict[str, Any]] | None = None


KINDS: dict[str, JobKind] = {}


def register_kind(kind: JobKind) -> JobKind:
    """Let the sweeper watch jobs of ``kind`` (called by each feature's tasks module)."""
    if kind.model is not None and kind.model.job_kind != kind.name:
        raise ValueError(f"{kind.model.__name__}.job_kind is {kind.model.job_kind!r}, registered as {kind.name!r}")
    KINDS[kind.name] = kind
    return kind


def heartbeat_key(kind: str, job_id: int) -> str:
    return f"ecast:job:{kind}:{job_id}:heartbeat"


def heartbeat_beat(kind: str, job_id: int, worker: str = "") -> None:
    """Record that a live worker (``worker``: its :func:`worker_identity`, "" when unknown) is on the job now."""
    # Kept a week so a page can say when a dead job last beat; the sweeper only compares its age.
    cache.set(heartbeat_key(kind, job_id), (time.time(), worker), timeout=7 * 24 * 3600)


def beat_read(value: Any) -> tuple[datetime | None, str]:
    """A stored heartbeat as (when, which worker); a bare timestamp has no worker."""
    if isinstance(value, list | tuple) and value:
        when, worker = value[0], str(value[1] if len(value) > 1 else "")
    else:
        when, worker = value, ""
    if not isinstance(when, int | float) or not when:
        return None, ""
    return datetime.fromtimestamp(when, tz=UTC), worker


def last_heartbeat(kind: str, job_id: int) -> datetime | None:
    return beat_read(cache.get(heartbeat_key(kind, job_id)))[0]


@contextmanager
def heartbeat(kind: str, job_id: int) -> Iterator[None]:
    """Beat now and every ECAST_JOB_HEARTBEAT_SECONDS until the body ends, from a thread (a long C call or a
    long database statement in the body does not stop it)."""
    interval = max(0.2, float(settings.ECAST_JOB_HEARTBEAT_SECONDS))
    worker = worker_identity()
    heartbeat_beat(kind, job_id, worker)
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(interval):
            try:
                heartbeat_beat(kind, job_id, worker)
            except Exception:  # noqa: BLE001 - a cache hiccup must not kill the work; the next beat retries
                log.warning("heartbeat of %s %s failed", kind, job_id, exc_info=True)

    thread = threading.Thread(target=loop, name=f"heartbeat-{kind}-{job_id}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=interval + 5)
        heartbeat_beat(kind, job_id, worker)


# --- which worker runs a job, and is it alive ---------------------------------------------------------------------
#
# A job's heartbeat comes from a thread of the process that runs it, and a long job can keep that process busy; the
# sweeper therefore waits ECAST_JOB_STALE_SECONDS before it calls a silent job lost. A dead worker *master* is
# known sooner: every master beats its own liveness key (from a thread of the master, which runs no task in a
# prefork pool), and a job whose last heartbeat names a master silent for ECAST_WORKER_LOST_SECONDS is re-queued
# then. Identities carry the master's pid, because a restarted worker keeps its node name.


def worker_identity() -> str:
    """``node#pid`` of the worker master running the current task, or "" outside a worker (eager runs, the web)."""
    request = getattr(current_task, "request", None)
    hostname = getattr(request, "hostname", None)
    if not hostname or getattr(request, "is_eager", False):
        return ""
    from billiard.process import current_process

    master = os.getpid() if current_process().name == "MainProcess" else os.getppid()
    return f"{hostname}#{master}"


def worker_key(worker: str) -> str:
    return f"ecast:worker:{worker}:alive"


def worker_beat(worker: str) -> None:
    cache.set(worker_key(worker), time.time(), timeout=24 * 3600)


def worker_seen(worker: str) -> datetime | None:
    """When the master ``worker`` last said it was alive (None: never, or it stopped cleanly)."""
    return beat_read(cache.get(worker_key(worker)))[0]


class WorkerLiveness:
    """The master's liveness beat: started when a worker is ready, stopped (and its key removed) at shutdown."""

    def __init__(self, hostname: str) -> None:
        self.worker = f"{hostname}#{os.getpid()}"
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.loop, name="worker-liveness", daemon=True)

    def loop(self) -> None:
        interval = max(0.2, float(settings.ECAST_JOB_HEARTBEAT_SECONDS))
        while True:
            try:
                worker_beat(self.worker)
            except Exception:  # noqa: BLE001 - a cache hiccup must not stop the beat; the next one retries
                log.warning("the liveness beat of worker %s failed", self.worker, exc_info=True)
            if self.stop.wait(interval):
                return

    def start(self) -> None:
        worker_beat(self.worker)  # alive from the moment it is ready, not from the thread's first turn
        self.thread.start()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=5)
        try:
            cache.delete(worker_key(self.worker))
        except Exception:  # noqa: BLE001 - shutting down: the key then ages out, which reads the same
            log.warning("could not remove the liveness key of worker %s", self.worker, exc_info=True)


CLAIM_WAIT_S = 3.0


def advisory_key(kind: str) -> int:
    """A stable 31-bit number for a job kind (the first half of a two-part PostgreSQL advisory lock key)."""
    return zlib.crc32(kind.encode()) & 0x7FFFFFFF


@contextmanager
def exclusive(kind: str, job_id: int, *, wait: float | None = None, shared: bool = False) -> Iterator[bool]:
    """Yield True if this process may run the job now, False while another live worker runs it.

    On PostgreSQL a session advisory lock decides, and the database drops it when its holder's connection dies. The
    embedded SQLite setup runs one worker process, which never runs two tasks at once, so it always yields True.
    ``wait`` (default CLAIM_WAIT_S) is how long to keep asking before concluding the holder is alive. ``shared``:
    any number of shared holders run together, but never beside a holder of the plain (exclusive) lock.
    """
    if connection.vendor != "postgresql":
        yield True
        return
    got = False
    mode = "_shared" if shared else ""
    # A holder whose process just died keeps its lock until its database backend notices the closed connection
    # (milliseconds, sometimes more): a redelivered copy asks a few times before it concludes the holder is alive.
    deadline = time.monotonic() + (CLAIM_WAIT_S if wait is None else wait)
    while True:
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT pg_try_advisory_lock{mode}(%s, %s)", [advisory_key(kind), job_id])
            got = bool(cursor.fetchone()[0])
        if got or time.monotonic() >= deadline:
            break
        time.sleep(0.25)
    try:
        yield got
    finally:
        if got:
            try:
                with connection.cursor() as cursor:
                    cursor.execute(f"SELECT pg_advisory_unlock{mode}(%s, %s)", [advisory_key(kind), job_id])
            except DatabaseError:  # the connection died: the lock went with it
                log.warning("%s %s: its claim ended with its database connection", kind, job_id)


def redelivered() -> bool:
    """True when the running task's message came back from the broker (its first worker died or was slow)."""
    task = current_task
    info = getattr(getattr(task, "request", None), "delivery_info", None) or {}
    return bool(info.get("redelivered"))


NOT_READ = object()


def recovery_record(kind: str, job_id: int, reason: str, detail: str, beat: Any = NOT_READ) -> JobRecovery:
    """Record a recovery with the job's last heartbeat (``beat``, when the caller knows which run it belongs to)."""
    last = last_heartbeat(kind, job_id) if beat is NOT_READ else beat
    return JobRecovery.objects.create(
        kind=kind, job_id=job_id, reason=reason, detail=detail[:2000], last_heartbeat=last
    )


def job_unit(kind: str, job_id: int, work: Callable[[], T], *, claim: bool = False) -> T | None:
    """Run one unit of work of a job in the worker, beating while it runs.

    With ``claim``, the job runs in one worker at a time: a copy that finds it running elsewhere returns None at
    once (the holder is alive: its lock would be gone otherwise). A unit the broker redelivered after its worker
    died is recorded, so the job's page says it was retried. A unit that meets a transient database or broker error
    (:func:`transient`) runs again after a back-off, on fresh connections and with its claim taken anew, up to
    ECAST_JOB_TRANSIENT_RETRIES times; each retry is recorded. Units are idempotent, so running one again is safe.
    """
    for attempt in range(int(settings.ECAST_JOB_TRANSIENT_RETRIES) + 1):
        try:
            return unit_once(kind, job_id, work, claim=claim, first=attempt == 0)
        except Exception as exc:
            # Inside a caller's transaction the whole transaction is lost with the connection: only it can retry.
            if not transient(exc) or connection.in_atomic_block or attempt >= settings.ECAST_JOB_TRANSIENT_RETRIES:
                raise
            wait = min(8.0, 0.5 * 2**attempt)
            log.warning("%s %s met %s: %s; running it again in %.1f s", kind, job_id, type(exc).__name__, exc, wait)
            time.sleep(wait)
            connections_reset()
            try:
                detail = f"{type(exc).__name__}: {exc}".strip()[:500] + f" — ran the unit again after {wait:.1f} s"
                recovery_record(kind, job_id, JobRecovery.Reason.TRANSIENT, detail)
            except DatabaseError:  # still down: the next attempt finds out and backs off again
                connections_reset()
    raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises


def running_task_id() -> str:
    """The id of the task message this worker runs now ("" outside a task); a redelivered message keeps its id."""
    return str(getattr(getattr(current_task, "request", None), "id", None) or "")


def unit_started_key(task_id: str) -> str:
    return f"ecast:unit:{task_id}:started"


def unit_once(kind: str, job_id: int, work: Callable[[], T], *, claim: bool, first: bool) -> T | None:
    with exclusive(kind, job_id) if claim else nullcontext(True) as mine:
        if not mine:
            log.info("%s %s is running in another worker; this copy does nothing", kind, job_id)
            return None
        task_id = running_task_id()
        if first and redelivered():
            redelivery_record(kind, job_id, task_id)
        if task_id:
            # Marks that this message was started: if it comes back, its worker died under it (a message a worker
            # returned unstarted at a clean shutdown comes back without the mark).
            cache.set(unit_started_key(task_id), "1", timeout=int(settings.VISIBILITY_TIMEOUT_S) + 24 * 3600)
        try:
            with heartbeat(kind, job_id):
                return work()
        finally:
            if task_id:
                cache.delete(unit_started_key(task_id))


def redelivery_record(kind: str, job_id: int, task_id: str) -> None:
    """Say why the broker delivered a unit again: its worker died running it, or a worker that stopped (a clean
    shutdown, a restart) handed it back before starting it."""
    if task_id and cache.get(unit_started_key(task_id)):
        detail = "its worker died while running this unit; the broker delivered it again"
        recovery_record(kind, job_id, JobRecovery.Reason.WORKER_LOST, detail)
    else:
        detail = "a worker that stopped handed this unit back before starting it; the broker delivered it again"
        recovery_record(kind, job_id, JobRecovery.Reason.REQUEUED, detail)


# SQLSTATEs a retry may cure: serialization failure, deadlock, the server shutting the session down, lost
# connections (PostgreSQL's "08" class).
TRANSIENT_SQLSTATES = {"40001", "40P01", "57P01", "57P02", "57P03", "08000", "08003", "08006", "08001", "08004"}


def transient(exc: BaseException) -> bool:
    """True for a failure that running the unit again may cure: a lost database or broker connection, a
    serialization failure, a deadlock, a locked SQLite file; False for everything else (bugs, bad input)."""
    from kombu.exceptions import OperationalError as BrokerError
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import TimeoutError as RedisTimeoutError

    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, BrokerError | RedisConnectionError | RedisTimeoutError):
            return True
        if isinstance(current, InterfaceError):  # "connection already closed"
            return True
        if isinstance(current, OperationalError):
            cause = current.__cause__
            state = getattr(cause, "sqlstate", None) or getattr(cause, "pgcode", None)
            if state is not None:
                return state in TRANSIENT_SQLSTATES
            text = str(current).lower()
            # psycopg's lost connection has no SQLSTATE; SQLite's only transient error is a locked file.
            return "locked" in text or "connection" in text or "server closed" in text or "terminat" in text
        current = current.__cause__ or current.__context__
    return False


def reraise_transient(exc: BaseException) -> None:
    """Called first in a catch-all that would fail the job: lets a transient error reach :func:`job_unit`."""
    if transient(exc):
        raise exc


def connections_reset() -> None:
    """Close every database connection (the next query opens a fresh one), as after a lost connection."""
    for conn in connections.all(initialized_only=True):
        try:
            conn.close()
        except DatabaseError:
            log.debug("closing a broken connection failed", exc_info=True)


def broker_backlog() -> int:
    """Messages waiting in all the app's queues (those counted before a broker error; 0 if it cannot tell).

    Every queue counts: a job routed to the long queue waits there behind a long job while the default queue is
    empty, and must not be queued a second time (two copies would then run one after the other).
    """
    waiting = 0
    try:
        with current_app.connection_for_read() as conn:
            for name in current_app.amqp.queues:
                try:
                    waiting += int(conn.default_channel.queue_declare(queue=name, passive=True).message_count)
                except conn.channel_errors:
                    continue  # the broker has no such queue yet (Redis drops an empty list): nothing waits there
    except Exception:  # noqa: BLE001 - a broker error must not stop the sweep
        log.warning("the sweeper could not count the messages waiting on the broker", exc_info=True)
    return waiting


def jobs_sweep(*, now: datetime | None = None) -> list[dict[str, Any]]:
    """Re-queue every job whose worker went silent, or fail it after ECAST_JOB_MAX_RETRIES losses; returns actions.

    A job counts as silent when neither a heartbeat, nor its creation or its last queueing, nor its last recovery is
    newer than ECAST_JOB_STALE_SECONDS. A job that has not beaten since it was last queued is waiting its turn, not
    lost: it is only re-queued (as "re-queued", never "retried after worker loss") when every queue is empty, and
    the worker losses that make the sweeper give up are counted since then.
    """
    # One sweep at a time, even if two beat processes run by mistake.
    if not cache.add("ecast:jobs-sweep", "1", timeout=max(30, int(settings.ECAST_SWEEP_SECONDS))):
        return []
    try:
        return sweep_once(now=now or datetime.now(tz=UTC))
    finally:
        cache.delete("ecast:jobs-sweep")


def queued_times(kind: JobKind, ids: list[int]) -> dict[int, datetime]:
    """When each of ``ids`` was last queued again, for a kind whose jobs are rows (one query)."""
    if kind.model is None or not ids:
        return {}
    rows = kind.model._default_manager.filter(pk__in=ids, queued_at__isnull=False).values_list("pk", "queued_at")
    return {int(pk): at for pk, at in rows if at is not None}


def since_epoch(epoch: datetime | None) -> dict[str, datetime]:
    """A filter on recoveries: those of the job's current run only (all of them before it was ever queued again)."""
    return {"created_at__gte": epoch} if epoch is not None else {}


def sweep_once(*, now: datetime) -> list[dict[str, Any]]:
    stale = timedelta(seconds=settings.ECAST_JOB_STALE_SECONDS)
    lost = timedelta(seconds=settings.ECAST_WORKER_LOST_SECONDS)
    backlog: int | None = None
    actions: list[dict[str, Any]] = []
    for kind in list(KINDS.values()):
        active = list(kind.active())
        queued = queued_times(kind, [job_id for job_id, _ in active])
        for job_id, since in active:
            epoch = queued.get(job_id)
            beat, worker = beat_read(cache.get(heartbeat_key(kind.name, job_id)))
            if beat is not None and epoch is not None and beat < epoch:
                beat, worker = None, ""  # a beat of an earlier run: this run has not started, it waits in the queue
            latest = JobRecovery.objects.filter(kind=kind.name, job_id=job_id).order_by("-created_at").first()
            reference = max(t for t in (since, epoch, beat, latest.created_at if latest else None) if t is not None)
            quiet = int((now - reference).total_seconds())
            silent = (
                f"no heartbeat for {quiet} s" if beat is not None else f"waited {quiet} s with no worker starting it"
            )
            limit = stale
            if worker and now - reference >= lost:
                seen = worker_seen(worker)
                if seen is None or now - seen >= lost:
                    # Its master is gone (killed, or its machine): no need to wait out a long job's quiet spell.
                    limit = lost
                    gone = f"since {seen:%H:%M:%S} UTC" if seen else "and it stopped"
                    silent = f"its worker {worker} has not answered {gone}; {silent}"
            if now - reference < limit:
                continue
            if beat is None:
                backlog = broker_backlog() if backlog is None else backlog
                if backlog:
                    continue
            losses = JobRecovery.objects.filter(
                kind=kind.name, job_id=job_id, reason=JobRecovery.Reason.WORKER_LOST, **since_epoch(epoch)
            ).count()
            if beat is not None and losses >= settings.ECAST_JOB_MAX_RETRIES:
                reason = (
                    f"its worker died {losses + 1} times (last heartbeat {beat:%Y-%m-%d %H:%M:%S} UTC); "
                    "not retried again — look for what kills the worker (memory, a crashing model) and retry"
                )
                kind.fail(job_id, reason)
                recovery_record(kind.name, job_id, JobRecovery.Reason.GAVE_UP, reason, beat)
                actions.append({"kind": kind.name, "job": job_id, "action": "failed", "detail": reason})
                continue
            detail = f"{silent}; {kind.resume(job_id)}"
            reason = JobRecovery.Reason.WORKER_LOST if beat is not None else JobRecovery.Reason.REQUEUED
            recovery_record(kind.name, job_id, reason, detail, beat)  # None: an earlier run's beat is not this one's
            if worker:
                # The dead master is dealt with: until a new worker beats, the job waits out the usual stale time
                # (a re-queued unit may wait behind others) instead of being taken for lost again every few seconds.
                cache.set(
                    heartbeat_key(kind.name, job_id), (beat.timestamp() if beat else 0, ""), timeout=7 * 24 * 3600
                )
            log.warning("job %s %s: %s", kind.name, job_id, detail)
            actions.append({"kind": kind.name, "job": job_id, "action": str(reason), "detail": detail})
    return actions


# --- what job pages and APIs show about worker loss ------------------------------------------------------------


def jobs_health(kind: str, ids: Iterable[int]) -> dict[int, dict[str, Any]]:
    """What job pages and APIs show about worker loss, for many jobs of one kind at once (one cache read, one
    query per table), by job id.

    Each value: ``last_heartbeat`` of the job's current run (None while a job queued again waits for a worker, even
    if an earlier run beat), ``worker_loss_retries`` of the current run and ``recoveries`` (``at``, ``reason``,
    ``label``, ``detail``, ``last_heartbeat``) of every run, oldest first.
    """
    wanted = list(dict.fromkeys(int(i) for i in ids))
    if not wanted:
        return {}
    registered = KINDS.get(kind)
    epochs = queued_times(registered, wanted) if registered is not None else {}
    keys = {heartbeat_key(kind, job_id): job_id for job_id in wanted}
    beats = cache.get_many(list(keys))
    out: dict[int, dict[str, Any]] = {}
    for key, job_id in keys.items():
        beat = beat_read(beats.get(key))[0]
        epoch = epochs.get(job_id)
        if beat is not None and epoch is not None and beat < epoch:
            beat = None  # the previous run's: this one has not started
        out[job_id] = {"last_heartbeat": beat, "worker_loss_retries": 0, "recoveries": []}
    for r in JobRecovery.objects.filter(kind=kind, job_id__in=wanted).order_by("created_at", "id"):
        health = out[r.job_id]
        epoch = epochs.get(r.job_id)
        current = epoch is None or r.created_at >= epoch
        health["worker_loss_retries"] += r.reason == JobRecovery.Reason.WORKER_LOST and current
        health["recoveries"].append(
            {
                "at": r.created_at,
                "reason": r.reason,
                "label": r.get_reason_display(),
                "detail": r.detail,
                "last_heartbeat": r.last_heartbeat,
            }
        )
    return out


def job_health(kind: str, job_id: int) -> dict[str, Any]:
    """Last heartbeat and recoveries of one job (see :func:`jobs_health`)."""
    return jobs_health(kind, [job_id])[int(job_id)]
