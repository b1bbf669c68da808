"""The benchmark runner: arms x tasks x trials over the environment server, chains, resume, controls.

    spec = load_spec("sample_tasks/quickstart.bench.yaml")
    runner = BenchmarkRunner(spec, repository=repo, writer_sink=writer, sink=ui_queue)
    result = runner.run()            # blocks; runner.controls reaches running trials meanwhile
"""

from corral_core.runner.benchmark_runner import BenchmarkRunner
from corral_core.runner.live_trials import ControlRegistry, RunningTrial
from corral_core.runner.plan import Job, chained_tasks, episode_id_for, plan_jobs
from corral_core.runner.results import (
    BenchmarkResult,
    TaskFacts,
    compute_metrics,
    metrics_records,
    records_from_store,
    stored_benchmark_records,
    task_facts,
)
from corral_core.runner.trial import NoPersonGate, build_agent

__all__ = [
    "BenchmarkResult", "BenchmarkRunner", "ControlRegistry", "Job", "NoPersonGate", "RunningTrial", "TaskFacts",
    "build_agent", "chained_tasks", "compute_metrics", "episode_id_for", "metrics_records",
    "plan_jobs", "records_from_store", "stored_benchmark_records", "task_facts",
]
