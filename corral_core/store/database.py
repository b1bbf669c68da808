"""Engine creation for the store: SQLite tuned for one writer thread plus concurrent readers.

Nothing here runs at import time; the CLI, the batch mode and the tests build their own engine.
"""

from __future__ import annotations

import sqlite3
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from time import monotonic, sleep
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DatabaseError, NoSuchModuleError
from sqlalchemy.pool import StaticPool

from corral_core.errors import StoreError
from corral_core.safetext import register_url_secrets
from corral_core.store.schema import ensure_schema

# How long a connection waits for SQLite's write lock before "database is locked". Waiting is
# cheap and a lock is held only for one batched commit, so a starved machine must not turn a wait
# into a lost write.
BUSY_TIMEOUT_MS = 30_000

# Writers of one process take turns on a lock (see write_transaction).
_write_locks: weakref.WeakKeyDictionary[Engine, threading.RLock] = weakref.WeakKeyDictionary()
_write_locks_guard = threading.Lock()
PG_CONNECT_TIMEOUT = 10  # seconds: a wrong host or a stopped server is reported, not waited for


def make_engine(url: str | Path, *, echo: bool = False, create: bool = True) -> Engine:
    """Build an engine from a file path, a ``sqlite:///`` URL or any other SQLAlchemy URL.

    SQLite connections get WAL, ``synchronous=NORMAL``, a busy timeout and foreign keys, so the
    one writer thread and the readers (TUI, export) never trip over each other. The parent
    directory of a SQLite file is created; with ``create=False`` (read commands) a missing file
    is a StoreError instead, and nothing is created. ``postgresql://`` (or ``postgres://``) URLs use
    psycopg 3, with pre-pinged pooled connections; other databases are used as given.
    """
    text = str(url)
    register_url_secrets(text)  # its userinfo and password= value, masked in every message from here on
    if isinstance(url, Path) or "://" not in text:
        path = Path(text).expanduser()
        text = f"sqlite:///{path.resolve()}"
    elif text.startswith("postgres://"):  # libpq's spelling, which SQLAlchemy does not know
        text = "postgresql://" + text[len("postgres://"):]
    try:
        parsed = make_url(text)
    except ArgumentError as exc:
        raise StoreError(
            f"{text!r} is not a database path or SQLAlchemy URL ({exc}).",
            where="--db",
            fix="pass a file path such as ./corral.db or a URL such as sqlite:///corral.db",
        ) from None
    backend = parsed.get_backend_name()
    if backend == "postgresql":
        if parsed.drivername == "postgresql":  # whatever SQLAlchemy's default driver: the one we ship
            parsed = parsed.set(drivername="postgresql+psycopg")
        # A server that went away (restart, idle timeout) costs a reconnect, not a failed write.
        return _create(parsed, echo=echo, pool_pre_ping=True,
                       connect_args={"connect_timeout": PG_CONNECT_TIMEOUT, "application_name": "corral-tui"})
    if backend != "sqlite":
        return _create(parsed, echo=echo)
    return _sqlite_engine(parsed, echo=echo, create=create)


def _create(url: URL, **kwargs: Any) -> Engine:
    try:
        return create_engine(url, **kwargs)
    except (NoSuchModuleError, ImportError) as exc:
        raise StoreError(
            f"cannot open database {url.render_as_string(hide_password=True)!r}: "
            f"its dialect or driver is not installed ({exc}).",
            where="--db",
            fix="install the database driver, or use a SQLite file path",
        ) from None


def _sqlite_engine(url: URL, *, echo: bool, create: bool) -> Engine:
    database = url.database or ""
    in_memory = database in ("", ":memory:") or "mode=memory" in str(url)
    kwargs: dict[str, Any] = {
        "connect_args": {"check_same_thread": False, "timeout": BUSY_TIMEOUT_MS / 1000},
        "echo": echo,
    }
    if in_memory:
        # One shared connection, or every thread would see its own empty database.
        kwargs["poolclass"] = StaticPool
    elif not create:
        if not Path(database).expanduser().is_file():
            raise StoreError(
                f"no store at {database}.",
                where="--db",
                fix="check the path (the workbench and `corral-tui --batch` create the store on their first run)",
            )
    else:
        folder = Path(database).expanduser().parent
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(
                f"cannot create the folder {str(folder)!r} for the database ({exc.strerror}).",
                where="--db",
                fix="pass a --db path in a folder you can write to",
            ) from None
    engine = _create(url, **kwargs)
    event.listen(engine, "connect", _set_sqlite_pragmas)
    return engine


def _set_sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    try:
        try:
            _set_wal(cursor)
        except UnicodeDecodeError:  # SQLite's own message names a damaged schema entry whose bytes are not UTF-8
            raise sqlite3.DatabaseError("malformed database schema (a name in it is not UTF-8 text)") from None
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA foreign_keys=ON")
    finally:
        cursor.close()



def _set_wal(cursor: Any) -> None:
    """Switch the file to WAL. SQLite answers "database is locked" at once, without its busy handler,
    when another connection holds a lock on a file still in rollback mode (several processes opening a
    new store together), so the switch is retried for up to the busy timeout like any other wait."""
    deadline = monotonic() + BUSY_TIMEOUT_MS / 1000
    pause = 0.005
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or monotonic() > deadline:
                raise
        sleep(pause)
        pause = min(pause * 2, 0.1)

@contextmanager
def write_transaction(engine: Engine) -> Iterator[Connection]:
    """A transaction that writes: committed on success, rolled back on error.

    On SQLite it starts with ``BEGIN IMMEDIATE``, taking the write lock first (waiting up to the
    busy timeout), so what it reads before writing (a trial's row, a benchmark's owner and
    heartbeat) cannot change before it commits. Python's sqlite3 would begin only at the first
    write, leaving earlier reads outside the transaction. An in-memory store shares one
    connection between threads and has no other connection to wait for: SQLite's default there.

    Writers of one process also take turns on a lock first: SQLite makes a waiting writer poll
    with growing sleeps, and a poller can keep missing the short gaps between the store writer's
    back-to-back batch commits until its busy timeout runs out ("database is locked", the CI flake
    of test_readers_never_see_database_is_locked_while_the_writer_commits). The busy timeout then
    only bounds waits for writers in other processes."""
    if engine.dialect.name != "sqlite":
        with engine.begin() as conn:
            yield conn
        return
    with _write_locks_guard:
        lock = _write_locks.setdefault(engine, threading.RLock())
    with lock, engine.begin() as conn:
        if not isinstance(engine.pool, StaticPool):
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        yield conn


def init_db(engine: Engine) -> None:
    """Open the store: create it if new, migrate it if older, refuse it if newer or damaged.

    Safe to call at every start, from several processes at once (see schema.py). A database that
    cannot be opened, is not a database (a folder, a text file), is damaged or carries a schema
    revision this version does not know is a StoreError naming --db; nothing is written to a
    refused store."""
    where = describe(engine)
    try:
        ensure_schema(engine, where)
    except DatabaseError as exc:
        raise store_error(exc, engine, "opening") from None


def store_error(exc: BaseException, engine: Engine, doing: str) -> StoreError:
    """A database error (DBAPIError) as one paragraph for the user: the store, what failed, why."""
    where = describe(engine)
    sqlite = engine.url.get_backend_name() == "sqlite"
    if doing.startswith("writ"):
        fix = ("make the store take writes again (free disk space, check the file's permissions"
               + (")" if sqlite else ", the database server and its limits)"))
    elif sqlite:
        fix = (f"a damaged file can be rescued with `sqlite3 {where} .recover`; otherwise pass --db another SQLite "
               "file (created if missing)")
    else:
        fix = "check that the database server runs and accepts these credentials, or pass --db another store"
    return StoreError(f"{doing} the store {where} failed: {reason(exc)}.", where="--db", fix=fix)


def describe(engine: Engine) -> str:
    """The store as a user named it: the SQLite file's path, or the URL without its password."""
    if engine.url.get_backend_name() == "sqlite" and engine.url.database:
        return engine.url.database
    return engine.url.render_as_string(hide_password=True)


def reason(exc: BaseException) -> str:
    """A database error's own first line, without SQLAlchemy's statement dump and links."""
    orig = getattr(exc, "orig", None) or exc
    text = str(getattr(orig, "args", [None])[0] or orig)
    return text.strip().splitlines()[0] if text.strip() else type(orig).__name__
