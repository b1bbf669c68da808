"""Whole-benchmark reads on SQLite (the same cases run on PostgreSQL in tests/postgres): keyset pages,
the streamed export, exact sums in bounded memory, and the compare screen's streamed metrics."""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from corral_core.metrics import arm_metrics, compare_arms
from corral_core.metrics.stats import StreamSum
from corral_core.runner import stored_benchmark_records
from corral_core.store import Repository, init_db, make_engine
from corral_tui.analysis import ArmColumn, compare_view
from tests.core.streaming_cases import BM, check_keyset_pages, check_streamed_export, fill


@pytest.fixture()
def db(tmp_path: Path) -> Iterator[tuple]:
    path = tmp_path / "store.db"
    engine = make_engine(path)
    init_db(engine)
    yield engine, str(path)
    engine.dispose()


def test_keyset_pages_give_every_trial_once_in_order(db) -> None:
    check_keyset_pages(db[0])


def test_keyset_reads_are_index_searches_without_a_sort(db) -> None:
    from sqlalchemy import event

    fill(db[0])
    statements: list[tuple[str, tuple]] = []

    def capture(conn, cursor, statement, parameters, context, executemany) -> None:
        statements.append((statement, parameters))

    event.listen(db[0], "before_cursor_execute", capture)
    try:
        list(Repository(db[0]).iter_trials(BM, page_size=8))
        list(Repository(db[0]).iter_trial_records(BM, page_size=8))
    finally:
        event.remove(db[0], "before_cursor_execute", capture)
    assert len(statements) > 10
    with db[0].connect() as conn:
        for statement, parameters in statements:
            if "FROM trial" not in statement:
                continue
            plan = " | ".join(str(r[-1]) for r in conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement,
                                                                         parameters).all())
            assert "INDEX" in plan and "TEMP B-TREE" not in plan, (statement, plan)
            assert "OFFSET" not in statement or parameters[-1] == 0, statement


def test_streamed_export_writes_what_the_old_export_wrote(db, tmp_path: Path) -> None:
    check_streamed_export(db[0], db[1], tmp_path)


def test_stream_sum_is_fsum_of_every_value() -> None:
    rng = random.Random(7)
    values = [rng.choice((1e-9, 1.0, 1e9, 1e16)) * rng.uniform(-1, 1) for _ in range(3 * StreamSum.CHUNK + 5)]
    values += [0.1] * 10_000 + [1e100, 1.0, -1e100]
    total = StreamSum()
    for value in values:
        total.add(value)
    assert total.total() == math.fsum(values) and total.count == len(values)
    assert len(total._chunk) + len(total._partials) < StreamSum.CHUNK  # bounded, not every value
    special = StreamSum()
    for value in [1.0] * 5000 + [math.inf, 2.0, math.inf]:
        special.add(value)
    assert special.total() == math.inf
    nan = StreamSum()
    for value in (math.inf, math.nan, *[1.0] * StreamSum.CHUNK, math.inf, math.nan):
        nan.add(value)
    assert math.isnan(nan.total()) and nan.count == StreamSum.CHUNK + 4
    both = StreamSum()
    for value in [math.inf] + [1.0] * StreamSum.CHUNK + [-math.inf]:
        both.add(value)
    with pytest.raises(ValueError):  # as math.fsum says of inf + -inf
        both.total()


def test_compare_of_an_unfinished_benchmark_streams_the_metrics_it_computed_before(db) -> None:
    """The compare screen's computed view equals the per-arm lists it was computed from before."""
    fill(db[0])
    repo = Repository(db[0])
    benchmark = repo.get_benchmark(BM)
    view = compare_view(repo, BM)
    records = list(stored_benchmark_records(repo, benchmark))
    by_arm = {arm: [r for r in records if r.arm == arm] for arm in ("a", "b")}
    want = [ArmColumn.from_metrics(arm_metrics(by_arm[arm], view.k_values, 0.0)) for arm in ("a", "b")]
    faults, assisted = repo.errors_by_arm(BM), repo.assisted_by_arm(BM)
    for column in want:  # counted from the stored rows beside the metrics (the errored and assisted rows)
        column.errors_by_fault, column.assisted_tasks = faults.get(column.name, {}), assisted.get(column.name, {})
    assert not view.stored and view.arms == want
    assert view.comparisons == [("a", "b", compare_arms(by_arm["a"], by_arm["b"], 0.0).summary)]


def test_export_rows_are_the_rows_trial_row_makes_of_each_stored_trial(db) -> None:
    """stored_trial_rows builds each row from the stored values (speed): the same row, key order included,
    as trial_row makes of the TrialInfo, at every pass threshold."""
    from corral_core.metrics.records import RETIRED_STATUS
    from corral_core.runner.results import stored_trial_rows, trial_row

    fill(db[0])
    repo = Repository(db[0])
    for threshold in (0.0, 0.4, 0.5, 1.0):
        want = [trial_row(t, threshold) for t in repo.iter_trials(BM) if t.status != RETIRED_STATUS]
        got = list(stored_trial_rows(repo, BM, threshold))
        assert [list(row.items()) for row in got] == [list(row.items()) for row in want]
        if threshold == 0.0:
            assert {row["success"] for row in got} == {True, False}


def test_the_flat_json_encoder_writes_what_json_dumps_writes() -> None:
    import json
    from datetime import UTC, datetime

    from corral_core import report

    row = {"a": 'say "hi",\nthen ünïcode ✓', "b": None, "c": 1.5, "d": True, "e": 3,
           "at": datetime(2025, 1, 1, tzinfo=UTC)}
    encode = report._flat_encoder(",\n    ")
    assert encode(row) == json.dumps(row, ensure_ascii=False, allow_nan=False, default=report._iso,
                                     separators=(",\n    ", ": "))
    with pytest.raises(ValueError):
        encode({"x": math.nan})


def test_keyed_json_items_are_written_as_their_dicts_are() -> None:
    """JsonStream(keys=...) splits each item's encoded values on the separator: values holding commas,
    newlines, quotes and the separator's own text come out as the dicts' flat encoding writes them."""
    import io
    from datetime import UTC, datetime

    from corral_core import report

    keys = ("a", "b", "c", "d", "é")
    rows = [('x,\n      "y": 1', None, 1.5, True, "ünïcode ✓"), ("", 0, -2.0, False, ",\n"),
            ("at", datetime(2025, 1, 1, 0, 0, 1, 5, tzinfo=UTC), 3, None, "{}")]
    for indent in ("", "  "):
        keyed, flat = io.StringIO(), io.StringIO()
        report._write_items(keyed, report.JsonStream(rows, keys=keys), indent)
        dicts = [dict(zip(keys, row, strict=True)) for row in rows]
        report._write_items(flat, report.JsonStream(dicts, flat=True), indent)
        assert keyed.getvalue() == flat.getvalue()
        empty = io.StringIO()
        report._write_items(empty, report.JsonStream([], keys=keys), indent)
        assert empty.getvalue() == "[]"
    with pytest.raises(ValueError):
        report._write_items(io.StringIO(), report.JsonStream([(math.nan, 1, 2, 3, 4)], keys=keys), "")


def test_driver_times_read_as_sqlalchemy_reads_them(tmp_path: Path) -> None:
    """The whole-benchmark reads convert the driver's stored times themselves (tables.utc_from_driver,
    iso_from_driver): the same aware UTC datetimes SQLAlchemy's UTCDateTime gives, and their isoformat."""
    from datetime import UTC, datetime, timedelta, timezone

    from sqlalchemy import insert, select

    from corral_core.store.tables import iso_from_driver, trial_table, utc_from_driver

    engine = make_engine(tmp_path / "t.db")
    init_db(engine)
    Repository(engine, id_factory=lambda: "bm").create_benchmark(spec_name="t", spec_digest="d")
    times = [datetime(2025, 1, 1, tzinfo=UTC), datetime(2025, 3, 4, 5, 6, 7, 890, tzinfo=UTC),
             datetime(2025, 6, 1, 12, tzinfo=timezone(timedelta(hours=2))), None]
    with engine.begin() as conn:
        conn.execute(insert(trial_table), [
            {"id": f"tr_{i}", "benchmark_id": "bm", "arm": "a", "task_id": "t", "trial_index": i, "status": "completed",
             "prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0, "iterations": 0, "surrendered": False,
             "assisted": False, "started_at": when, "finished_at": when} for i, when in enumerate(times)])
    query = select(trial_table.c.started_at).order_by(trial_table.c.trial_index)
    with engine.connect() as conn:
        typed = conn.execute(query).scalars().all()
        raw = [row[0] for row in conn.execute(query).cursor.fetchall()]
    engine.dispose()
    assert [utc_from_driver(value) for value in raw] == typed
    assert [iso_from_driver(value) for value in raw] == [when and when.isoformat() for when in typed]
    assert typed[2] == times[2] and typed[2].tzinfo == UTC  # the +02:00 time, stored in UTC
    aware = datetime(2025, 6, 1, 12, tzinfo=timezone(timedelta(hours=2)))  # a driver that gives aware times
    assert utc_from_driver(aware) == aware and iso_from_driver(aware) == "2025-06-01T10:00:00+00:00"
