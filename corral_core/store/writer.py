"""The store's one writer thread: an `EventSink` that turns events into rows in batched commits.

Emitting threads only put events on a bounded queue. The writer thread takes up to `batch_size`
events, or whatever arrived within `batch_interval` seconds, and writes them in one transaction
(SQLite commits per row are ~5x slower). When the queue is full, ordinary events are dropped and
counted after a short wait; TRIAL_STARTED and TRIAL_FINISHED are never dropped, because resume and
metrics depend on them.

The store never reports success for work it did not keep. A batch the database refuses is retried
while the cause looks passing (a lock held by another process, a dropped connection); if it is
still refused, the writer *fails*: it records a StoreError in `failure`, tells its `on_failure`
listeners (the runner stops the run), and writes nothing more, so what is committed stays a
consistent state to resume from (a trial whose finish was not written is still `running` there
and runs again on resume).

Fencing: a run registers its benchmark's fencing token (`fence`). Every batch that writes a trial of
that benchmark first checks, in its own transaction, that the token is still the benchmark's
(corral_core.store.ownership). When another process has claimed the benchmark since, none of that
benchmark's events is written, now or later, and the `on_lost` listeners are told (the runner stops).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError, IntegrityError

from corral_core.errors import StoreError
from corral_core.events import (
    Event,
    EventKind,
)
from corral_core.safetext import clean
from corral_core.store import event_rows as rows
from corral_core.store.apply import EventApplier
from corral_core.store.database import store_error, write_transaction
from corral_core.store.ownership import OwnershipLost
from corral_core.store.repository import check_owner

log = logging.getLogger(__name__)

NEVER_DROPPED = frozenset({EventKind.TRIAL_STARTED, EventKind.TRIAL_FINISHED})
WRITTEN_KINDS = frozenset(
    {
        EventKind.TRIAL_STARTED,
        EventKind.TRIAL_FINISHED,
        EventKind.MESSAGE,
        EventKind.TOOL_CALL,
        EventKind.LLM_RESPONSE,
        EventKind.LLM_REQUEST,  # not a row: it only tells the LLM_RESPONSE its message count
        *rows.HOOK_EVENT_KINDS,
    }
)
_REQUEST_CACHE_LIMIT = 10_000
# A message, tool call or hook row that breaks a rule of the store (a constraint, a trigger) costs
# only itself; this many refused one after another, with nothing written between, means the store
# refuses them all. A refused trial start or finish fails the store at once (resume needs them).
REFUSALS_IN_A_ROW = 20
RETRY_DELAYS = (0.2, 1.0, 3.0)  # seconds before each new attempt at a batch refused for a passing cause
# PostgreSQL SQLSTATEs worth another attempt: serialization failure, deadlock, too many connections,
# lock not available, the server shutting down or restarting (class 08, connection errors, too).
_PASSING_SQLSTATES = frozenset({"40001", "40P01", "53300", "55P03", "57P01", "57P02", "57P03"})


def _clean(event: Event) -> Event:
    """The event with lone surrogates in its texts replaced by U+FFFD (SQLite cannot encode them;
    see corral_core.safetext). A copy, so other sinks still see the event as it was emitted."""
    data, trial_id, task_id, benchmark_id = (clean(event.data), clean(event.trial_id), clean(event.task_id),
                                             clean(event.benchmark_id))
    if data is event.data and trial_id is event.trial_id and task_id is event.task_id \
            and benchmark_id is event.benchmark_id:
        return event
    return replace(event, data=data, trial_id=trial_id, task_id=task_id, benchmark_id=benchmark_id)


@dataclass(slots=True)
class _FlushMarker:
    done: threading.Event = field(default_factory=threading.Event)


_STOP = object()


class StoreWriter:
    """Writes events to the store on its own thread. Use `start()`, emit, `flush()`, `close()`."""

    def __init__(
        self,
        engine: Engine,
        *,
        maxsize: int = 50_000,
        batch_size: int = 2_000,
        batch_interval: float = 0.05,
        put_timeout: float = 0.05,
        retry_delays: tuple[float, ...] = RETRY_DELAYS,
    ) -> None:
        self._engine = engine
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=maxsize)
        self._batch_size = batch_size
        self._batch_interval = batch_interval
        self._put_timeout = put_timeout
        self._retry_delays = retry_delays
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._closed = False
        self._counter_lock = threading.Lock()
        self.dropped = 0  # events not queued because the queue stayed full (or after close)
        self.failed = 0  # events not written: refused by the database, or after it failed, or malformed
        self.written = 0  # events committed
        self.fenced = 0  # events not written because their run lost its benchmark to another process
        self.failure: StoreError | None = None  # set once when the database refuses writes for good
        self._refused_in_a_row = 0
        self._listeners: list[Callable[[StoreError], None]] = []
        self._fences: dict[str, str] = {}  # benchmark id -> the fencing token of the run writing it
        self._lost: set[str] = set()  # fenced benchmarks another process has claimed: nothing more is written
        self._lost_listeners: list[Callable[[str], None]] = []
        self._fenced_trials: dict[str, str] = {}  # writer thread: running trial id -> its fenced benchmark
        # writer-thread state
        self._tool_seq: dict[str, int] = {}
        self._request_sizes: dict[tuple[Any, ...], int] = {}
        self._applier = EventApplier()

    # --- life cycle --------------------------------------------------------------------------

    def start(self) -> StoreWriter:
        """Start the writer thread (once)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="corral-store-writer", daemon=True)
            self._thread.start()
        return self

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def close(self, timeout: float = 10.0) -> None:
        """Write everything queued, stop the thread and join it (idempotent)."""
        if self._closed:
            return
        self._closed = True
        if self.running:
            try:
                self._queue.put(_STOP, timeout=timeout)
            except queue.Full:
                log.warning("store writer queue still full at close; stopping without draining it")
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                log.warning("store writer did not stop within %.1f s", timeout)

    def on_failure(self, listener: Callable[[StoreError], None]) -> Callable[[], None]:
        """Call `listener(error)` when the store fails (at once if it already has); returns a
        function that removes it. Listeners run on the writer thread: they must be quick."""
        with self._counter_lock:
            failure = self.failure
            if failure is None:
                self._listeners.append(listener)
        if failure is not None:
            listener(failure)

        def remove() -> None:
            with self._counter_lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return remove

    def fence(self, benchmark_id: str, token: str) -> Callable[[], None]:
        """Write this benchmark's trials only while `token` is its fencing token; returns the function
        that lifts the fence (when the run ends)."""
        with self._counter_lock:
            self._fences[benchmark_id] = token

        def lift() -> None:
            with self._counter_lock:
                if self._fences.get(benchmark_id) == token:
                    del self._fences[benchmark_id]

        return lift

    def on_lost(self, listener: Callable[[str], None]) -> Callable[[], None]:
        """Call `listener(benchmark_id)` (on the writer thread) when a fenced benchmark's token was taken;
        returns a function that removes it."""
        with self._counter_lock:
            self._lost_listeners.append(listener)

        def remove() -> None:
            with self._counter_lock:
                if listener in self._lost_listeners:
                    self._lost_listeners.remove(listener)

        return remove

    def __enter__(self) -> StoreWriter:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- sink side (any thread) --------------------------------------------------------------

    def emit(self, event: Event) -> None:
        """Queue an event for writing; cheap, thread-safe, never raises."""
        try:
            if event.kind not in WRITTEN_KINDS:
                return
            if self.failure is not None:  # the store refused writes: nothing more is written
                with self._counter_lock:
                    self.failed += 1
                return
            if self._closed:
                self._count_drop(event)
                return
            if event.kind in NEVER_DROPPED:
                self._put_reliably(event)
                return
            try:
                self._queue.put(event, timeout=self._put_timeout)
            except queue.Full:
                self._count_drop(event)
        except Exception:  # a sink must never break the engine
            log.exception("store writer could not queue %s", getattr(event, "kind", event))

    def flush(self, timeout: float = 10.0) -> bool:
        """Block until every event queued before this call is committed; False on timeout."""
        if not self.running:
            return self._queue.empty()
        marker = _FlushMarker()
        deadline = time.monotonic() + timeout
        try:
            self._queue.put(marker, timeout=timeout)
        except queue.Full:
            return False
        return marker.done.wait(max(0.0, deadline - time.monotonic()))

    def stats(self) -> dict[str, int]:
        return {
            "store_failed": int(self.failure is not None),
            "written": self.written,
            "dropped": self.dropped,
            "failed": self.failed,
            "fenced": self.fenced,
            "queued": self._queue.qsize(),
        }

    def _put_reliably(self, event: Event) -> None:
        while True:
            try:
                self._queue.put(event, timeout=0.5)
                return
            except queue.Full:
                if self._thread is not None and not self._thread.is_alive():
                    log.error("store writer is not running; %s for %s is lost", event.kind.value, event.trial_id)
                    self._count_drop(event)
                    return

    def _count_drop(self, event: Event) -> None:
        with self._counter_lock:
            self.dropped += 1
            first = self.dropped == 1
        if first or event.kind in NEVER_DROPPED:
            log.warning("store writer dropped %s (total dropped: %d)", event.kind.value, self.dropped)

    # --- writer thread -----------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            try:
                item = self._queue.get(timeout=0.1)
            except queue.Empty:
                if self._stop.is_set():
                    break
                continue
            batch, markers, stop = self._collect(item)
            if batch:
                self._write(batch)
            for marker in markers:
                marker.done.set()
            if stop:
                break
        self._drain_leftovers()

    def _collect(self, item: Any) -> tuple[list[tuple[Event, Any]], list[_FlushMarker], bool]:
        """Gather one batch starting with `item`; stop early at a flush marker or the stop sign."""
        batch: list[tuple[Event, Any]] = []
        deadline = time.monotonic() + self._batch_interval
        while True:
            if item is _STOP:
                return batch, [], True
            if isinstance(item, _FlushMarker):
                return batch, [item], False
            prepared = self._prepare(item)
            if prepared is not None:
                batch.append(prepared)
                if len(batch) >= self._batch_size:
                    return batch, [], False
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return batch, [], False
                try:
                    item = self._queue.get(timeout=remaining)
                except queue.Empty:
                    return batch, [], False

    def _drain_leftovers(self) -> None:
        """Events that slipped in after the stop sign still get written; markers are released."""
        leftovers: list[tuple[Event, Any]] = []
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if isinstance(item, _FlushMarker):
                item.done.set()
            elif item is not _STOP:  # an event
                prepared = self._prepare(item)
                if prepared is not None:
                    leftovers.append(prepared)
        if leftovers:
            self._write(leftovers)

    def _prepare(self, event: Event) -> tuple[Event, Any] | None:
        """Attach what depends on event order (tool call sequence, request size) before writing,
        so a retried batch writes the same values. A malformed event is counted and skipped."""
        try:
            return self._attach_order(_clean(event))
        except Exception:
            self.failed += 1
            log.exception("store writer skipped a malformed event: %r", event)
            return None

    def _attach_order(self, event: Event) -> tuple[Event, Any] | None:
        if event.kind is EventKind.LLM_REQUEST:
            if len(self._request_sizes) >= _REQUEST_CACHE_LIMIT:
                self._request_sizes.clear()
            n = event.data.get("n_messages")
            if n is not None:
                self._request_sizes[rows.llm_request_key(event)] = rows.as_int(n)
            return None
        if event.kind is EventKind.TOOL_CALL:
            key = event.trial_id or ""
            seq = self._tool_seq.get(key, 0)
            self._tool_seq[key] = seq + 1
            return event, seq
        if event.kind is EventKind.LLM_RESPONSE:
            return event, self._request_sizes.pop(rows.llm_request_key(event), None)
        if event.kind is EventKind.TRIAL_FINISHED:
            self._tool_seq.pop(event.trial_id or "", None)
        return event, None

    def _write(self, batch: list[tuple[Event, Any]]) -> None:
        """Commit a batch. A refusal for a passing cause is retried; one that lasts fails the store.
        Anything else wrong (a bug turning an odd event into a row) costs only the events at fault."""
        if self.failure is not None:
            self.failed += len(batch)
            return
        delays = iter(self._retry_delays)
        while True:
            try:
                self._commit(batch)
                self.written += len(batch)
                self._refused_in_a_row = 0
                return
            except IntegrityError:  # a row breaks a rule (an odd event, or a trigger): find which
                self._write_one_by_one(batch)
                return
            except DBAPIError as exc:
                delay = next(delays, None) if _passing(exc) else None
                if delay is None:
                    self._fail(exc, len(batch))
                    return
                log.info("store busy (%s); trying the batch again in %.1f s", exc.orig, delay)
                time.sleep(delay)
            except Exception:
                log.warning("a store batch of %d events could not be turned into rows; writing them one by one",
                            len(batch), exc_info=True)
                self._write_one_by_one(batch)
                return

    def _write_one_by_one(self, batch: list[tuple[Event, Any]]) -> None:
        for index, item in enumerate(batch):
            try:
                self._commit([item])
                self.written += 1
                self._refused_in_a_row = 0
            except IntegrityError as exc:
                if item[0].kind in NEVER_DROPPED:  # a trial's own record: going on would lose it silently
                    self._fail(exc, len(batch) - index)
                    return
                self.failed += 1
                self._refused_in_a_row += 1
                log.warning("store refused %s for trial %s: %s", item[0].kind.value, item[0].trial_id, exc.orig)
                if self._refused_in_a_row >= REFUSALS_IN_A_ROW:  # not an odd event: the store refuses them all
                    self._fail(exc, len(batch) - index - 1)
                    return
            except DBAPIError as exc:
                self._fail(exc, len(batch) - index)
                return
            except Exception:
                self.failed += 1
                log.exception("store could not write %s for trial %s", item[0].kind.value, item[0].trial_id)

    def _fail(self, exc: DBAPIError, lost: int) -> None:
        """The database refuses writes: remember why, write nothing more, tell the listeners once."""
        failure = store_error(exc, self._engine, "writing to")
        with self._counter_lock:
            self.failed += lost
            self.failure = failure
            listeners, self._listeners = self._listeners, []
        log.info("store writer failed after %d events written", self.written, exc_info=exc)
        for listener in listeners:
            try:
                listener(failure)
            except Exception:
                log.exception("a store failure listener failed")

    def _commit(self, batch: list[tuple[Event, Any]]) -> None:
        """One transaction; the applier's memory is rolled back with the database on failure."""
        saved = self._applier.save()
        lost: list[str] = []
        try:
            with write_transaction(self._engine) as conn:
                self._applier.apply(conn, self._owned(conn, batch, lost))
        except Exception:
            self._applier.restore(saved)
            raise
        finally:
            for benchmark_id in lost:
                self._tell_lost(benchmark_id)

    def _owned(self, conn: Any, batch: list[tuple[Event, Any]], lost: list[str]) -> list[tuple[Event, Any]]:
        """The batch without the events of fenced benchmarks whose token was taken; each fenced benchmark
        in it is checked once, in this transaction (newly lost ones are added to `lost`)."""
        with self._counter_lock:
            fences = dict(self._fences)
        if not fences and not self._lost:
            return batch
        kept: list[tuple[Event, Any]] = []
        checked: set[str] = set()
        for item in batch:
            event = item[0]
            trial_id = event.trial_id or ""
            benchmark_id = event.benchmark_id or self._fenced_trials.get(trial_id)
            if benchmark_id is None or (benchmark_id not in fences and benchmark_id not in self._lost):
                kept.append(item)
                continue
            if event.kind is EventKind.TRIAL_STARTED:
                self._fenced_trials[trial_id] = benchmark_id
            elif event.kind is EventKind.TRIAL_FINISHED:
                self._fenced_trials.pop(trial_id, None)
            if benchmark_id not in self._lost and benchmark_id not in checked:
                try:
                    check_owner(conn, benchmark_id, fences[benchmark_id])
                    checked.add(benchmark_id)
                except OwnershipLost:
                    self._lost.add(benchmark_id)
                    lost.append(benchmark_id)
            if benchmark_id in self._lost:
                self.fenced += 1
            else:
                kept.append(item)
        return kept

    def _tell_lost(self, benchmark_id: str) -> None:
        log.warning("benchmark %s was claimed by another process: this run's writes to it are refused", benchmark_id)
        with self._counter_lock:
            listeners = list(self._lost_listeners)
        for listener in listeners:
            try:
                listener(benchmark_id)
            except Exception:
                log.exception("an ownership listener failed")


def _passing(exc: DBAPIError) -> bool:
    """True for refusals that usually pass: a lock another process holds, a lost connection."""
    if exc.connection_invalidated:
        return True
    orig = exc.orig
    sqlstate = getattr(orig, "sqlstate", None)
    if sqlstate:
        return sqlstate in _PASSING_SQLSTATES or sqlstate.startswith("08")
    message = str(orig).lower()
    return "database is locked" in message or "database table is locked" in message or "busy" in message
