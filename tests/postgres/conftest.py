"""The shared PostgreSQL store, tested against a real server each test session starts on 127.0.0.1
(see server.py); skipped, with the reason, only where PostgreSQL cannot start at all."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.postgres.server import CannotStart, PostgresServer


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PostgresServer]:
    try:
        server = PostgresServer().start()
    except CannotStart as exc:
        pytest.skip(f"PostgreSQL cannot start here: {exc}")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_url(pg_server: PostgresServer) -> str:
    """A fresh, empty database on the session's server."""
    return pg_server.new_database()
