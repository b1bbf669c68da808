"""Queries over the store, returning plain dataclasses. The UI, runner and batch call only this.

Every call opens its own short-lived connection, so readers never share the writer thread's and
any thread may use one `Repository`. List queries are paged on indexes (see tables.py), so the
history opens at once on a store with 100,000 trials.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Connection, Engine, Select, bindparam, case, delete, func, insert, or_, select, tuple_, update
from sqlalchemy.exc import DBAPIError

from corral_core.domain import BenchmarkStatus, Fault, TrialStatus
from corral_core.metrics.attempt import ATTEMPT_STATUSES, DIRECTIONS, ERRORED_ATTEMPT
from corral_core.metrics.records import EXCLUDED_STATUSES, RETIRED_STATUS, retired_attempt, retired_index
from corral_core.safetext import clean_text
from corral_core.store import convert, detail
from corral_core.store.database import store_error, write_transaction
from corral_core.store.models import (
    ArmInfo,
    BenchmarkInfo,
    BenchmarkPage,
    ChainOutputInfo,
    LLMCallInfo,
    TimelineEntry,
    TrialInfo,
    TrialPage,
)
from corral_core.store.ownership import DatabaseNow, Owner, OwnershipLost, new_token, owner_alive
from corral_core.store.tables import (
    TRIAL_CHILD_TABLES,
    benchmark_table,
    chain_output_table,
    tool_call_table,
    trial_table,
    utc_from_driver,
    utc_now,
)
from corral_core.trial_result import TrialResult

# store_failed: the database refused writes mid-run; what it kept is resumable like an interrupted run.
BENCHMARK_STATUSES = tuple(BenchmarkStatus)
UNFINISHED_BENCHMARK = (BenchmarkStatus.RUNNING, BenchmarkStatus.INTERRUPTED, BenchmarkStatus.STORE_FAILED)
# Rows per keyset page of the whole-benchmark reads (iter_trials, iter_trial_records): each page is one
# short read that continues after the last key of the one before, so a whole benchmark costs linear time
# and memory of one page (OFFSET would re-read every skipped row: quadratic).
KEYSET_PAGE = 2000
NULLS_LAST = ("postgresql", "oracle")  # databases whose ascending order puts NULL last (SQLite: first)

ID_CHUNK = 900  # trial ids bound in one IN (...): under SQLite's old limit of 999 variables
# SQLite page cache of a connection that reads a whole benchmark (KiB; SQLite's default is 2 MiB): the
# pages one keyset page visits in key order are spread over the file and visited again by the next pages
# (a task's trials sit near the same trial of the task before), so a cache that holds them saves
# re-reading each from the OS (system CPU time: 5 of 18 s reading a million trials with their tool calls).
BULK_CACHE_KIB = 65536


def _bulk_cache(conn: Connection) -> None:
    """Give this SQLite connection BULK_CACHE_KIB of page cache (kept while it is pooled: bounded)."""
    if conn.dialect.name == "sqlite":
        conn.exec_driver_sql(f"PRAGMA cache_size=-{BULK_CACHE_KIB}")


def _driver_rows(conn: Connection, query: Select[Any], parameters: dict[str, Any] | None = None) -> list[Any]:
    """`query`'s rows as the DB-API driver gives them (tuples), fetched from the cursor SQLAlchemy
    executed it on: no Row objects and no per-value result processing (booleans may be 0/1, UTCDateTime
    values the driver's: tables.utc_from_driver). Only for columns whose driver values are what the
    caller expects (the whole-benchmark reads: ~1 s per million rows saved, and the dates' ~4 s)."""
    return _fetched(conn.execute(query, parameters))


def _fetched(result: Any) -> list[Any]:
    """A result's rows straight from its DB-API cursor (tuples), the result closed. The driver's own
    error (a damaged page's text that is not UTF-8) is wrapped as SQLAlchemy wraps it, a DBAPIError,
    so the reads that catch those (`_read`: a StoreError, exit 2) catch it too."""
    dialect = result.context.dialect
    try:
        return list(result.cursor.fetchall())
    except dialect.loaded_dbapi.Error as exc:
        raise DBAPIError.instance(None, None, exc, dialect.loaded_dbapi.Error, dialect=dialect) from exc
    finally:
        result.close()


class _IdsQuery:
    """`query` restricted to rows whose `column` is in a list of ids, ordered by `order`, run with the
    driver's own parameters: its SQL is compiled once per number of ids (SQLAlchemy's expanding IN would
    render and bind each of a chunk's 900 ids on every execution, a large share of reading a whole
    benchmark's tool calls)."""

    def __init__(self, query: Select[Any], column: Any, order: Sequence[Any]) -> None:
        self._query, self._column, self._order = query, column, order
        self._compiled: dict[tuple[str, int], tuple[str, list[str] | None]] = {}

    def rows(self, conn: Connection, ids: Sequence[Any]) -> list[Any]:
        """The driver's rows (tuples) for these ids."""
        key = (conn.dialect.name, len(ids))
        if key not in self._compiled:
            names = [f"id_{i}" for i in range(len(ids))]
            stmt = self._query.where(self._column.in_([bindparam(name) for name in names])).order_by(*self._order)
            compiled = stmt.compile(dialect=conn.dialect)
            order = list(compiled.positiontup or ()) if compiled.positional else None
            if order is not None and order != names:
                raise ValueError("unexpected order of bound ids")  # never: the ids are the only parameters
            self._compiled[key] = (str(compiled), None if order is not None else names)
        sql, named = self._compiled[key]
        parameters: Any = tuple(ids) if named is None else dict(zip(named, ids, strict=True))
        return _fetched(conn.exec_driver_sql(sql, parameters))


_STARTED, _FINISHED = convert.TRIAL_COLUMNS.index("started_at"), convert.TRIAL_COLUMNS.index("finished_at")
assert _FINISHED == _STARTED + 1  # _utc_times converts them as one slice


def _bind_start(key: tuple[Any, ...]) -> tuple[Any, ...]:
    """A (started_at, id) key as the driver gave it, bindable (started_at an aware UTC datetime)."""
    return utc_from_driver(key[0]), key[1]


def _utc_times(rows: list[Any]) -> list[Any]:
    """A page of convert.TRIAL_COLUMNS driver rows with started_at and finished_at as aware UTC datetimes."""
    utc = utc_from_driver
    return [(*row[:_STARTED], utc(row[_STARTED]), utc(row[_FINISHED]), *row[_FINISHED + 1:]) for row in rows]


def _database_now(conn: Connection) -> datetime:
    now = conn.execute(select(DatabaseNow())).scalar_one()
    assert isinstance(now, datetime)
    return now


def check_owner(conn: Connection, benchmark_id: str, token: str) -> None:
    """Raise OwnershipLost unless `token` is the benchmark's fencing token, holding its row until the
    transaction ends (a claim waits for it: the write this guards lands before the claim, or never)."""
    b = benchmark_table
    current = conn.execute(select(b.c.owner_token).where(b.c.id == benchmark_id).with_for_update(read=True)
                           ).scalar_one_or_none()
    if current != token:
        raise OwnershipLost(benchmark_id)


def new_benchmark_id() -> str:
    return "bm_" + secrets.token_hex(6)


def compute_spec_digest(spec: Mapping[str, Any] | str) -> str:
    """sha256 of a normalized spec: canonical JSON of a mapping, or the stripped text."""
    if isinstance(spec, str):
        text = spec.strip()
    else:
        text = json.dumps(spec, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Repository:
    """The store's query facade. `clock` and `id_factory` are injectable for deterministic tests."""

    def __init__(
        self,
        engine: Engine,
        *,
        clock: Callable[[], datetime] = utc_now,
        id_factory: Callable[[], str] = new_benchmark_id,
    ) -> None:
        self._engine = engine
        self._clock = clock
        self._new_id = id_factory

    @property
    def engine(self) -> Engine:
        """The engine this repository reads (replay and the writer share it)."""
        return self._engine

    @contextmanager
    def _read(self) -> Iterator[Connection]:
        """A connection for reading; a database error becomes a StoreError (exit 2, one message), and so
        does a stored value that cannot be read as its column's type (a damaged page's bytes that are
        still valid text, e.g. a date SQLAlchemy cannot parse: a ValueError while converting the row)."""
        try:
            with self._engine.connect() as conn:
                yield conn
        except (DBAPIError, ValueError) as exc:
            raise store_error(exc, self._engine, "reading") from None

    @contextmanager
    def _write(self) -> Iterator[Connection]:
        """A transaction; a database error becomes a StoreError (and nothing of it is kept)."""
        try:
            with write_transaction(self._engine) as conn:
                yield conn
        except DBAPIError as exc:
            raise store_error(exc, self._engine, "writing to") from None

    # --- benchmarks --------------------------------------------------------------------------

    def create_benchmark(
        self,
        *,
        spec_name: str,
        spec_digest: str,
        spec_yaml: str = "",
        suites: Sequence[str] = (),
        agent: str = "",
        model: str = "",
        arms: Iterable[ArmInfo | Mapping[str, Any]] = (),
        trials_per_task: int = 1,
        benchmark_id: str | None = None,
        owner: Owner | None = None,
        plan: Mapping[str, Any] | None = None,
    ) -> BenchmarkInfo:
        """Record a new benchmark in status `running` (run by `owner`, if given) and return it. `plan`, the
        spec's normalized form, is kept as its metrics' `spec` until the run's end writes the metrics, so
        the history knows how many trials a running or interrupted run planned."""
        arm_dicts = [a.to_dict() if isinstance(a, ArmInfo) else dict(a) for a in arms]
        values = {
            "id": benchmark_id or self._new_id(),
            "spec_name": spec_name,
            "spec_digest": spec_digest,
            "spec_yaml": clean_text(spec_yaml),  # secrets written in the spec are stored as ***
            "suites_json": convert.dumps(list(suites)),
            "agent": agent,
            "model": model,
            "arms_json": convert.dumps(arm_dicts),
            "trials_per_task": trials_per_task,
            "status": BenchmarkStatus.RUNNING,
            "headline_score": None,
            "attempt_status": None,
            "created_at": self._clock(),
            "finished_at": None,
            "metrics_json": convert.dumps({"spec": dict(plan)}) if plan is not None else None,
            "owner_pid": owner.pid if owner else None,
            "owner_host": owner.host if owner else None,
        }
        with self._write() as conn:
            values["heartbeat_at"] = _database_now(conn) if owner else None
            values["owner_token"] = new_token() if owner else None
            conn.execute(insert(benchmark_table).values(**values))
        return convert.benchmark_from_row(values)

    def finish_benchmark(
        self,
        benchmark_id: str,
        status: str = BenchmarkStatus.FINISHED,
        headline_score: float | None = None,
        attempt_status: str | None = None,
        metrics_json: Mapping[str, Any] | str | None = None,
        *,
        token: str | None = None,
        revoke: bool = False,
    ) -> None:
        """Close a benchmark (finished or interrupted) with its headline result and metrics. Without metrics
        (a run stopped before it could compute them) the ones it has are kept: at least its plan.

        `token`: the closing run's fencing token; when another run has claimed the benchmark since,
        nothing changes and OwnershipLost is raised. `revoke`: take the token from its run in the same
        write (closing for a run that may still be writing): every later write with it is refused."""
        if status not in BENCHMARK_STATUSES:
            raise ValueError(f"benchmark status must be one of {BENCHMARK_STATUSES}, not {status!r}")
        if attempt_status is not None and attempt_status not in ATTEMPT_STATUSES:
            raise ValueError(f"attempt status must be one of {ATTEMPT_STATUSES} or None, not {attempt_status!r}")
        metrics = metrics_json if metrics_json is None or isinstance(metrics_json, str) else convert.dumps(metrics_json)
        metrics = None if metrics is None else clean_text(metrics)  # no secret in the stored metrics
        b = benchmark_table
        where = [b.c.id == benchmark_id] + ([b.c.owner_token == token] if token is not None else [])
        values: dict[str, Any] = {"status": status, "headline_score": headline_score, "attempt_status": attempt_status,
                                  "finished_at": self._clock(), "heartbeat_at": DatabaseNow()}
        if metrics is not None:
            values["metrics_json"] = metrics
        if revoke:
            values["owner_token"] = None
        with self._write() as conn:
            result = conn.execute(update(b).where(*where).values(**values))
        if result.rowcount == 0:
            if token is not None and self.get_benchmark(benchmark_id) is not None:
                raise OwnershipLost(benchmark_id)
            raise KeyError(f"no benchmark {benchmark_id!r} in the store")

    def get_benchmark(self, benchmark_id: str) -> BenchmarkInfo | None:
        with self._read() as conn:
            row = conn.execute(select(benchmark_table).where(benchmark_table.c.id == benchmark_id)).first()
            if row is None:
                return None
            counts = self._trial_counts(conn, [benchmark_id])
        return convert.benchmark_from_row(row._mapping, *counts.get(benchmark_id, ()))

    def list_benchmarks(self, offset: int = 0, limit: int = 50) -> BenchmarkPage:
        """One page of benchmarks, newest first, each with its trial counts."""
        b = benchmark_table
        with self._read() as conn:
            result = conn.execute(
                select(b).order_by(b.c.created_at.desc(), b.c.id.desc()).offset(offset).limit(limit + 1)
            ).all()
            page = result[:limit]
            counts = self._trial_counts(conn, [row.id for row in page])
        items = [convert.benchmark_from_row(row._mapping, *counts.get(row.id, ())) for row in page]
        return BenchmarkPage(items, offset, limit, has_more=len(result) > limit)

    def count_benchmarks(self) -> int:
        with self._read() as conn:
            return conn.execute(select(func.count()).select_from(benchmark_table)).scalar_one()

    @staticmethod
    def _trial_counts(conn: Connection, benchmark_ids: list[str]) -> dict[str, tuple[int, int, int, int, float | None]]:
        """(trials, finished, errored, tokens, cost) of each benchmark: what its history row shows. Errored
        leaves out attempts a retry replaced; tokens and cost count every attempt (all were paid for)."""
        if not benchmark_ids:
            return {}
        t = trial_table
        finished = func.sum(case((t.c.status.not_in((TrialStatus.RUNNING, RETIRED_STATUS)), 1), else_=0))
        errored = func.sum(case((_errored(t), 1), else_=0))
        rows = conn.execute(
            select(t.c.benchmark_id, func.count(), finished, errored, func.sum(t.c.total_tokens), func.sum(t.c.cost))
            .where(t.c.benchmark_id.in_(benchmark_ids))
            .group_by(t.c.benchmark_id)
        ).all()
        return {row[0]: (row[1], int(row[2] or 0), int(row[3] or 0), int(row[4] or 0),
                         None if row[5] is None else float(row[5])) for row in rows}

    def errors_by_arm(self, benchmark_id: str) -> dict[str, dict[str, int]]:
        """Errored and timed-out trials of each arm by whose fault (metrics.records.FAULTS), read from the
        stored rows (attempts a retry replaced left out): what every screen shows beside an arm's score."""
        t = trial_table
        fault = func.coalesce(t.c.fault, case((t.c.status == TrialStatus.TIMEOUT, Fault.TIMEOUT), else_=Fault.UNKNOWN))
        with self._read() as conn:
            rows = conn.execute(
                select(t.c.arm, fault, func.count())
                .where(t.c.benchmark_id == benchmark_id, _errored(t))
                .group_by(t.c.arm, fault)
            ).all()
        found: dict[str, dict[str, int]] = {}
        for arm, whose, count in rows:
            found.setdefault(str(arm), {})[str(whose)] = int(count)
        return {arm: dict(sorted(faults.items())) for arm, faults in found.items()}

    def assisted_by_arm(self, benchmark_id: str) -> dict[str, dict[str, int]]:
        """Trials a person touched, by arm and task (attempts a retry replaced left out): the trials list's
        assisted marks, which Compare counts and lists apart."""
        t = trial_table
        with self._read() as conn:
            rows = conn.execute(
                select(t.c.arm, t.c.task_id, func.count())
                .where(t.c.benchmark_id == benchmark_id, t.c.assisted.is_(True), t.c.status != RETIRED_STATUS)
                .group_by(t.c.arm, t.c.task_id)
            ).all()
        found: dict[str, dict[str, int]] = {}
        for arm, task, count in rows:
            found.setdefault(str(arm), {})[str(task)] = int(count)
        return found

    def unfinished_benchmarks(self, spec_digest: str, limit: int = 20) -> list[BenchmarkInfo]:
        """Running or interrupted benchmarks of this spec, newest first (live ones included)."""
        b = benchmark_table
        with self._read() as conn:
            rows = conn.execute(
                select(b)
                .where(b.c.spec_digest == spec_digest, b.c.status.in_(UNFINISHED_BENCHMARK))
                .order_by(b.c.created_at.desc(), b.c.id.desc())
                .limit(limit)
            ).all()
        return [convert.benchmark_from_row(row._mapping) for row in rows]

    def database_now(self) -> datetime:
        """The database's current time (UTC): the clock heartbeats are written and judged with."""
        with self._read() as conn:
            return _database_now(conn)

    def is_live(self, info: BenchmarkInfo, here: Owner | None = None, now: datetime | None = None) -> bool:
        """True when a live process runs this benchmark now (`here`: the asking process; `now`: the
        database's time, read if not given)."""
        return owner_alive(info, now if now is not None else self.database_now(), here=here)

    def live_benchmarks(self, spec_digest: str, here: Owner | None = None) -> list[BenchmarkInfo]:
        """Benchmarks of this spec that a live process is running now, newest first."""
        now = self.database_now()
        return [b for b in self.unfinished_benchmarks(spec_digest) if self.is_live(b, here, now)]

    def find_unfinished_benchmark(self, spec_digest: str, here: Owner | None = None) -> BenchmarkInfo | None:
        """The newest benchmark of this spec that nobody runs any more: what auto-resume continues.

        Interrupted ones, and running ones whose owner died or went silent (see ownership.py)."""
        now = self.database_now()
        for info in self.unfinished_benchmarks(spec_digest):
            if not self.is_live(info, here, now):
                return self.get_benchmark(info.id)
        return None

    def claim_benchmark(self, seen: BenchmarkInfo, owner: Owner) -> str | None:
        """Make `owner` run `seen` if it is still as seen and nobody runs it now; returns the new fencing
        token (None: not claimed).

        A compare-and-set under the row's lock, judged by the database's clock: of two processes
        resuming the same benchmark at once, one wins, and a run whose owner beat since is left alone.
        Every later write of the previous owner is refused (its token is no longer the benchmark's)."""
        b = benchmark_table
        token = new_token()
        with self._write() as conn:
            row = conn.execute(select(b).where(b.c.id == seen.id).with_for_update()).first()
            if row is None:
                return None
            current = convert.benchmark_from_row(row._mapping)
            unchanged = (current.status, current.owner_pid, current.owner_host, current.heartbeat_at,
                         current.owner_token) == (seen.status, seen.owner_pid, seen.owner_host, seen.heartbeat_at,
                                                  seen.owner_token)
            if not unchanged or owner_alive(current, _database_now(conn), here=owner):
                return None
            conn.execute(
                update(b)
                .where(b.c.id == seen.id)
                .values(status=BenchmarkStatus.RUNNING, owner_pid=owner.pid, owner_host=owner.host,
                        heartbeat_at=DatabaseNow(), owner_token=token, finished_at=None)
            )
        return token

    def heartbeat(self, benchmark_id: str, token: str) -> bool:
        """Note that the run holding `token` is still at it; False when it no longer owns the benchmark."""
        b = benchmark_table
        with self._write() as conn:
            result = conn.execute(
                update(b)
                .where(b.c.id == benchmark_id, b.c.status == BenchmarkStatus.RUNNING, b.c.owner_token == token)
                .values(heartbeat_at=DatabaseNow())
            )
        return result.rowcount == 1

    def owns(self, benchmark_id: str, token: str) -> bool:
        """True while the run holding `token` owns the benchmark (nobody has claimed it since)."""
        b = benchmark_table
        with self._read() as conn:
            current = conn.execute(select(b.c.owner_token).where(b.c.id == benchmark_id)).scalar_one_or_none()
        return current == token

    def best_previous_score(self, spec_digest: str, exclude_id: str | None = None, *, direction: str = "maximize",
                            finished_before: datetime | None = None) -> float | None:
        """The best headline score (highest, or lowest for direction "minimize") among finished benchmarks
        of the same spec that finished before `finished_before` (None if none)."""
        if direction not in DIRECTIONS:
            raise ValueError(f"direction must be one of {DIRECTIONS}, not {direction!r}")
        best = func.max if direction == "maximize" else func.min
        query = _earlier(select(best(benchmark_table.c.headline_score)), spec_digest, exclude_id, finished_before)
        with self._read() as conn:
            return cast("float | None", conn.execute(query).scalar_one())

    def earlier_runs(self, spec_digest: str, exclude_id: str | None = None, *,
                     finished_before: datetime | None = None, limit: int = 200) -> list[BenchmarkInfo]:
        """Finished benchmarks of this spec with a headline and not `errored`, finished before
        `finished_before`, newest first (at most `limit`): what an attempt is compared with."""
        b = benchmark_table
        query = _earlier(select(b), spec_digest, exclude_id, finished_before)
        with self._read() as conn:
            rows = conn.execute(query.order_by(b.c.finished_at.desc(), b.c.id.desc()).limit(limit)).all()
        return [convert.benchmark_from_row(row._mapping) for row in rows]

    # --- trials ------------------------------------------------------------------------------

    @staticmethod
    def _filtered(
        query: Select[Any],
        benchmark_id: str,
        task: str | None,
        arm: str | None,
        status: str | Iterable[str] | None,
    ) -> Select[Any]:
        t = trial_table
        query = query.where(t.c.benchmark_id == benchmark_id)
        if task is not None:
            query = query.where(t.c.task_id == task)
        if arm is not None:
            query = query.where(t.c.arm == arm)
        if isinstance(status, str):
            query = query.where(t.c.status == status)
        elif status is not None:
            query = query.where(t.c.status.in_(list(status)))
        return query

    def trials(
        self,
        benchmark_id: str,
        *,
        task: str | None = None,
        arm: str | None = None,
        status: str | Iterable[str] | None = None,
        offset: int = 0,
        limit: int = 100,
    ) -> TrialPage:
        """One page of a benchmark's trials in start order (indexed: no full scan, no sort)."""
        t = trial_table
        query = self._filtered(select(t), benchmark_id, task, arm, status)
        query = query.order_by(t.c.started_at, t.c.id).offset(offset).limit(limit + 1)
        with self._read() as conn:
            rows = conn.execute(query).all()
        items = [convert.trial_from_row(row._mapping) for row in rows[:limit]]
        return TrialPage(items, offset, limit, has_more=len(rows) > limit)

    def count_trials(
        self,
        benchmark_id: str,
        *,
        task: str | None = None,
        arm: str | None = None,
        status: str | Iterable[str] | None = None,
    ) -> int:
        query = self._filtered(select(func.count()).select_from(trial_table), benchmark_id, task, arm, status)
        with self._read() as conn:
            return cast("int", conn.execute(query).scalar_one())

    def trial(self, trial_id: str) -> TrialInfo | None:
        with self._read() as conn:
            row = conn.execute(select(trial_table).where(trial_table.c.id == trial_id)).first()
        return convert.trial_from_row(row._mapping) if row else None

    def finished_trial_keys(self, benchmark_id: str) -> set[tuple[str, str, int]]:
        """(arm, task_id, trial_index) of every trial that is done: resume skips these."""
        t = trial_table
        with self._read() as conn:
            rows = conn.execute(
                select(t.c.arm, t.c.task_id, t.c.trial_index).where(
                    t.c.benchmark_id == benchmark_id, t.c.status != TrialStatus.RUNNING
                )
            ).all()
        return {(row.arm, row.task_id, row.trial_index) for row in rows}

    def delete_unfinished_trials(self, benchmark_id: str) -> int:
        """Remove trials left `running` by a dead process, with their messages, tool calls, hook
        events and LLM calls, so a resumed run re-runs them without duplicates. Returns the count."""
        t = trial_table
        running = select(t.c.id).where(t.c.benchmark_id == benchmark_id, t.c.status == TrialStatus.RUNNING)
        with self._write() as conn:
            for table in TRIAL_CHILD_TABLES:
                conn.execute(delete(table).where(table.c.trial_id.in_(running)))
            conn.execute(
                delete(chain_output_table).where(
                    chain_output_table.c.benchmark_id == benchmark_id,
                    chain_output_table.c.trial_id.in_(running),
                )
            )
            return conn.execute(delete(t).where(t.c.id.in_(running))).rowcount

    def retire_trials(self, benchmark_id: str, trial_ids: list[str]) -> int:
        """Keep these finished trials as history (status RETIRED_STATUS) so that new attempts of the same
        (arm, task, index) replace them in every metric (`--retry-errors`). Returns how many changed."""
        if not trial_ids:
            return 0
        t = trial_table
        changed = 0
        with write_transaction(self._engine) as conn:  # reads and writes under one lock
            rows = conn.execute(select(t.c.id, t.c.trial_index).where(t.c.benchmark_id == benchmark_id,
                                                                      t.c.id.in_(trial_ids))).all()
            earlier = conn.execute(select(func.min(t.c.trial_index)).where(t.c.benchmark_id == benchmark_id)
                                   ).scalar_one()
            attempt = retired_attempt(earlier) + 1 if earlier is not None and earlier < 0 else 1
            for row in rows:  # the (arm, task, index) key is unique: the old attempt moves to a history index
                changed += conn.execute(update(t).where(t.c.id == row.id).values(
                    status=RETIRED_STATUS, trial_index=retired_index(row.trial_index, attempt))).rowcount
        return changed

    def trial_records(self, benchmark_id: str) -> list[TrialResult]:
        """Every trial of a benchmark with its tool call stats, as one list (see iter_trial_records)."""
        return list(self.iter_trial_records(benchmark_id))

    def iter_trial_records(self, benchmark_id: str, *, page_size: int = KEYSET_PAGE,
                           tool_calls: bool = True) -> Iterator[TrialResult]:
        """Every trial of a benchmark with its tool call stats, in (arm, task, index) order: the input of
        corral_core.metrics, streamed by keyset pages on the trial key (memory of one page).
        `tool_calls=False` leaves them out (each trial's lookup is most of the read's cost)."""
        for values, calls in self.iter_trial_record_values(benchmark_id, page_size=page_size, tool_calls=tool_calls):
            yield convert.trial_record_from_values(
                values, [{"tool_name": name, "status": state, "duration": took} for name, state, took in calls])

    def iter_trial_record_values(self, benchmark_id: str, *, page_size: int = KEYSET_PAGE, tool_calls: bool = True
                                 ) -> Iterator[tuple[Sequence[Any], Sequence[tuple[str, str, float | None]]]]:
        """`iter_trial_records` before its records are built, for a reader that builds its own (the metrics'
        converter, corral_core.runner.results): each trial's convert.TRIAL_RECORD_COLUMNS values (as the
        driver gives them: booleans may be 0/1), and its tool calls as (tool_name, status, duration) in call
        order (empty without `tool_calls`)."""
        t, tc = trial_table, tool_call_table
        key = (t.c.arm, t.c.task_id, t.c.trial_index)
        query = select(*(t.c[name] for name in convert.TRIAL_RECORD_COLUMNS)).where(t.c.benchmark_id == benchmark_id)
        calls = _IdsQuery(select(tc.c.trial_id, tc.c.tool_name, tc.c.status, tc.c.duration), tc.c.trial_id,
                          (tc.c.trial_id, tc.c.seq))
        none: tuple[tuple[str, str, float | None], ...] = ()
        for rows in self._keyset(query, key, page_size):
            if not tool_calls:
                for values in rows:
                    yield values, none
                continue
            by_id: dict[str, list[tuple[str, str, float | None]]] = {values[0]: [] for values in rows}
            ids = list(by_id)
            found: list[Any] = []  # rows of (trial_id, tool_name, status, duration)
            with self._read() as conn:  # the page's tool calls by its trial ids (not a join: that reads
                _bulk_cache(conn)  # every trial row again), bound a chunk at a time (old SQLite: 999)
                for start in range(0, len(ids), ID_CHUNK):
                    found += calls.rows(conn, ids[start:start + ID_CHUNK])
            for trial_id, tool_name, status, duration in found:
                by_id[trial_id].append((tool_name, status, duration))
            for values in rows:
                yield values, by_id[values[0]]

    def iter_trials(self, benchmark_id: str, *, page_size: int = KEYSET_PAGE) -> Iterator[TrialInfo]:
        """Every trial of a benchmark in start order, streamed by keyset pages on the start index
        (started_at, id): linear in the benchmark, memory of one page. Trials stored without a start
        time (a finish whose start was never recorded) come by id where the database sorts NULL, as in
        the history's pages (`trials`): first on SQLite, last on PostgreSQL."""
        return map(convert.trial_from_values, self.iter_trial_values(benchmark_id, page_size=page_size))

    def iter_trial_values(self, benchmark_id: str, *, page_size: int = KEYSET_PAGE, driver_times: bool = False
                          ) -> Iterator[Sequence[Any]]:
        """`iter_trials` before its TrialInfo are built, for a reader that builds its own rows (the export):
        each trial's convert.TRIAL_COLUMNS values, booleans as the driver gives them (0/1 on SQLite), times
        as aware UTC datetimes (as SQLAlchemy would read them: tables.utc_from_driver) or, with
        `driver_times`, as the driver gives them (for tables.iso_from_driver)."""
        t = trial_table
        query = select(*(t.c[name] for name in convert.TRIAL_COLUMNS)).where(t.c.benchmark_id == benchmark_id)
        unstarted = (query.where(t.c.started_at.is_(None)), (t.c.id,), None)
        started = (query.where(t.c.started_at.is_not(None)), (t.c.started_at, t.c.id),
                   _bind_start if driver_times else None)
        parts = (started, unstarted) if self._engine.dialect.name in NULLS_LAST else (unstarted, started)
        for part, keys, bind_key in parts:
            for rows in self._keyset(part, keys, page_size, None if driver_times else _utc_times, bind_key):
                yield from rows

    def _keyset(self, query: Select[Any], keys: Sequence[Any], page_size: int,
                convert_page: Callable[[list[Any]], list[Any]] | None = None,
                bind_key: Callable[[tuple[Any, ...]], tuple[Any, ...]] | None = None) -> Iterator[list[Any]]:
        """`query`'s rows in `keys` order (a unique key), page by page: each page is its own short
        read of the rows after the last key of the page before (`(k1, k2) > (v1, v2)`, on an index).
        The rows are the DB-API driver's tuples (_driver_rows: a million rows without SQLAlchemy's
        per-value processing), each page passed through `convert_page` when given; the last row's key
        values are bound as they come out of it, or as `bind_key` makes them."""
        if page_size < 1:
            raise ValueError(f"page_size must be at least 1, not {page_size}")
        names = [column.name for column in query.selected_columns]
        at = [names.index(key.name) for key in keys]
        after: tuple[Any, ...] | None = None
        while True:
            page = query if after is None else query.where(
                tuple_(*keys) > after if len(keys) > 1 else keys[0] > after[0])
            with self._read() as conn:
                _bulk_cache(conn)
                rows = _driver_rows(conn, page.order_by(*keys).limit(page_size))
            if convert_page is not None:
                rows = convert_page(rows)
            if rows:
                yield rows
            if len(rows) < page_size:
                return
            last = rows[-1]
            after = tuple(last[i] for i in at)
            if bind_key is not None:
                after = bind_key(after)

    # --- one trial in detail -----------------------------------------------------------------

    def timeline(self, trial_id: str) -> list[TimelineEntry]:
        """Messages, tool calls, hook events (approvals, interventions...) and LLM calls of a trial,
        merged in time order, between its start and finish lines."""
        with self._read() as conn:
            return detail.load_timeline(conn, trial_id)

    def transcripts(self, trial_ids: list[str]) -> dict[str, dict[str, list[dict[str, Any]]]]:
        """Messages and tool calls of these trials (detail.load_transcripts): for `export --with-transcripts`."""
        with self._read() as conn:
            return detail.load_transcripts(conn, trial_ids)

    def llm_response(
        self, benchmark_id: str, arm: str, task_id: str, trial_index: int, role: str, turn: int
    ) -> LLMCallInfo | None:
        """The LLM response recorded for this call position: what replay returns (see
        detail.load_llm_response for the one-arm fallback)."""
        with self._read() as conn:
            return detail.load_llm_response(conn, benchmark_id, arm, task_id, trial_index, role, turn)

    # --- chained tasks -----------------------------------------------------------------------

    def record_chain_output(
        self,
        benchmark_id: str | None,
        episode_id: str | None,
        task_id: str,
        output: str | None,
        score: float | None = None,
        trial_id: str | None = None,
        *,
        token: str | None = None,
    ) -> None:
        """Record a chained task's output. `token`: the recording run's fencing token; when another run
        has claimed the benchmark since, nothing is written and OwnershipLost is raised."""
        with self._write() as conn:
            if token is not None and benchmark_id is not None:
                check_owner(conn, benchmark_id, token)
            conn.execute(
                insert(chain_output_table).values(
                    benchmark_id=benchmark_id,
                    episode_id=episode_id,
                    task_id=task_id,
                    trial_id=trial_id,
                    output=output,
                    score=score,
                    ts=self._clock(),
                )
            )

    def chain_outputs(self, benchmark_id: str, episode_id: str | None = None) -> list[ChainOutputInfo]:
        """Chained-task outputs of a benchmark (optionally one episode), oldest first."""
        co = chain_output_table
        query = select(co).where(co.c.benchmark_id == benchmark_id)
        if episode_id is not None:
            query = query.where(co.c.episode_id == episode_id)
        with self._read() as conn:
            rows = conn.execute(query.order_by(co.c.ts, co.c.id)).all()
        return [convert.chain_output_from_row(row._mapping) for row in rows]


def _errored(t: Any) -> Any:
    """The SQL of `metrics.records.is_errored` over attempted trials (as the metrics count errors): status
    error or timeout, or an error message; never a trial not attempted or replaced by a retry."""
    failed = t.c.status.in_((TrialStatus.ERROR, TrialStatus.TIMEOUT)) | ((t.c.error.is_not(None)) & (t.c.error != ""))
    return failed & t.c.status.not_in((*EXCLUDED_STATUSES, RETIRED_STATUS))


def _earlier(query: Any, spec_digest: str, exclude_id: str | None, finished_before: datetime | None) -> Any:
    """`query` limited to the earlier runs an attempt is compared with: finished benchmarks of this spec
    with a headline, not `errored`, other than `exclude_id`, finished before `finished_before`."""
    b = benchmark_table
    query = query.where(
        b.c.spec_digest == spec_digest, b.c.status == BenchmarkStatus.FINISHED, b.c.headline_score.is_not(None),
        or_(b.c.attempt_status.is_(None), b.c.attempt_status != ERRORED_ATTEMPT),
    )
    if exclude_id is not None:
        query = query.where(b.c.id != exclude_id)
    if finished_before is not None:
        query = query.where(b.c.finished_at < finished_before)
    return query
