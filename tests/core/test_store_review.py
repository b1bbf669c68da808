"""Store fixes from review: unusable --db paths read as user errors, read-only opening creates nothing,
benchmarks record their owner, and auto-resume only continues runs nobody is running."""

from __future__ import annotations

import itertools
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import update

from corral_core.errors import UserError
from corral_core.store import Repository, init_db, make_engine
from corral_core.store.ownership import Owner, owner_alive
from corral_core.store.tables import benchmark_table


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2025, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture()
def clock() -> Clock:
    return Clock()


@pytest.fixture()
def repo(tmp_path: Path, clock: Clock) -> Iterator[Repository]:
    engine = make_engine(tmp_path / "store.db")
    init_db(engine)
    ids = (f"bm_{i}" for i in itertools.count(1))
    yield Repository(engine, clock=clock, id_factory=lambda: next(ids))
    engine.dispose()


def dead_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(done.stdout)


# --- unusable stores ----------------------------------------------------------------------------------


def test_a_directory_as_the_store_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError) as info:
        init_db(make_engine(tmp_path))
    message = str(info.value)
    assert "--db" in message and str(tmp_path) in message


def test_a_file_that_is_not_a_database_is_a_user_error(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_text("just some notes, not a database\n" * 100, encoding="utf-8")
    with pytest.raises(UserError) as info:
        init_db(make_engine(path))
    assert "--db" in str(info.value) and "notes.db" in str(info.value)
    assert path.read_text(encoding="utf-8").startswith("just some notes")


def test_opening_a_missing_store_for_reading_creates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "typo" / "nested" / "store.db"
    with pytest.raises(UserError) as info:
        make_engine(path, create=False)
    assert "no store at" in str(info.value) and str(path) in str(info.value)
    assert not (tmp_path / "typo").exists()


def test_an_existing_store_opens_for_reading(tmp_path: Path) -> None:
    engine = make_engine(tmp_path / "s.db")
    init_db(engine)
    engine.dispose()
    engine = make_engine(tmp_path / "s.db", create=False)
    init_db(engine)
    assert Repository(engine).count_benchmarks() == 0
    engine.dispose()


def test_a_store_from_before_owners_is_upgraded_in_place(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    engine = make_engine(path)
    init_db(engine)
    Repository(engine).create_benchmark(spec_name="old", spec_digest="d")
    engine.dispose()
    with sqlite3.connect(path) as conn:  # as corral-tui made it before schema versions and owners
        conn.execute("drop table corral_schema_version")
        for column in ("owner_pid", "owner_host", "heartbeat_at", "owner_token"):  # (owner_token: migration 0005)
            conn.execute(f"alter table benchmark drop column {column}")
        conn.execute("drop index ix_trial_parent")  # migration 0003's fork columns came after them too
        for column in ("parent_trial_id", "fork_iteration",  # ... and migration 0004's waits
                       "llm_retries", "llm_retry_wait", "rate_limit_wait"):
            conn.execute(f"alter table trial drop column {column}")
    engine = make_engine(path)
    init_db(engine)
    repo = Repository(engine)
    old = repo.find_unfinished_benchmark("d")  # left running by a version that recorded no owner: resumable
    assert old is not None and old.owner_pid is None
    repo.create_benchmark(spec_name="new", spec_digest="e", owner=Owner.current())
    assert repo.find_unfinished_benchmark("e") is None  # live: ours
    engine.dispose()


# --- owners and auto-resume ---------------------------------------------------------------------------


def test_auto_resume_skips_benchmarks_whose_owner_is_alive(repo: Repository, clock: Clock) -> None:
    here = Owner.current()
    repo.create_benchmark(spec_name="s", spec_digest="d", owner=Owner(dead_pid(), here.host))  # bm_1: crashed
    clock.now += timedelta(seconds=1)
    repo.create_benchmark(spec_name="s", spec_digest="d", owner=here)  # bm_2: live (this process)
    assert [b.id for b in repo.live_benchmarks("d")] == ["bm_2"]
    assert repo.find_unfinished_benchmark("d").id == "bm_1"
    repo.finish_benchmark("bm_1", "finished")
    assert repo.find_unfinished_benchmark("d") is None
    repo.finish_benchmark("bm_2", "interrupted")  # stopped cleanly: resumable by anyone
    assert repo.find_unfinished_benchmark("d").id == "bm_2"


def age_heartbeat(repo: Repository, benchmark_id: str, seconds: float) -> None:
    """Make the benchmark's last heartbeat `seconds` old by the database's clock (time passing, in the only clock
    that counts; the host clock `clock` plays no part in it)."""
    with repo.engine.begin() as conn:
        conn.execute(update(benchmark_table).where(benchmark_table.c.id == benchmark_id)
                     .values(heartbeat_at=repo.database_now() - timedelta(seconds=seconds)))


def test_a_live_pid_with_a_stale_heartbeat_is_taken_as_dead(repo: Repository, clock: Clock) -> None:
    here = Owner.current()
    info = repo.create_benchmark(spec_name="s", spec_digest="d", owner=here)
    assert owner_alive(info, repo.database_now(), here=here)
    age_heartbeat(repo, "bm_1", 30)
    assert repo.heartbeat("bm_1", info.owner_token)
    age_heartbeat(repo, "bm_1", 59)
    assert repo.find_unfinished_benchmark("d") is None
    age_heartbeat(repo, "bm_1", 61)
    assert repo.find_unfinished_benchmark("d").id == "bm_1"


def test_another_host_is_judged_by_its_heartbeat_alone(repo: Repository, clock: Clock) -> None:
    here = Owner.current()
    info = repo.create_benchmark(spec_name="s", spec_digest="d", owner=Owner(dead_pid(), here.host + "-elsewhere"))
    assert info.owner_host == here.host + "-elsewhere"
    assert repo.find_unfinished_benchmark("d") is None  # its pid means nothing here
    age_heartbeat(repo, "bm_1", 61)
    assert repo.find_unfinished_benchmark("d").id == "bm_1"


@pytest.mark.parametrize("skew", [90, -90])
def test_staleness_is_judged_by_the_database_clock_not_the_hosts(repo: Repository, clock: Clock, skew: int) -> None:
    """A host whose clock is 90 s ahead (or behind) neither takes over a live run nor makes its own look dead."""
    clock.now = datetime.now(UTC) + timedelta(seconds=skew)  # this host's clock, wrong by `skew`
    elsewhere = Owner(dead_pid(), Owner.current().host + "-elsewhere")
    info = repo.create_benchmark(spec_name="s", spec_digest="d", owner=elsewhere)
    assert repo.find_unfinished_benchmark("d") is None and [b.id for b in repo.live_benchmarks("d")] == ["bm_1"]
    assert repo.claim_benchmark(repo.get_benchmark("bm_1"), Owner.current()) is None
    assert repo.heartbeat("bm_1", info.owner_token)
    assert repo.get_benchmark("bm_1").owner_token == info.owner_token


def test_only_one_process_claims_a_resumable_benchmark(repo: Repository) -> None:
    repo.create_benchmark(spec_name="s", spec_digest="d")
    repo.finish_benchmark("bm_1", "interrupted")
    seen = repo.find_unfinished_benchmark("d")
    first, second = Owner(os.getpid(), "a"), Owner(os.getpid(), "b")
    token = repo.claim_benchmark(seen, first)
    assert token is not None
    assert repo.claim_benchmark(seen, second) is None  # what it saw is no longer true
    claimed = repo.get_benchmark("bm_1")
    assert (claimed.status, claimed.owner_host, claimed.owner_token) == ("running", "a", token)
    assert not repo.heartbeat("bm_1", "own_not_mine") and repo.heartbeat("bm_1", token)
