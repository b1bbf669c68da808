"""A run with a store keeps a count of its finished trials, not their payloads (the store has them): a long run's
driver memory stays flat (benchmarks/rss_flat.py measures it over 20,000 trials)."""

from __future__ import annotations

from pathlib import Path

from corral_core.batch import open_store
from corral_core.runner import BenchmarkRunner
from corral_core.spec import spec_from_dict

SAMPLES = Path(__file__).resolve().parents[2] / "sample_tasks"


def test_a_run_with_a_store_holds_no_finished_trial_payloads(tmp_path: Path) -> None:
    spec = spec_from_dict({"name": "memory", "suite": str(SAMPLES / "samplemath.yaml"), "model": "scripted/samplemath",
                           "agent": {"type": "tool_calling", "max_iterations": 6}, "trials_per_task": 4,
                           "parallel": 2}, SAMPLES)
    engine, repository, writer = open_store(str(tmp_path / "runs.db"))
    try:
        runner = BenchmarkRunner(spec, repository=repository, writer_sink=writer)
        result = runner.run()
    finally:
        writer.close()
        engine.dispose()
    assert result.status == "finished" and result.trials_run == spec.total_trials == 20
    assert len(list(result.json_rows())) == 20  # the results are read back from the store ...
    held = [value for value in vars(runner).values() if isinstance(value, list)
            and any(isinstance(item, tuple) and len(item) == 3 and isinstance(item[2], dict) for item in value)]
    assert held == []  # ... and the runner keeps no (trial id, task, payload) of its own


def test_a_run_without_a_store_still_reports_every_trial() -> None:
    spec = spec_from_dict({"name": "memory", "suite": str(SAMPLES / "samplemath.yaml"), "model": "scripted/samplemath",
                           "trials_per_task": 2, "parallel": 2}, SAMPLES)
    result = BenchmarkRunner(spec).run()
    assert result.trials_run == 10 and len(list(result.json_rows())) == 10
