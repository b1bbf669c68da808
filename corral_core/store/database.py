"""Engine creation for the store: SQLite tuned for one writer thread plus concurrent readers.

Nothing here runs at import time; the CLI, the batch mode and the tests build their own engine.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import platformdirs
from sqlalchemy import Connection, Engine, create_engine, event, inspect, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DatabaseError, NoSuchModuleError
from sqlalchemy.pool import StaticPool

from corral_core.errors import UserError
from corral_core.store.tables import ADDED_COLUMNS, ALL_TABLES, metadata

log = logging.getLogger(__name__)

# How long a connection waits for SQLite's write lock before "database is locked". Waiting is
# cheap and a lock is held only for one batched commit, so a starved machine must not turn a wait
# into a lost write.
BUSY_TIMEOUT_MS = 30_000

# Writers of one process take turns on a lock (see write_transaction).
_write_locks: weakref.WeakKeyDictionary[Engine, threading.RLock] = weakref.WeakKeyDictionary()
_write_locks_guard = threading.Lock()


def default_db_path() -> Path:
    """Where the TUI and batch mode keep their history when no --db is given."""
    return Path(platformdirs.user_data_dir("corral-tui", appauthor=False)) / "corral.db"


def make_engine(url: str | Path, *, echo: bool = False, create: bool = True) -> Engine:
    """Build an engine from a file path, a ``sqlite:///`` URL or any other SQLAlchemy URL.

    SQLite connections get WAL, ``synchronous=NORMAL``, a busy timeout and foreign keys, so the
    one writer thread and the readers (TUI, export) never trip over each other. The parent
    directory of a SQLite file is created; with ``create=False`` (read commands) a missing file
    is a UserError instead, and nothing is created. Other databases are used as given.
    """
    text = str(url)
    if isinstance(url, Path) or "://" not in text:
        path = Path(text).expanduser()
        text = f"sqlite:///{path.resolve()}"
    try:
        parsed = make_url(text)
    except ArgumentError as exc:
        raise UserError(
            f"{text!r} is not a database path or SQLAlchemy URL ({exc}).",
            where="--db",
            fix="pass a file path such as ./corral.db or a URL such as sqlite:///corral.db",
        ) from None
    if parsed.get_backend_name() != "sqlite":
        return _create(parsed, echo=echo)
    return _sqlite_engine(parsed, echo=echo, create=create)


def _create(url: URL, **kwargs: Any) -> Engine:
    try:
        return create_engine(url, **kwargs)
    except (NoSuchModuleError, ImportError) as exc:
        raise UserError(
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
            raise UserError(
                f"no store at {database}.",
                where="--db",
                fix="check the path (the workbench and `corral-tui --batch` create the store on their first run)",
            )
    else:
        folder = Path(database).expanduser().parent
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(
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
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA foreign_keys=ON")
    finally:
        cursor.close()


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
    """Create the store's tables and indexes if they are missing (safe to call every start).

    Columns added since a store was made are added to it. A database that cannot be opened or
    is not a database (a folder, a text file) is a UserError naming --db."""
    try:
        metadata.create_all(engine, tables=ALL_TABLES)
        _add_missing_columns(engine)
    except DatabaseError as exc:
        where = engine.url.render_as_string(hide_password=True)
        if engine.url.get_backend_name() == "sqlite" and engine.url.database:
            where = engine.url.database
        reason = getattr(exc.orig, "args", [None])[0] or exc.orig or exc
        raise UserError(
            f"cannot use {where} as the store: {reason}.",
            where="--db",
            fix="pass --db the path of a SQLite file (it is created if missing) that is not used for anything else",
        ) from None


def _add_missing_columns(engine: Engine) -> None:
    tables = {table.name: table for table in ALL_TABLES}
    for name, columns in ADDED_COLUMNS.items():
        for column_name in columns:
            if column_name in _columns(engine, name):
                continue
            kind = tables[name].c[column_name].type.compile(dialect=engine.dialect)
            log.info("store: adding column %s.%s", name, column_name)
            try:
                with write_transaction(engine) as conn:
                    conn.execute(text(f'ALTER TABLE "{name}" ADD COLUMN "{column_name}" {kind}'))
            except DatabaseError:
                if column_name not in _columns(engine, name):  # else another process added it first
                    raise


def _columns(engine: Engine, table: str) -> set[str]:
    return {column["name"] for column in inspect(engine).get_columns(table)}
