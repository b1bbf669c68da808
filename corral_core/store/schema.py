"""The store's schema version: checked at every open; older stores are migrated, newer or unknown
ones refused (a StoreError, exit 2) before anything is written.

Migrations are Alembic revisions in migrations/versions/, one file per schema change. Why Alembic
rather than a hand-made list of steps: it is the SQLAlchemy project's own migration tool, so a
maintainer knows it; it renders each change for the database at hand (PostgreSQL's ALTER, SQLite's
copy-and-move "batch" mode for what SQLite cannot ALTER); `alembic revision --autogenerate` writes
a revision from the models, and the same comparison in a test catches a column added to tables.py
without its revision; two branches that each add a revision show up as two heads, which a test
refuses. The version lives in the table `corral_schema_version` (Alembic's version table, renamed
so it never clashes with a user's own Alembic in a shared PostgreSQL database).

Stores made before the schema was versioned (our tables, no version table) are adopted: the
columns they may lack are added (what tables.ADDED_COLUMNS did until then), they are stamped with
the baseline revision and then upgraded like any other store.

Opening a store at the current revision costs one small query and a look at the tables' columns.
A new store (none of our tables yet) is made at once from the models, with the current revision
written as Alembic writes it (Alembic's own recipe for new databases: create, then stamp head); a
test keeps that schema equal to the one the migrations make. Alembic itself (about 0.2 s of imports)
is imported only when a store has to be migrated or its revision is not ours.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import (
    Column,
    Connection,
    DateTime,
    Engine,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    inspect,
    text,
)
from sqlalchemy.types import TypeEngine

from corral_core.errors import StoreError
from corral_core.store.tables import ALL_TABLES

log = logging.getLogger(__name__)

MIGRATIONS = Path(__file__).with_name("migrations")
VERSION_TABLE = "corral_schema_version"
HEAD = "0005"  # the newest revision in migrations/versions (a test keeps the two in step)
BASELINE = "0001"  # the schema of the stores made before versioning
EMPTY = "(empty)"  # stored_revision of a version table with no row
# Columns the first releases added in place: a store from before versioning may lack them.
LEGACY_ADDED_COLUMNS: dict[str, dict[str, TypeEngine[Any]]] = {
    "benchmark": {"owner_pid": Integer(), "owner_host": String(), "heartbeat_at": DateTime()},
}
_PG_LOCK_KEY = 0x636F7272616C  # "corral": one advisory lock serialises concurrent migrations


def ensure_schema(engine: Engine, where: str) -> None:
    """Bring the store at `engine` to the current schema, or refuse it with a StoreError.

    `where` names the store in messages. Concurrent opens (several runners, the TUI) are safe: the
    migration runs under a lock and re-reads the revision once it holds it."""
    with engine.connect() as conn:
        current = stored_revision(conn)
    if current != HEAD:
        _check_known(current, where)
        with _migration_lock(engine) as conn:
            current = stored_revision(conn)
            _check_known(current, where)
            if current is None and not _our_tables(conn):
                _create(conn)
            elif current != HEAD:
                _migrate(conn, current, where)
    check_tables(engine, where)


def _our_tables(conn: Connection) -> set[str]:
    """Which of the models' tables the database has (a shared database may hold other tables)."""
    return set(inspect(conn).get_table_names()) & {table.name for table in ALL_TABLES}


def _create(conn: Connection) -> None:
    """A new store: the models' tables, and the version table holding HEAD, as Alembic makes it."""
    log.info("store: creating a new store at revision %s", HEAD)
    ALL_TABLES[0].metadata.create_all(conn, tables=ALL_TABLES)
    version = Table(VERSION_TABLE, MetaData(), Column("version_num", String(32), nullable=False),
                    PrimaryKeyConstraint("version_num", name=f"{VERSION_TABLE}_pkc"))
    version.create(conn)
    conn.execute(version.insert().values(version_num=HEAD))


def stored_revision(conn: Connection) -> str | None:
    """The revision recorded in the store (None for a new store or one from before versioning)."""
    if not inspect(conn).has_table(VERSION_TABLE):
        return None
    rows = conn.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).scalars().all()
    if len(rows) != 1:
        return ",".join(sorted(rows)) or EMPTY  # an emptied version table is not a store from before versions
    return str(rows[0])


def known_revisions() -> set[str]:
    return {script.revision for script in _scripts().walk_revisions()}


def script_heads() -> tuple[str, ...]:
    return tuple(_scripts().get_heads())


def _check_known(current: str | None, where: str) -> None:
    if current is None or current in known_revisions():
        return
    if current == EMPTY:
        raise StoreError(
            f"the store {where} has an empty schema version table ({VERSION_TABLE}): its revision row was "
            "deleted, so corral-tui cannot tell which schema the tables have. Nothing was changed in it.",
            where="--db",
            fix=f"if a corral-tui of schema {HEAD} wrote it, put the row back (INSERT INTO {VERSION_TABLE} "
                f"(version_num) VALUES ('{HEAD}')); otherwise pass --db another store.",
        )
    from corral_core import __version__

    raise StoreError(
        f"the store {where} has schema revision {current!r}, which this corral-tui ({__version__}, schema "
        f"{HEAD}) does not know: a newer corral-tui wrote it, or it is not a corral-tui store. Nothing was "
        "changed in it.",
        where="--db",
        fix="use the corral-tui version that wrote it (or a newer one), or pass --db another store.",
    )


def _migrate(conn: Connection, current: str | None, where: str) -> None:
    from alembic import command

    config = _config(conn)
    if current is None:
        present = _our_tables(conn)
        if present:
            missing = sorted({table.name for table in ALL_TABLES} - present)
            if missing:
                raise StoreError(
                    f"{where} has some of corral-tui's tables but not {', '.join(missing)}: it is not a "
                    "corral-tui store, or it was damaged. Nothing was changed in it.",
                    where="--db",
                    fix="pass --db a new file (or an empty PostgreSQL database or schema) for corral-tui's store.",
                )
            _add_legacy_columns(conn)
            log.info("store: adopting a store from before schema versioning as revision %s", BASELINE)
            command.stamp(config, BASELINE)
    log.info("store: migrating %s from revision %s to %s", where, current or "(new)", HEAD)
    command.upgrade(config, "head")


def _add_legacy_columns(conn: Connection) -> None:
    for table, columns in LEGACY_ADDED_COLUMNS.items():
        present = {column["name"] for column in inspect(conn).get_columns(table)}
        for name, kind in columns.items():
            if name not in present:
                log.info("store: adding column %s.%s", table, name)
                conn.execute(text(f'ALTER TABLE "{table}" ADD COLUMN "{name}" {kind.compile(dialect=conn.dialect)}'))


def check_tables(engine: Engine, where: str) -> None:
    """Every table and column the models declare exists (a table replaced or altered by hand fails)."""
    with engine.connect() as conn:
        inspector = inspect(conn)
        present = set(inspector.get_table_names())
        problems = []
        for table in ALL_TABLES:
            if table.name not in present:
                problems.append(f"table {table.name} is missing")
                continue
            columns = inspector.get_columns(table.name)
            have = {column["name"] for column in columns}
            lacking = [column.name for column in table.columns if column.name not in have]
            if lacking:
                problems.append(f"table {table.name} lacks {', '.join(lacking)}")
            # A column we never write that must not be NULL would refuse (or silently fill) our rows mid-run.
            foreign = [column["name"] for column in columns
                       if column["name"] not in table.columns and not column.get("nullable", True)]
            if foreign:
                problems.append(f"table {table.name} has NOT NULL column(s) {', '.join(foreign)} that corral-tui "
                                "does not write")
    if problems:
        raise StoreError(
            f"the store {where} does not have the schema its revision promises ({'; '.join(problems)}): it was "
            "changed by something other than corral-tui. Nothing was changed in it.",
            where="--db",
            fix="pass --db another store, or restore this one from a backup.",
        )


@contextmanager
def _migration_lock(engine: Engine) -> Iterator[Connection]:
    """A connection in a transaction that excludes every other migrating process until it ends.

    PostgreSQL: a transaction-scoped advisory lock (its DDL is transactional, so a failed migration
    leaves nothing behind). SQLite: BEGIN IMMEDIATE, the write lock, taken at once (pysqlite left to
    itself would run DDL outside any transaction)."""
    backend = engine.url.get_backend_name()
    if backend == "sqlite":
        with engine.connect() as raw:
            conn = raw.execution_options(isolation_level="AUTOCOMMIT")
            conn.exec_driver_sql("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.exec_driver_sql("ROLLBACK")
                raise
            conn.exec_driver_sql("COMMIT")
        return
    with engine.begin() as conn:
        if backend == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_LOCK_KEY})
        yield conn


def _config(conn: Connection) -> Any:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = conn
    return config


def _scripts() -> Any:
    from alembic.script import ScriptDirectory

    return ScriptDirectory(str(MIGRATIONS))
