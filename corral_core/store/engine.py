"""Engine creation for the store: SQLite tuned for one writer thread plus concurrent readers.

Nothing here runs at import time; the CLI, the batch mode and the tests build their own engine.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import platformdirs
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError
from sqlalchemy.pool import StaticPool

from corral_core.errors import UserError
from corral_core.store.tables import ALL_TABLES, metadata

log = logging.getLogger(__name__)

BUSY_TIMEOUT_MS = 5_000


def default_db_path() -> Path:
    """Where the TUI and batch mode keep their history when no --db is given."""
    return Path(platformdirs.user_data_dir("corral-tui", appauthor=False)) / "corral.db"


def make_engine(url: str | Path, *, echo: bool = False) -> Engine:
    """Build an engine from a file path, a ``sqlite:///`` URL or any other SQLAlchemy URL.

    SQLite connections get WAL, ``synchronous=NORMAL``, a busy timeout and foreign keys, so the
    one writer thread and the readers (TUI, export) never trip over each other. The parent
    directory of a SQLite file is created. Other databases are used as given.
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
    return _sqlite_engine(parsed, echo=echo)


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


def _sqlite_engine(url: URL, *, echo: bool) -> Engine:
    database = url.database or ""
    in_memory = database in ("", ":memory:") or "mode=memory" in str(url)
    kwargs: dict[str, Any] = {
        "connect_args": {"check_same_thread": False, "timeout": BUSY_TIMEOUT_MS / 1000},
        "echo": echo,
    }
    if in_memory:
        # One shared connection, or every thread would see its own empty database.
        kwargs["poolclass"] = StaticPool
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


def init_db(engine: Engine) -> None:
    """Create the store's tables and indexes if they are missing (safe to call every start)."""
    metadata.create_all(engine, tables=ALL_TABLES)
