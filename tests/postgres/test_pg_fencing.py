"""Fencing on a real PostgreSQL server: the cases of tests/core/fencing_cases.py."""

from __future__ import annotations

from pathlib import Path

from tests.core.fencing_cases import skewed_clock_takes_no_live_run, stopped_past_the_heartbeat_then_continued


def test_a_runner_stopped_past_its_heartbeat_stops_at_once_when_it_wakes_on_postgresql(pg_url: str,
                                                                                        tmp_path: Path) -> None:
    stopped_past_the_heartbeat_then_continued(tmp_path, pg_url)


def test_a_host_clock_ahead_takes_over_no_live_run_on_postgresql(pg_url: str, tmp_path: Path) -> None:
    skewed_clock_takes_no_live_run(tmp_path, pg_url)
