"""A store changed by hand is refused before anything is written: an emptied version table is named as
such (it is not damage, and not a store from before versions), and a table with an extra NOT NULL
column (with or without a default) is refused at open, not after a benchmark row went in."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.core.test_store_schema import QUICKSTART, assert_one_message, cli, dump, fresh_store


def test_an_emptied_version_table_is_named_as_such(tmp_path: Path) -> None:
    path = fresh_store(tmp_path / "emptied.db")
    with sqlite3.connect(path) as conn:
        conn.execute("delete from corral_schema_version")
    before = dump(path)
    batch = cli("--batch", str(QUICKSTART), "--db", str(path), "--quiet", cwd=tmp_path)
    assert_one_message(batch, "empty schema version table (corral_schema_version)", "INSERT INTO")
    assert "recover" not in batch.stderr and "duplicate column" not in batch.stderr
    assert_one_message(cli("history", "--db", str(path), cwd=tmp_path), "empty schema version table")
    assert dump(path) == before


@pytest.mark.parametrize("column", ["note text not null", "note text not null default 'x'"])
def test_an_extra_not_null_column_is_refused_before_anything_is_written(tmp_path: Path, column: str) -> None:
    path = fresh_store(tmp_path / "altered.db")
    with sqlite3.connect(path) as conn:  # SQLite cannot ADD a NOT NULL column without default: rebuild
        create = conn.execute("select sql from sqlite_master where type='table' and name='benchmark'").fetchone()[0]
        conn.execute("alter table benchmark rename to benchmark_before")
        conn.execute(create.replace("PRIMARY KEY (id)", f"{column}, PRIMARY KEY (id)"))
        conn.execute("drop table benchmark_before")
    before = dump(path)
    batch = cli("--batch", str(QUICKSTART), "--db", str(path), "--quiet", cwd=tmp_path)
    assert_one_message(batch, "table benchmark has NOT NULL column(s) note")
    assert dump(path) == before
