"""A benchmark's results: per-arm metrics, arm comparisons, chain metrics and the headline.

The headline score of a benchmark is the mean over its arms of each arm's average score (the mean
over tasks of the per-task mean score, unassisted attempted trials only). It is what the attempt
status compares with the best earlier finished benchmark of the same spec digest.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from corral_core.metrics import (
    ArmMetrics,
    ChainMetrics,
    PairedComparison,
    TrialRecord,
    arm_metrics,
    chain_metrics,
    compare_arms,
    metrics_to_dict,
    success,
)
from corral_core.runner.plan import chained_tasks
from corral_core.spec import BenchmarkSpec

ERRORED_STATUSES = frozenset({"error", "timeout"})
ROW_PAGE = 1000


@dataclass
class BenchmarkResult:
    """What `BenchmarkRunner.run` returns (and what `--json` and `export` write)."""

    benchmark_id: str
    spec: BenchmarkSpec
    status: str  # finished | interrupted
    arms: dict[str, ArmMetrics]
    comparisons: list[PairedComparison]  # every other arm against the first
    chains: dict[str, list[ChainMetrics]]  # arm -> one entry per chained suite
    records: list[TrialRecord]
    rows: list[dict[str, Any]] = field(default_factory=list)  # one per trial, for reports
    headline_score: float | None = None
    previous_best: float | None = None
    attempt_status: str | None = None  # improved | baseline | regressed | crashed | None (interrupted)
    resumed: bool = False
    trials_run: int = 0  # trials run by this call (a resumed run counts only its own)
    duration: float = 0.0

    @property
    def errored(self) -> int:
        """Trials that ended in an error or a timeout."""
        return sum(1 for r in self.records if r.status in ERRORED_STATUSES)

    @property
    def interrupted(self) -> bool:
        return self.status != "finished"

    def to_dict(self, *, include_trials: bool = True) -> dict[str, Any]:
        """JSON-ready results: spec, ids, per-arm metrics, comparisons, chains, per-trial rows."""
        spec = self.spec
        data: dict[str, Any] = {
            "benchmark_id": self.benchmark_id,
            "name": spec.name,
            "status": self.status,
            "spec_digest": spec.digest,
            "spec": {**spec.normalized(), "source": spec.source, "parallel": spec.parallel},
            "headline_score": _finite(self.headline_score),
            "previous_best": _finite(self.previous_best),
            "attempt_status": self.attempt_status,
            "resumed": self.resumed,
            "trials_run": self.trials_run,
            "trials_total": len(self.records),
            "trials_errored": self.errored,
            "duration": self.duration,
            "arms": {name: metrics_to_dict(m) for name, m in self.arms.items()},
            "comparisons": [metrics_to_dict(c) for c in self.comparisons],
            "chains": {arm: [metrics_to_dict(c) for c in chains] for arm, chains in self.chains.items()},
        }
        if include_trials:
            data["trials"] = [_jsonable_row(row) for row in self.rows]
        return data


def compute_metrics(spec: BenchmarkSpec, records: Sequence[TrialRecord]
                    ) -> tuple[dict[str, ArmMetrics], list[PairedComparison], dict[str, list[ChainMetrics]],
                               float | None]:
    """Per-arm metrics, comparisons with the first arm, chain metrics and the headline score."""
    by_arm: dict[str, list[TrialRecord]] = {arm.name: [] for arm in spec.arms}
    for record in records:
        by_arm.setdefault(record.arm, []).append(record)
    ks = list(spec.k_values)
    arms = {name: arm_metrics(rows, ks, spec.pass_threshold) for name, rows in by_arm.items() if rows}
    names = [a.name for a in spec.arms if a.name in arms]
    comparisons = [compare_arms(by_arm[names[0]], by_arm[other], spec.pass_threshold) for other in names[1:]]
    chains: dict[str, list[ChainMetrics]] = {}
    selected = spec.task_ids
    for suite in spec.suites:
        links = chained_tasks(suite, selected)
        if not links:
            continue
        for name in names:
            rows = [r for r in by_arm[name] if r.task_id in links]
            chains.setdefault(name, []).append(chain_metrics(rows, links, spec.pass_threshold))
    values = [m.average_score.value for m in arms.values() if m.average_score.value is not None]
    headline = math.fsum(values) / len(values) if values else None
    return arms, comparisons, chains, headline


def metrics_records(spec: BenchmarkSpec, stored: Iterable[Any]) -> list[TrialRecord]:
    """Store trial records (corral_core.store) as metrics records, with solvability and chain order."""
    solvable: dict[str, bool | None] = {}
    position: dict[str, int] = {}
    for suite in spec.suites:
        declared = any(not task.solvable for task in suite.tasks.values())
        for task_id, task in suite.tasks.items():
            solvable[task_id] = task.solvable if declared else None
        for pos, task_id in enumerate(chained_tasks(suite, spec.task_ids)):
            position[task_id] = pos
    records = []
    for row in stored:
        records.append(TrialRecord(
            task_id=row.task_id, arm=row.arm, trial_index=row.trial_index, status=row.status, score=row.score,
            surrendered=bool(row.surrendered), error=row.error, assisted=bool(row.assisted),
            solvable=solvable.get(row.task_id), prompt_tokens=row.prompt_tokens or 0,
            completion_tokens=row.completion_tokens or 0, total_tokens=row.total_tokens or 0, cost=row.cost,
            duration=row.duration,
            tool_calls=[{"tool_name": c.tool_name, "status": c.status, "duration": c.duration}
                        for c in row.tool_calls],
            episode_id=row.episode_id, chain_position=position.get(row.task_id),
        ))
    return records


def trial_row(trial: Any, pass_threshold: float) -> dict[str, Any]:
    """One per-trial row for reports, from a store TrialInfo (or any object with its fields)."""
    is_instance = dataclasses.is_dataclass(trial) and not isinstance(trial, type)
    row = dataclasses.asdict(trial) if is_instance else dict(trial)
    row["trial_id"] = row.pop("id", row.get("trial_id"))
    record = TrialRecord.from_mapping(row)
    row["success"] = success(record, pass_threshold)
    return row


def stored_trial_rows(repository: Any, benchmark_id: str, pass_threshold: float) -> list[dict[str, Any]]:
    """Every stored trial of a benchmark as a report row, read page by page (start order)."""
    rows: list[dict[str, Any]] = []
    offset = 0
    while True:
        page = repository.trials(benchmark_id, offset=offset, limit=ROW_PAGE)
        rows.extend(trial_row(t, pass_threshold) for t in page.items)
        if not page.has_more:
            return rows
        offset += ROW_PAGE


def _jsonable_row(row: dict[str, Any]) -> dict[str, Any]:
    return {key: (value.isoformat() if isinstance(value, datetime) else _finite(value)) for key, value in row.items()}


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
