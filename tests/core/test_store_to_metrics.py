"""One converter from stored trials to metrics records: the runner's metrics and the compare screen's
recomputation read the same records, solvability and chain order included."""

from __future__ import annotations

from pathlib import Path

import pytest

from corral_core.runner import BenchmarkRunner, metrics_records
from corral_core.spec import load_spec
from corral_core.store import Repository, StoreWriter, init_db, make_engine
from corral_tui.analysis import arm_records

SAMPLES = Path(__file__).resolve().parents[2] / "sample_tasks"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Repository, dict[str, object]]:
    """A store holding the impossible suite (tasks declared unsolvable) and the materials chain."""
    engine = make_engine(tmp_path_factory.mktemp("records") / "corral.db")
    init_db(engine)
    repository = Repository(engine)
    specs = {}
    with StoreWriter(engine) as writer:
        for name in ("impossible", "materials_chain"):
            spec = load_spec(SAMPLES / f"{name}.bench.yaml")
            result = BenchmarkRunner(spec, repository=repository, writer_sink=writer).run()
            specs[result.benchmark_id] = spec
    return repository, specs


def _key(record: object) -> tuple:
    r = record
    return (r.arm, r.task_id, r.trial_index, r.status, r.score, r.surrendered, r.solvable,  # type: ignore[attr-defined]
            r.chain_position, r.episode_id, r.total_tokens, len(r.tool_calls), r.fault)  # type: ignore[attr-defined]


def test_the_compare_screen_reads_the_records_the_runner_computed_metrics_from(recorded) -> None:
    repository, specs = recorded
    seen_unsolvable = seen_chain = False
    for benchmark_id, spec in specs.items():
        benchmark = repository.get_benchmark(benchmark_id)
        assert benchmark is not None
        runner_side = sorted(map(_key, metrics_records(spec, repository.trial_records(benchmark_id))))
        screen_side = sorted(_key(r) for records in arm_records(repository, benchmark).values() for r in records)
        assert screen_side == runner_side
        seen_unsolvable |= any(key[6] is False for key in screen_side)
        seen_chain |= any(key[7] is not None for key in screen_side)
    assert seen_unsolvable and seen_chain  # the fields the old TUI converter dropped are really exercised


def test_the_converter_builds_each_field_of_a_metrics_record_from_its_stored_column() -> None:
    """iter_records_from_values builds records with the builder written from TrialResult's declaration: every
    field gets its own column."""
    import dataclasses

    from corral_core.metrics import TrialResult
    from corral_core.metrics.records import RETIRED_STATUS
    from corral_core.runner.results import TaskFacts, iter_records_from_values
    from corral_core.store.convert import TRIAL_RECORD_COLUMNS

    stored = {"id": "tr_1", "task_id": "t7", "arm": "full", "trial_index": 3, "episode_id": "ep", "status": "error",
              "score": 0.25, "surrendered": 1, "error": "boom", "assisted": 1, "prompt_tokens": 11,
              "completion_tokens": 12, "total_tokens": 23, "cost": 0.5, "duration": 2.5, "tool_duration": 1.5,
              "iterations": 4, "fault": "infra"}
    assert set(stored) == set(TRIAL_RECORD_COLUMNS)
    calls = [("calc", "success", 0.1), ("cli", "timeout", None)]
    facts = TaskFacts(solvable={"t7": False}, chain_position={"t7": 2})
    [record] = iter_records_from_values([(tuple(stored[c] for c in TRIAL_RECORD_COLUMNS), calls)], facts)
    expected = TrialResult(task_id="t7", arm="full", trial_index=3, status="error", score=0.25, surrendered=True,
                           error="boom", fault="infra", assisted=True, solvable=False, prompt_tokens=11,
                           completion_tokens=12, total_tokens=23, cost=0.5, duration=2.5,
                           tool_calls=[{"tool_name": "calc", "status": "success", "duration": 0.1},
                                       {"tool_name": "cli", "status": "timeout", "duration": None}],
                           episode_id="ep", chain_position=2, trial_id="tr_1", iterations=4, tool_duration=1.5)
    assert dataclasses.asdict(record) == dataclasses.asdict(expected)
    assert list(iter_records_from_values([(tuple({**stored, "status": RETIRED_STATUS}[c] for c in TRIAL_RECORD_COLUMNS),
                                           [])], facts)) == []
