"""The store on a real PostgreSQL server: schema versioning, concurrent opens, the owner's
compare-and-set, and a write refused mid-run."""

from __future__ import annotations

import threading
from pathlib import Path

import psycopg
import pytest

from corral_core.batch import open_store
from corral_core.errors import StoreError
from corral_core.runner import BenchmarkRunner
from corral_core.spec import spec_from_dict
from corral_core.store import Repository, init_db, make_engine
from corral_core.store import schema as store_schema
from corral_core.store.ownership import Owner
from corral_core.store.tables import ALL_TABLES

SAMPLES = Path(__file__).resolve().parents[2] / "sample_tasks"


def rows(url: str, sql: str, *args: object) -> list[tuple]:
    with psycopg.connect(url) as conn:
        return conn.execute(sql, args).fetchall()


def test_a_new_store_is_migrated_to_exactly_the_models(pg_url: str) -> None:
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    engine = make_engine(pg_url)
    try:
        init_db(engine)
        with engine.connect() as conn:
            assert store_schema.stored_revision(conn) == store_schema.HEAD
            context = MigrationContext.configure(conn, opts={"compare_type": True,
                                                             "version_table": store_schema.VERSION_TABLE})
            assert compare_metadata(context, ALL_TABLES[0].metadata) == []
    finally:
        engine.dispose()


def test_runners_opening_a_new_store_at_once_all_succeed(pg_url: str) -> None:
    start = threading.Barrier(4)
    errors: list[BaseException] = []

    def open_it() -> None:
        engine = make_engine(pg_url)
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
    assert rows(pg_url, f"select version_num from {store_schema.VERSION_TABLE}") == [(store_schema.HEAD,)]


def test_a_store_from_a_newer_version_is_refused_and_left_untouched(pg_url: str) -> None:
    engine = make_engine(pg_url)
    init_db(engine)
    Repository(engine).create_benchmark(spec_name="kept", spec_digest="d")
    engine.dispose()
    with psycopg.connect(pg_url) as conn:
        conn.execute(f"update {store_schema.VERSION_TABLE} set version_num = '9999_future'")
    engine = make_engine(pg_url)
    with pytest.raises(StoreError, match="9999_future"):
        init_db(engine)
    engine.dispose()
    assert rows(pg_url, "select spec_name from benchmark") == [("kept",)]
    assert rows(pg_url, f"select version_num from {store_schema.VERSION_TABLE}") == [("9999_future",)]


def test_an_unreachable_server_is_a_store_error_in_words(pg_server) -> None:
    engine = make_engine(pg_server.url("no_such_database"))
    with pytest.raises(StoreError) as info:
        init_db(engine)
    engine.dispose()
    assert "no_such_database" in str(info.value) and "Traceback" not in str(info.value)


def test_of_two_processes_claiming_one_abandoned_benchmark_exactly_one_wins(pg_url: str) -> None:
    engine = make_engine(pg_url)
    init_db(engine)
    repo = Repository(engine)
    repo.create_benchmark(spec_name="s", spec_digest="d", benchmark_id="bm_shared")
    repo.finish_benchmark("bm_shared", status="interrupted")
    seen = repo.get_benchmark("bm_shared")
    assert seen is not None
    start = threading.Barrier(8)
    wins: list[int] = []

    def claim(pid: int) -> None:
        start.wait(10)
        if Repository(engine).claim_benchmark(seen, Owner(pid, "elsewhere")):
            wins.append(pid)

    threads = [threading.Thread(target=claim, args=(1000 + i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    engine.dispose()
    assert len(wins) == 1
    assert rows(pg_url, "select status, owner_pid from benchmark") == [("running", wins[0])]


def test_a_write_refused_mid_run_stops_the_run_and_keeps_what_was_committed(pg_url: str) -> None:
    engine = make_engine(pg_url)
    init_db(engine)
    engine.dispose()
    with psycopg.connect(pg_url) as conn:
        conn.execute("""
            create function refuse_after_four() returns trigger language plpgsql as $$
            begin
              if (select count(*) from trial) >= 4 then raise exception 'quota exceeded (test trigger)'; end if;
              return new;
            end $$;
            create trigger quota before insert on trial for each row execute function refuse_after_four();
        """)
    spec = spec_from_dict({"name": "refused", "suite": str(SAMPLES / "samplemath.yaml"),
                           "model": "scripted/samplemath", "trials_per_task": 3, "parallel": 2}, SAMPLES)
    engine, repository, writer = open_store(pg_url)
    try:
        with pytest.raises(StoreError, match="quota exceeded") as info:
            BenchmarkRunner(spec, repository=repository, writer_sink=writer).run()
    finally:
        writer.close()
        engine.dispose()
    assert rows(pg_url, "select id, status from benchmark") == [(info.value.benchmark_id, "store_failed")]
    ((stored,),) = rows(pg_url, "select count(*) from trial")
    assert stored <= 4  # the batch holding the refused row was rolled back whole

    with psycopg.connect(pg_url) as conn:
        conn.execute("drop trigger quota on trial")
    engine, repository, writer = open_store(pg_url)
    try:
        result = BenchmarkRunner(spec, repository=repository, writer_sink=writer).run(
            resume_id=info.value.benchmark_id)
    finally:
        writer.close()
        engine.dispose()
    assert result.status == "finished" and len(result.records) == 5 * 3
    assert rows(pg_url, "select count(*), count(distinct (arm, task_id, trial_index)) from trial "
                        "where status != 'running'") == [(15, 15)]
