"""History paging on 100,000 trials: pages and counts come from indexes, never from loading all rows."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import event, insert

from corral_core.store import Repository, init_db, make_engine
from corral_core.store.tables import trial_table

N_TRIALS = 100_000
TASKS = 50
STATUSES = ("completed", "error", "surrendered")
BASE = datetime(2025, 1, 1, tzinfo=UTC)


@pytest.fixture(scope="module")
def big_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    engine = make_engine(tmp_path_factory.mktemp("paging") / "big.db")
    init_db(engine)
    repo = Repository(engine, id_factory=lambda: "bm_big")
    repo.create_benchmark(spec_name="big", spec_digest="big")
    start = time.perf_counter()
    rows = [
        {
            "id": f"tr_{i:07d}", "benchmark_id": "bm_big", "arm": ("brief", "full")[(i // TASKS) % 2],
            "task_id": f"task_{i % TASKS}", "trial_index": i // (2 * TASKS), "episode_id": None,
            "agent": "react", "model": "m", "verbosity": None, "status": STATUSES[i % 3],
            "score": float(i % 2), "answer": "42", "explanation": None, "surrendered": i % 3 == 2,
            "error": None, "prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2, "cost": None,
            "duration": 1.0, "tool_duration": 0.0, "iterations": 1, "assisted": False,
            "started_at": BASE + timedelta(seconds=i), "finished_at": BASE + timedelta(seconds=i + 1),
        }
        for i in range(N_TRIALS)
    ]
    with engine.begin() as conn:
        conn.execute(insert(trial_table), rows)
    print(f"\nbulk insert of {N_TRIALS:,} trials: {time.perf_counter() - start:.2f}s")
    yield engine
    engine.dispose()


def _timed(label: str, call):
    start = time.perf_counter()
    result = call()
    print(f"{label}: {(time.perf_counter() - start) * 1000:.1f} ms")
    return result


def test_first_page_and_counts_on_100k_trials(big_store) -> None:
    repo = Repository(big_store)
    page = _timed("first page", lambda: repo.trials("bm_big", limit=100))
    assert len(page.items) == 100 and page.has_more
    assert [t.id for t in page.items[:2]] == ["tr_0000000", "tr_0000001"]
    assert _timed("count", lambda: repo.count_trials("bm_big")) == N_TRIALS
    assert repo.count_trials("bm_big", status="error") == N_TRIALS // 3
    assert repo.count_trials("bm_big", task="task_7", arm="full") == N_TRIALS // (2 * TASKS)

    middle = _timed("page at 50,000", lambda: repo.trials("bm_big", offset=50_000, limit=100))
    assert middle.items[0].id == "tr_0050000"
    last = repo.trials("bm_big", offset=N_TRIALS - 30, limit=100)
    assert len(last.items) == 30 and not last.has_more

    filtered = repo.trials("bm_big", task="task_7", status="completed", limit=100)
    assert filtered.items and all(t.task_id == "task_7" and t.status == "completed" for t in filtered.items)

    listing = _timed("list_benchmarks", lambda: repo.list_benchmarks(0, 50))
    assert listing.items[0].trial_count == N_TRIALS and listing.items[0].finished_count == N_TRIALS


def test_history_queries_use_indexes_not_scans_or_sorts(big_store) -> None:
    """The plan of every paging query: an index search, no full scan, no temporary sort."""
    statements: list[tuple[str, tuple]] = []

    def capture(conn, cursor, statement, parameters, context, executemany):
        statements.append((statement, parameters))

    event.listen(big_store, "before_cursor_execute", capture)
    try:
        repo = Repository(big_store)
        repo.trials("bm_big", limit=100)
        repo.trials("bm_big", status="error", offset=1_000, limit=100)
        repo.count_trials("bm_big")
        repo.list_benchmarks(0, 50)
    finally:
        event.remove(big_store, "before_cursor_execute", capture)

    assert len(statements) == 5
    with big_store.connect() as conn:
        for statement, parameters in statements:
            rows = conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, parameters).all()
            plan = " | ".join(str(row[-1]) for row in rows)
            assert "USING" in plan and "INDEX" in plan, (statement, plan)
            assert "TEMP B-TREE" not in plan, (statement, plan)
            assert "SCAN trial" not in plan.replace("SCAN trial USING", ""), (statement, plan)
