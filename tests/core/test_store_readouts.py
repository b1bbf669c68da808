"""What every screen reads of a benchmark from its stored rows: done of planned, errors by fault, assisted
trials, tokens and cost (the history row, Compare, `corral-tui history`)."""

from __future__ import annotations

from pathlib import Path

from corral_core import report
from corral_core.events import EventKind, event_from
from corral_core.store import Repository, StoreWriter, init_db, make_engine


def _store(tmp_path: Path) -> tuple[Repository, StoreWriter]:
    engine = make_engine(tmp_path / "corral.db")
    init_db(engine)
    return Repository(engine), StoreWriter(engine).start()


def _trial(writer: StoreWriter, benchmark_id: str, trial_id: str, task: str, arm: str, index: int,
           **finished: object) -> None:
    writer.emit(event_from(EventKind.TRIAL_STARTED, trial_id, task, {"arm": arm, "trial_index": index},
                      benchmark_id=benchmark_id))
    if finished:
        writer.emit(event_from(EventKind.TRIAL_FINISHED, trial_id, task, {"arm": arm, "trial_index": index, **finished},
                          benchmark_id=benchmark_id))


def test_an_interrupted_run_keeps_its_plan_and_counts_its_errors_assists_and_money(tmp_path: Path) -> None:
    repository, writer = _store(tmp_path)
    plan = {"tasks": ["add", "power", "divide"], "k_values": [1]}
    info = repository.create_benchmark(spec_name="demo", spec_digest="d" * 64, trials_per_task=2, plan=plan,
                                       arms=[{"name": "a"}, {"name": "b"}])
    _trial(writer, info.id, "tr_1", "add", "a", 0, status="completed", score=1.0, total_tokens=100, cost=0.0001)
    _trial(writer, info.id, "tr_2", "power", "a", 0, status="error", error="Missing credentials", fault="provider")
    _trial(writer, info.id, "tr_3", "power", "b", 0, status="timeout", fault=None, total_tokens=50, cost=0.00002)
    _trial(writer, info.id, "tr_4", "add", "b", 0, status="completed", score=1.0, assisted=True)
    _trial(writer, info.id, "tr_5", "divide", "b", 0, status="cancelled", error="the operator stopped the run")
    _trial(writer, info.id, "tr_6", "divide", "a", 0)  # still running
    assert writer.flush(60)
    repository.finish_benchmark(info.id, status="interrupted")  # the workbench's quit: no metrics to write
    writer.close()

    stored = repository.get_benchmark(info.id)
    assert stored is not None and report.planned_trials(stored) == 12
    assert report.trials_done_text(stored) == "5/12, 2 errored"  # a cancelled trial is not an error
    assert (stored.total_tokens, round(stored.cost_total or 0, 8)) == (150, 0.00012)
    assert repository.errors_by_arm(info.id) == {"a": {"provider": 1}, "b": {"timeout": 1}}
    assert repository.assisted_by_arm(info.id) == {"b": {"add": 1}}
    (listed,) = repository.list_benchmarks().items
    assert (listed.errored_count, listed.finished_count) == (2, 5)


def test_cost_keeps_its_significant_digits_in_the_batch_and_history_tables() -> None:
    assert report.money_text(0.00013695) == "$0.000137"
    assert report.money_text(None) == "-" and report.money_text(12.5) == "$12.50"
