"""make_engine / init_db: SQLite tuned for one writer and many readers, any other URL as given."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import inspect, text

from corral_core.errors import UserError
from corral_core.store import default_db_path, init_db, make_engine

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
        assert _pragma(engine, "busy_timeout") == 5000
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


def test_other_urls_are_used_as_given_or_fail_in_words() -> None:
    import importlib.util

    url = "postgresql://user@localhost:1/db"
    if importlib.util.find_spec("psycopg2") is not None:
        engine = make_engine(url)  # no connection is made yet
        assert engine.url.render_as_string() == url
    else:
        with pytest.raises(UserError, match="driver"):
            make_engine(url)


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
