"""Whole-benchmark reads on PostgreSQL: keyset pages give every trial once and in order across page
boundaries and ties, and the streamed export writes what the old export wrote (cases in
tests/core/streaming_cases.py, also run on SQLite)."""

from __future__ import annotations

from pathlib import Path

from corral_core.store import init_db, make_engine
from tests.core.streaming_cases import check_keyset_pages, check_streamed_export


def test_keyset_pages_give_every_trial_once_in_order(pg_url: str) -> None:
    engine = make_engine(pg_url)
    try:
        init_db(engine)
        check_keyset_pages(engine)
    finally:
        engine.dispose()


def test_streamed_export_writes_what_the_old_export_wrote(pg_url: str, tmp_path: Path) -> None:
    engine = make_engine(pg_url)
    try:
        init_db(engine)
        check_streamed_export(engine, pg_url, tmp_path)
    finally:
        engine.dispose()
