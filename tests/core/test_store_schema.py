"""The store's schema version: new stores are stamped, older ones migrated, newer, unknown or damaged
ones refused with exit 2 and one message, and nothing is written to a refused store."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from sqlalchemy import inspect, text

from corral_core.errors import UserError
from corral_core.store import Repository, init_db, make_engine
from corral_core.store import schema as store_schema
from corral_core.store.tables import ALL_TABLES
from tests.inprocess import run_cli

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data"
LEGACY_DUMP = DATA / "store_0_1.sql"  # made by corral-tui 0.1, before the schema was versioned
QUICKSTART = ROOT / "sample_tasks" / "quickstart.bench.yaml"


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`corral-tui ARGS` in this process (tests/inprocess.py): each command here reads one damaged or
    refused store and prints one paragraph; a child interpreter would pay seconds of imports for it."""
    return run_cli(*args, cwd=cwd)


def fresh_store(path: Path) -> Path:
    engine = make_engine(path)
    init_db(engine)
    Repository(engine).create_benchmark(spec_name="kept", spec_digest="d")
    engine.dispose()
    return path


def legacy_store(path: Path) -> Path:
    with sqlite3.connect(path) as conn:
        conn.executescript(LEGACY_DUMP.read_text(encoding="utf-8"))
    return path


def dump(path: Path) -> list[str]:
    with sqlite3.connect(path) as conn:
        return list(conn.iterdump())


def set_revision(path: Path, revision: str) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute(f"update {store_schema.VERSION_TABLE} set version_num = ?", (revision,))


def revision_of(path: Path) -> str | None:
    engine = make_engine(path)
    try:
        with engine.connect() as conn:
            return store_schema.stored_revision(conn)
    finally:
        engine.dispose()


def assert_one_message(proc: subprocess.CompletedProcess[str], *phrases: str) -> None:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith("corral-tui: ") and proc.stderr.count("corral-tui: ") == 1, proc.stderr
    for phrase in phrases:
        assert phrase in proc.stderr


# --- revisions ----------------------------------------------------------------------------------------


def test_the_migrations_have_one_head_and_it_is_the_one_the_code_expects() -> None:
    assert store_schema.script_heads() == (store_schema.HEAD,)
    assert store_schema.BASELINE in store_schema.known_revisions()


def test_a_new_store_is_stamped_with_the_current_revision(tmp_path: Path) -> None:
    path = fresh_store(tmp_path / "new.db")
    assert revision_of(path) == store_schema.HEAD


def test_migrating_an_empty_database_gives_exactly_the_models(tmp_path: Path) -> None:
    """A column added to tables.py without its migration (or the reverse) fails here."""
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    engine = make_engine(tmp_path / "m.db")
    init_db(engine)
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True,
                                                         "version_table": store_schema.VERSION_TABLE})
        differences = compare_metadata(context, ALL_TABLES[0].metadata)
    engine.dispose()
    assert differences == []


def _schema(path: Path) -> dict[str, object]:
    """Every table's columns (by name), keys, indexes and constraints as SQLAlchemy reflects them, and the revision."""
    engine = make_engine(path)
    try:
        with engine.connect() as conn:
            inspector = inspect(conn)
            # the order of columns aside: a migration appends a column where the models declare it
            tables = {name: {"columns": sorted(({key: str(value) for key, value in column.items()}
                                                for column in inspector.get_columns(name)), key=lambda c: c["name"]),
                             "primary key": inspector.get_pk_constraint(name),
                             "foreign keys": inspector.get_foreign_keys(name),
                             "indexes": sorted(inspector.get_indexes(name), key=lambda index: str(index["name"])),
                             "unique": sorted(inspector.get_unique_constraints(name), key=lambda u: str(u["name"]))}
                      for name in inspector.get_table_names()}
            return {"tables": tables, "revision": store_schema.stored_revision(conn)}
    finally:
        engine.dispose()


def test_a_new_store_is_made_without_alembic_with_the_schema_the_migrations_make(tmp_path: Path) -> None:
    """A new store is created from the models and stamped (Alembic's ~0.2 s import spared at a first
    start); the result is the schema that running every migration on an empty database gives."""
    created = tmp_path / "created.db"
    code = ("import sys; from corral_core.store import init_db, make_engine; "
            f"init_db(make_engine({str(created)!r})); print('alembic' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"

    migrated = tmp_path / "migrated.db"
    engine = make_engine(migrated)
    try:
        with store_schema._migration_lock(engine) as conn:
            store_schema._migrate(conn, None, "migrated.db")
    finally:
        engine.dispose()
    assert _schema(created) == _schema(migrated)
    assert _schema(created)["revision"] == store_schema.HEAD


def test_concurrent_opens_of_a_new_store_all_succeed(tmp_path: Path) -> None:
    path = tmp_path / "race.db"
    start = threading.Barrier(4)
    errors: list[BaseException] = []

    def open_it() -> None:
        engine = make_engine(path)
        try:
            start.wait(10)
            init_db(engine)
        except BaseException as exc:
            errors.append(exc)
        finally:
            engine.dispose()

    threads = [threading.Thread(target=open_it) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    assert revision_of(path) == store_schema.HEAD



def test_a_new_store_opened_while_another_connection_creates_it_waits_instead_of_failing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLite refuses the switch to WAL at once ("database is locked", no busy handler) while another
    connection writes a file still in rollback mode: the race several processes opening one new store
    run into. The open waits for that writer instead (here it finishes at the first pause)."""
    from corral_core.store import database

    path = tmp_path / "new.db"
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    other.execute("CREATE TABLE scratch (i INTEGER)")
    pauses: list[float] = []

    def pause(seconds: float) -> None:
        pauses.append(seconds)
        if other.in_transaction:
            other.execute("COMMIT")

    monkeypatch.setattr(database, "sleep", pause, raising=False)
    engine = make_engine(path)
    try:
        init_db(engine)
    finally:
        engine.dispose()
        other.close()
    assert pauses, "the store opened without meeting the lock: the test did not set up the race"
    assert revision_of(path) == store_schema.HEAD

# --- stores from before versioning ----------------------------------------------------------------------


def test_a_store_made_by_0_1_is_adopted_with_every_row_kept(tmp_path: Path) -> None:
    path = legacy_store(tmp_path / "old.db")
    before = {table.name: _count(path, table.name) for table in ALL_TABLES}
    assert before["trial"] == 10 and before["message"] > 0 and before["llm_call"] > 0
    assert revision_of(path) is None

    history = cli("history", "--db", str(path), cwd=tmp_path)
    assert history.returncode == 0, history.stderr
    assert "quickstart" in history.stdout
    assert revision_of(path) == store_schema.HEAD
    assert {table.name: _count(path, table.name) for table in ALL_TABLES} == before

    engine = make_engine(path)
    init_db(engine)
    (benchmark,) = Repository(engine).list_benchmarks().items
    assert benchmark.status == "finished" and benchmark.trial_count == 10
    assert len(Repository(engine).trial_records(benchmark.id)) == 10
    engine.dispose()


def test_a_store_from_before_owner_columns_gets_them(tmp_path: Path) -> None:
    path = legacy_store(tmp_path / "older.db")
    with sqlite3.connect(path) as conn:
        for column in ("owner_pid", "owner_host", "heartbeat_at"):
            conn.execute(f"alter table benchmark drop column {column}")
    engine = make_engine(path)
    init_db(engine)
    (benchmark,) = Repository(engine).list_benchmarks().items
    assert benchmark.owner_pid is None
    engine.dispose()
    assert revision_of(path) == store_schema.HEAD


def test_a_database_with_only_some_of_our_tables_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "half.db"
    with sqlite3.connect(path) as conn:
        conn.execute("create table trial (id text primary key, note text)")
    with pytest.raises(UserError, match="not a corral-tui store"):
        init_db(make_engine(path))
    assert dump(path) == ["BEGIN TRANSACTION;", "CREATE TABLE trial (id text primary key, note text);", "COMMIT;"]


# --- stores this version must not touch -----------------------------------------------------------------


def test_a_store_from_a_newer_version_is_refused_and_left_untouched(tmp_path: Path) -> None:
    path = fresh_store(tmp_path / "future.db")
    set_revision(path, "9999_from_the_future")
    before = dump(path)

    batch = cli("--batch", str(QUICKSTART), "--db", str(path), "--quiet", cwd=tmp_path)
    assert_one_message(batch, "9999_from_the_future", "newer corral-tui", "--db")
    assert dump(path) == before  # no benchmark, no trial, no migration

    for command in (("history", "--db", str(path)), ("export", "bm_x", "--db", str(path))):
        proc = cli(*command, cwd=tmp_path)
        assert_one_message(proc, "9999_from_the_future")
    assert dump(path) == before


def test_a_table_replaced_by_hand_is_refused(tmp_path: Path) -> None:
    path = fresh_store(tmp_path / "replaced.db")
    with sqlite3.connect(path) as conn:
        conn.execute("drop table trial")
        conn.execute("create table trial (id text primary key, benchmark_id text)")
    before = dump(path)
    batch = cli("--batch", str(QUICKSTART), "--db", str(path), "--quiet", cwd=tmp_path)
    assert_one_message(batch, "table trial lacks", "arm")
    assert dump(path) == before


@pytest.mark.parametrize("damage", ["garbage_pages", "truncated"])
def test_a_corrupt_store_is_a_user_error_for_every_command(tmp_path: Path, damage: str) -> None:
    path = fresh_store(tmp_path / "corrupt.db")
    engine = make_engine(path)
    repo = Repository(engine)
    for i in range(300):  # a few pages of rows, so there is something to damage past the header
        repo.create_benchmark(spec_name=f"s{i}" * 20, spec_digest="d", spec_yaml="x" * 500)
    engine.dispose()
    data = bytearray(path.read_bytes())
    if damage == "truncated":
        data = data[: len(data) // 3]
    else:
        for offset in range(4096 * 3, len(data), 4096):
            data[offset: offset + 64] = b"\xde\xad\xbe\xef" * 16
    path.write_bytes(bytes(data))

    for command in (("history", "--db", str(path)),
                    ("export", "bm_1", "--db", str(path))):
        proc = cli(*command, cwd=tmp_path)
        assert_one_message(proc, str(path))
    assert_one_message(cli("--batch", str(QUICKSTART), "--db", str(path), "--quiet", cwd=tmp_path), str(path))


def test_export_of_a_benchmark_kept_in_a_damaged_store_is_one_paragraph(tmp_path: Path) -> None:
    """The issue's recipe (damaged pages, then `export` of a benchmark that is in the file, in every
    format): exit 2, one paragraph with the rescue hint, no traceback."""
    path = fresh_store(tmp_path / "damaged.db")
    engine = make_engine(path)
    repo = Repository(engine)
    ids = [repo.create_benchmark(spec_name=f"s{i}" * 20, spec_digest="d", spec_yaml="x" * 500).id for i in range(300)]
    engine.dispose()
    data = bytearray(path.read_bytes())
    for offset in range(4096 * 3, len(data), 4096):
        data[offset: offset + 64] = b"\xde\xad\xbe\xef" * 16
    path.write_bytes(bytes(data))
    for fmt in ("json", "csv"):
        proc = cli("export", ids[-1], "--db", str(path), "--format", fmt, cwd=tmp_path)
        assert_one_message(proc, str(path), ".recover")


def _count(path: Path, table: str) -> int:
    engine = make_engine(path)
    try:
        with engine.connect() as conn:
            return int(conn.execute(text(f'select count(*) from "{table}"')).scalar_one())
    finally:
        engine.dispose()


DAMAGED_VALUES = {  # what flipped bytes in a record do to a stored value SQLite does not check
    "text not UTF-8": ("update trial set explanation = cast(x'3134342069732077697468ff2c09' as text) "
                       "where id = (select min(id) from trial)", "Could not decode to UTF-8"),
    "unreadable date": ("update tool_call set ts = '2026-11-26 23:15:55q490862'", "Invalid isoformat string"),
}


@pytest.mark.parametrize(("fmt", "damage"), [("json", "text not UTF-8"), ("csv", "text not UTF-8"),
                                             ("inspect", "text not UTF-8"), ("inspect", "unreadable date")])
def test_export_of_a_store_whose_rows_are_damaged_is_one_paragraph_and_exit_2(tmp_path: Path, fmt: str,
                                                                               damage: str) -> None:
    """Damaged pages SQLite does not notice on open leave values that cannot be read: bytes that are not
    UTF-8 in a text column (before: sqlite3.OperationalError from the driver's cursor, a traceback, exit 1)
    or a date that does not parse (before: ValueError from SQLAlchemy's row processing, exit 1)."""
    from tests.core.streaming_cases import BM, fill

    path = tmp_path / "damaged.db"
    engine = make_engine(path)
    init_db(engine)
    fill(engine)
    engine.dispose()
    sql, phrase = DAMAGED_VALUES[damage]
    with sqlite3.connect(path) as conn:
        conn.execute(sql)
    args = ("--with-transcripts",) if fmt == "json" else ("--format", fmt, "-o", str(tmp_path / f"out.{fmt}"))
    proc = cli("export", BM, "--db", str(path), *args, cwd=tmp_path)
    assert_one_message(proc, str(path), phrase, ".recover")


def test_a_damaged_schema_name_that_is_not_utf8_is_one_paragraph_for_export_and_history(tmp_path: Path) -> None:
    """SQLite's "malformed database schema (NAME)" quotes the damaged bytes; the driver could not decode
    its own error message (before: UnicodeDecodeError from PRAGMA journal_mode, a traceback, exit 1)."""
    path = fresh_store(tmp_path / "schema.db")
    with sqlite3.connect(path) as conn:
        name = conn.execute("select name from sqlite_master where type = 'index' and sql is not null").fetchone()[0]
        conn.execute("pragma writable_schema = on")
        conn.execute("update sqlite_master set name = 'zz' || char(1) || 'zz', "
                     "sql = 'CREATE INDEX zz' || char(1) || 'zz garbage' where name = ?", (name,))
        conn.commit()
        conn.execute("pragma wal_checkpoint(truncate)")  # into the file itself, out of the WAL
    data = path.read_bytes()
    assert data.count(b"zz\x01zz") == 2  # the name and the statement
    path.write_bytes(data.replace(b"zz\x01zz", b"zz\xffzz"))  # a flipped byte in the schema page
    for command in (("export", "bm_x", "--db", str(path)), ("history", "--db", str(path))):
        assert_one_message(cli(*command, cwd=tmp_path), str(path), "malformed database schema", ".recover")
