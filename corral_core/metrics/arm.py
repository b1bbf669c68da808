"""Per-arm metrics: scores, success, pass@k / pass^k, surrender calibration, tools, resources."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .records import TrialRecord, effective_score, has_error, is_attempted, single_arm, success
from .stats import UNIT, Estimate, PassK, mean_ci, pass_k_over_tasks, proportion


@dataclass(frozen=True)
class TaskRow:
    """One task's line in the per-task table."""

    task_id: str
    n: int  # analysed trials
    c: int  # successful trials
    mean_score: float
    success_rate: float
    n_surrendered: int
    n_errors: int


@dataclass(frozen=True)
class ToolCallStats:
    """Tool-call counts where *failed* means any status other than `success`."""

    total: int
    successful: int
    failed: int
    failure_rate: float | None
    by_status: dict[str, int]
    by_tool: dict[str, dict[str, int]]  # tool -> {"total", "successful", "failed"}
    total_duration: float
    mean_duration: float | None


@dataclass(frozen=True)
class SurrenderCalibration:
    """How well surrenders line up with tasks declared unsolvable (`solvable == False`).

    precision = surrendered trials on unsolvable tasks / all surrendered trials;
    recall = surrendered trials on unsolvable tasks / all trials on unsolvable tasks.
    Only trials whose task declares solvability count. Each is None when its denominator is 0.
    """

    precision: float | None
    recall: float | None
    true_positive: int  # surrendered, unsolvable
    false_positive: int  # surrendered, solvable
    false_negative: int  # kept going, unsolvable
    true_negative: int  # kept going, solvable


@dataclass(frozen=True)
class Resources:
    """Tokens, cost and wall time over every record given (a ledger, whatever the status)."""

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    cost: float | None  # None when no record knows its cost
    duration_total: float | None
    duration_mean: float | None


@dataclass(frozen=True)
class AssistedSummary:
    """Assisted trials reported apart, so a person's help never inflates the headline."""

    n_assisted: int
    n_unassisted: int
    assisted_success_rate: Estimate
    assisted_average_score: Estimate  # mean over assisted trials


@dataclass(frozen=True)
class ArmMetrics:
    """Metrics of one arm. Quality metrics cover the *analysed* trials: attempted (not skipped,
    cancelled or running) and, unless include_assisted, untouched by a person."""

    arm: str
    pass_threshold: float
    n_records: int  # every record given
    n_trials: int  # analysed trials
    n_tasks: int  # tasks with at least one analysed trial
    n_assisted: int  # attempted trials a person touched
    n_not_attempted: int  # skipped / cancelled / running
    include_assisted: bool
    average_score: Estimate  # mean over tasks of per-task mean score; CI across tasks
    trial_score: Estimate  # mean over analysed trials; CI across trials
    success_rate: Estimate  # successes / analysed trials; Wilson CI
    task_success_rate: float | None  # Corral's: mean over tasks of per-task success fraction
    n_success: int
    pass_k: dict[int, PassK]
    surrender_rate: Estimate  # surrendered / analysed trials; Wilson CI
    error_rate: Estimate  # status error or an error message / analysed trials; Wilson CI
    status_counts: dict[str, int]  # over every record
    tool_calls: ToolCallStats
    resources: Resources
    surrender_calibration: SurrenderCalibration | None  # None when no task declares solvability
    assisted: AssistedSummary
    tasks: dict[str, TaskRow]  # per-task table, sorted by task id


def tool_call_stats(records: Iterable[TrialRecord]) -> ToolCallStats:
    """Count tool calls by status and tool. Fixes Corral's bug: invalid_tool, invalid_args,
    execution_error, blocked, rejected, timeout (and any unknown status) are all failures."""
    by_status: Counter[str] = Counter()
    by_tool: dict[str, Counter[str]] = defaultdict(Counter)
    durations: list[float] = []
    for record in records:
        for call in record.tool_calls:
            raw = call.get("status")
            # A str Enum (ToolStatus) prints as "ToolStatus.SUCCESS"; use its value.
            status = str(getattr(raw, "value", raw) or "unknown").lower()
            name = str(call.get("tool_name") or call.get("name") or "unknown")
            outcome = "successful" if status == "success" else "failed"
            by_status[status] += 1
            by_tool[name]["total"] += 1
            by_tool[name][outcome] += 1
            duration = call.get("duration")
            if isinstance(duration, int | float) and math.isfinite(duration):
                durations.append(float(duration))
    total = sum(by_status.values())
    successful = by_status.get("success", 0)
    return ToolCallStats(
        total=total,
        successful=successful,
        failed=total - successful,
        failure_rate=(total - successful) / total if total else None,
        by_status=dict(sorted(by_status.items())),
        by_tool={
            name: {key: counts.get(key, 0) for key in ("total", "successful", "failed")}
            for name, counts in sorted(by_tool.items())
        },
        total_duration=math.fsum(durations),
        mean_duration=math.fsum(durations) / len(durations) if durations else None,
    )


def surrender_calibration(records: Iterable[TrialRecord]) -> SurrenderCalibration | None:
    """Precision and recall of surrendering as a detector of unsolvable tasks (see the class)."""
    tp = fp = fn = tn = 0
    for record in records:
        if record.solvable is None:
            continue
        if record.surrendered:
            tp, fp = (tp + 1, fp) if record.solvable is False else (tp, fp + 1)
        else:
            fn, tn = (fn + 1, tn) if record.solvable is False else (fn, tn + 1)
    if tp + fp + fn + tn == 0:
        return None
    return SurrenderCalibration(
        precision=tp / (tp + fp) if tp + fp else None,
        recall=tp / (tp + fn) if tp + fn else None,
        true_positive=tp,
        false_positive=fp,
        false_negative=fn,
        true_negative=tn,
    )


def resources(records: Sequence[TrialRecord]) -> Resources:
    """Sum tokens, cost and duration over `records`; cost/duration None when none is known."""
    costs = [r.cost for r in records if r.cost is not None]
    durations = [r.duration for r in records if r.duration is not None]
    return Resources(
        prompt_tokens=sum(r.prompt_tokens for r in records),
        completion_tokens=sum(r.completion_tokens for r in records),
        total_tokens=sum(r.total_tokens for r in records),
        cost=math.fsum(costs) if costs else None,
        duration_total=math.fsum(durations) if durations else None,
        duration_mean=math.fsum(durations) / len(durations) if durations else None,
    )


def _task_rows(records: Sequence[TrialRecord], pass_threshold: float) -> dict[str, TaskRow]:
    grouped: dict[str, list[TrialRecord]] = defaultdict(list)
    for record in records:
        grouped[record.task_id].append(record)
    rows = {}
    for task_id in sorted(grouped):
        trials = grouped[task_id]
        c = sum(success(r, pass_threshold) for r in trials)
        rows[task_id] = TaskRow(
            task_id=task_id,
            n=len(trials),
            c=c,
            mean_score=math.fsum(effective_score(r) for r in trials) / len(trials),
            success_rate=c / len(trials),
            n_surrendered=sum(r.surrendered for r in trials),
            n_errors=sum(has_error(r) for r in trials),
        )
    return rows


def _validate_k_values(k_values: Iterable[int]) -> list[int]:
    ks = sorted(set(k_values))
    bad = [k for k in ks if not isinstance(k, int) or k < 1]
    if bad:
        raise ValueError(f"k values must be whole numbers >= 1, got {bad}.")
    return ks


def arm_metrics(
    records: Sequence[TrialRecord],
    k_values: Iterable[int] = (1,),
    pass_threshold: float = 0.0,
    *,
    include_assisted: bool = False,
) -> ArmMetrics:
    """All metrics of one arm's records (ValueError if they mix arms; see ArmMetrics).

    A task with fewer than k analysed trials is left out of pass@k/pass^k and counted.
    """
    arm = single_arm(list(records), "arm_metrics")
    ks = _validate_k_values(k_values)
    attempted = [r for r in records if is_attempted(r)]
    assisted = [r for r in attempted if r.assisted]
    unassisted = [r for r in attempted if not r.assisted]
    analysed = attempted if include_assisted else unassisted
    rows = _task_rows(analysed, pass_threshold)
    n_success = sum(row.c for row in rows.values())
    counts = {task_id: (row.n, row.c) for task_id, row in rows.items()}
    return ArmMetrics(
        arm=arm,
        pass_threshold=pass_threshold,
        n_records=len(records),
        n_trials=len(analysed),
        n_tasks=len(rows),
        n_assisted=len(assisted),
        n_not_attempted=len(records) - len(attempted),
        include_assisted=include_assisted,
        average_score=mean_ci([row.mean_score for row in rows.values()], bounds=UNIT),
        trial_score=mean_ci([effective_score(r) for r in analysed], bounds=UNIT),
        success_rate=proportion(n_success, len(analysed)),
        task_success_rate=(
            math.fsum(row.success_rate for row in rows.values()) / len(rows) if rows else None
        ),
        n_success=n_success,
        pass_k={k: pass_k_over_tasks(counts, k) for k in ks},
        surrender_rate=proportion(sum(r.surrendered for r in analysed), len(analysed)),
        error_rate=proportion(sum(has_error(r) for r in analysed), len(analysed)),
        status_counts=dict(sorted(Counter(r.status for r in records).items())),
        tool_calls=tool_call_stats(analysed),
        resources=resources(records),
        surrender_calibration=surrender_calibration(analysed),
        assisted=AssistedSummary(
            n_assisted=len(assisted),
            n_unassisted=len(unassisted),
            assisted_success_rate=proportion(
                sum(success(r, pass_threshold) for r in assisted), len(assisted)
            ),
            assisted_average_score=mean_ci([effective_score(r) for r in assisted], bounds=UNIT),
        ),
        tasks=rows,
    )
