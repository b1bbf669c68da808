"""make_engine / init_db: SQLite tuned for one writer and many readers, any other URL as given."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import inspect, text

from corral_core.errors import UserError
from corral_core.store import default_db_path, init_db, make_engine
from corral_core.store.database import BUSY_TIMEOUT_MS, write_transaction

TABLES = {"benchmark", "trial", "message", "tool_call", "hook_event", "llm_call", "chain_output"}


def _pragma(engine, name: str):
    with engine.connect() as conn:
        return conn.execute(text(f"PRAGMA {name}")).scalar()


@pytest.mark.parametrize("as_url", [False, True])
def test_sqlite_engine_uses_wal_busy_timeout_and_foreign_keys(tmp_path: Path, as_url: bool) -> None:
    path = tmp_path / "nested" / "corral.db"  # the folder does not exist yet
    engine = make_engine(f"sqlite:///{path}" if as_url else path)
    try:
        init_db(engine)
        assert path.exists()
        assert _pragma(engine, "journal_mode") == "wal"
        assert _pragma(engine, "busy_timeout") == BUSY_TIMEOUT_MS
        assert _pragma(engine, "synchronous") == 1  # NORMAL
        assert _pragma(engine, "foreign_keys") == 1
    finally:
        engine.dispose()


def test_plain_string_path_is_accepted(tmp_path: Path) -> None:
    engine = make_engine(str(tmp_path / "x.db"))
    try:
        assert engine.url.get_backend_name() == "sqlite"
        assert engine.url.database == str((tmp_path / "x.db").resolve())
    finally:
        engine.dispose()


def test_init_db_is_idempotent_and_creates_every_table(tmp_path: Path) -> None:
    engine = make_engine(tmp_path / "x.db")
    try:
        init_db(engine)
        init_db(engine)
        names = set(inspect(engine).get_table_names())
        assert names >= TABLES
        indexes = {ix["name"] for ix in inspect(engine).get_indexes("trial")}
        assert "ix_trial_benchmark_started" in indexes
    finally:
        engine.dispose()


def test_in_memory_url_is_shared_across_threads() -> None:
    import threading

    engine = make_engine("sqlite://")
    init_db(engine)
    seen: list[set[str]] = []
    thread = threading.Thread(target=lambda: seen.append(set(inspect(engine).get_table_names())))
    thread.start()
    thread.join(5)
    assert seen[0] >= TABLES


def test_postgresql_urls_use_psycopg_3_and_missing_drivers_fail_in_words() -> None:
    for url in ("postgresql://user@localhost:1/db", "postgres://user@localhost:1/db",
                "postgresql+psycopg://user@localhost:1/db"):
        engine = make_engine(url)  # no connection is made yet
        assert engine.dialect.driver == "psycopg"
        assert engine.url.database == "db" and engine.url.port == 1
    with pytest.raises(UserError, match="driver"):
        make_engine("mysql://user@localhost:1/db")  # no MySQL driver is installed
    with pytest.raises(UserError, match="driver"):
        make_engine("postgresql+psycopg2://user@localhost:1/db")  # nor psycopg2


def test_bad_url_is_a_user_error() -> None:
    with pytest.raises(UserError) as info:
        make_engine("nosuchdialect://x")
    assert "--db" in str(info.value)
    with pytest.raises(UserError):
        make_engine("sqlite+:///bad")


def test_default_db_path_is_in_the_user_data_dir() -> None:
    path = default_db_path()
    assert path.name == "corral.db"
    assert path.parent.name == "corral-tui"


def test_importing_the_store_creates_no_engine_and_no_ui() -> None:
    code = (
        "import sys\n"
        "import corral_core.store, corral_core.store.writer, corral_core.store.repository\n"
        "assert 'textual' not in sys.modules, 'textual imported'\n"
        "assert 'litellm' not in sys.modules, 'litellm imported'\n"
        "import gc\n"
        "from sqlalchemy.engine import Engine\n"
        "assert not [o for o in gc.get_objects() if isinstance(o, Engine)], 'engine at import'\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


def test_a_write_transaction_reads_and_writes_with_no_commit_in_between(tmp_path: Path) -> None:
    """Claiming a benchmark reads its owner and heartbeat, then writes: another runner must not
    commit between the two. Python's sqlite3 starts a transaction only at the first write, so a
    read before it saw data another connection could change at once; a write transaction takes
    SQLite's write lock first, so the other connection waits (here it gives up at once)."""
    import sqlite3
    import threading

    path = tmp_path / "store.db"
    engine = make_engine(path)
    init_db(engine)
    other_done = threading.Event()
    outcome: list[str] = []

    def other_connection_writes() -> None:
        raw = sqlite3.connect(path, timeout=0, isolation_level=None)
        try:
            raw.execute("INSERT INTO chain_output (task_id, output, ts) VALUES ('other', 'x', 0)")
            outcome.append("committed")
        except sqlite3.OperationalError as exc:
            outcome.append(str(exc))
        finally:
            raw.close()
            other_done.set()

    try:
        with write_transaction(engine) as conn:
            conn.execute(text("SELECT count(*) FROM chain_output")).scalar()
            threading.Thread(target=other_connection_writes).start()
            other_done.wait()
            conn.execute(text("INSERT INTO chain_output (task_id, output, ts) VALUES ('mine', 'y', 0)"))
        assert outcome == ["database is locked"]  # it had to wait for us, not the other way round
        with engine.connect() as conn:
            assert conn.execute(text("SELECT task_id FROM chain_output")).scalars().all() == ["mine"]
    finally:
        engine.dispose()
