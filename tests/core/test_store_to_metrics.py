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
