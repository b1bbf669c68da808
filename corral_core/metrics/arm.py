"""Per-arm metrics in one pass over an arm's records: scores, success, pass@k / pass^k, surrender
calibration, errors, tools, resources, assisted trials apart.

The unit of analysis is the *task*: each independent task is one unit whose observations are its
trials; a chain (ChainDef) is one unit whose observations are its episodes (workflow score, end-to-end
success), since the links of an episode depend on each other. Per-task rows still describe every
task, chain links included.

`ArmTally` consumes records one at a time (an iterable, a stream of store pages) and keeps per-task
sums, plus one byte per (task, trial index) for the trial-level McNemar test; only chain links are kept
whole, to rebuild their episodes.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from corral_core.domain import Fault, ToolStatus, TrialStatus

from .chain import ChainDef, ChainMetrics, chain_metrics
from .intervals import Cluster, clustered_mean, clustered_proportion, task_mean_interval
from .records import ATTEMPTED_STATUSES, TrialResult, has_error, is_errored, passes
from .stats import Estimate, PassK, StreamSum, pass_k_over_tasks, wilson_interval

FAILED, SUCCEEDED = 1, 2  # a unit's outcome byte per trial index (0: no analysed trial there)
# An errored or timed-out trial measures the agent only when the agent itself was at fault (its own
# parsing, hooks or code); any other fault (provider, environment, grader, timeout, unknown) leaves the
# trial out of the primary analysis as missing. Chain links keep their errors as failed links.
AGENT_FAULT = Fault.AGENT
UNNAMED = "unknown"  # a tool call without a status, as its statistics name it


@dataclass(frozen=True)
class TaskRow:
    """One task's line in the per-task table (its analysed trials)."""

    task_id: str
    n: int  # analysed trials
    c: int  # successful trials
    mean_score: float
    success_rate: float
    success_ci: tuple[float, float] | None  # Wilson over this task's trials (independent draws of one task)
    n_surrendered: int
    n_errors: int  # errored or timed out


@dataclass(frozen=True)
class UnitRow:
    """A chain as one unit of analysis: its episodes are the observations."""

    unit_id: str
    links: list[str]
    n: int  # analysed episodes
    c: int  # end-to-end successes
    mean_score: float  # mean workflow score
    success_rate: float


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
    Only trials whose task declares solvability count, and errored and timed-out trials are left out
    (an infrastructure failure is not a decision to keep going); they are counted here.
    Each ratio is None when its denominator is 0.
    """

    precision: float | None
    recall: float | None
    true_positive: int  # surrendered, unsolvable
    false_positive: int  # surrendered, solvable
    false_negative: int  # kept going, unsolvable
    true_negative: int  # kept going, solvable
    n_excluded_errors: int = 0  # errored trials on tasks that declare solvability, left out
    n_excluded_timeouts: int = 0  # timed-out trials on such tasks, left out
    precision_ci: tuple[float, float] | None = None  # Wilson over the tp + fp surrendered trials
    recall_ci: tuple[float, float] | None = None  # Wilson over the tp + fn trials on unsolvable tasks
    n_tasks: int = 0  # tasks behind these counts (trials of a task are not independent: few tasks, wide truth)
    interval_note: str = "95% Wilson over trials, not clustered by task"


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
    assisted_success_rate: Estimate  # pooled over assisted trials, clustered by task
    assisted_average_score: Estimate  # mean over assisted trials, clustered by task


@dataclass(frozen=True)
class ArmMetrics:
    """Metrics of one arm. Quality metrics cover the *analysed* trials: attempted (not skipped,
    cancelled or running) and, unless include_assisted, untouched by a person."""

    arm: str
    pass_threshold: float
    n_records: int  # every record given
    n_trials: int  # analysed trials (chain links included)
    n_tasks: int  # units of analysis with at least one analysed observation (a chain counts once)
    n_assisted: int  # attempted trials a person touched
    n_not_attempted: int  # skipped / cancelled / running
    include_assisted: bool
    n_missing: int  # errored / timed-out trials whose fault is outside the agent: missing, not failures
    missing_by_fault: dict[str, int]  # those trials by fault
    tasks_only_missing: list[str]  # tasks whose every analysed trial was such an error: no score at all
    average_score: Estimate  # the headline: mean over tasks of per-task mean score (chain: workflow score)
    success_rate: Estimate  # successes / observations, pooled over tasks; Wilson on the effective n
    n_success: int  # successful observations (trials; a chain's end-to-end episodes)
    pass_k: dict[int, PassK]  # over tasks (a chain's episodes are its trials)
    surrender_rate: Estimate  # surrendered / analysed trials, clustered by task
    error_rate: Estimate  # errored / analysed trials (timeouts included), clustered by task
    errors_by_fault: dict[str, int]  # errored and timed-out analysed trials by whose fault
    status_counts: dict[str, int]  # over every record
    tool_calls: ToolCallStats
    resources: Resources
    surrender_calibration: SurrenderCalibration | None  # None when no task declares solvability
    assisted: AssistedSummary
    tasks: dict[str, TaskRow]  # per-task table, sorted by task id
    chain_units: dict[str, UnitRow]  # chains scored as units, by chain id


def _status(call_status: object) -> str:
    # A str Enum (ToolStatus) prints as "ToolStatus.SUCCESS"; use its value.
    return str(getattr(call_status, "value", call_status) or UNNAMED).lower()


class _ToolTally:
    def __init__(self) -> None:
        self.calls: Counter[tuple[str, str]] = Counter()  # (tool, status) -> calls
        self.durations = StreamSum()
        self._names: dict[object, str] = {}  # a raw status (str or enum) -> its _status

    def add(self, record: TrialResult) -> None:
        names, calls = self._names, self.calls
        for call in record.tool_calls:
            raw = call.get("status")
            status = names.get(raw)
            if status is None:
                status = names[raw] = _status(raw)
            calls[(str(call.get("tool_name") or call.get("name") or "unknown"), status)] += 1
            duration = call.get("duration")
            if isinstance(duration, (int, float)) and math.isfinite(duration):
                self.durations.add(float(duration))

    def result(self) -> ToolCallStats:
        by_status: Counter[str] = Counter()
        by_tool: dict[str, Counter[str]] = defaultdict(Counter)
        for (name, status), count in self.calls.items():
            by_status[status] += count
            by_tool[name]["total"] += count
            by_tool[name]["successful" if status == ToolStatus.SUCCESS else "failed"] += count
        total = sum(by_status.values())
        successful = by_status.get("success", 0)
        return ToolCallStats(
            total=total, successful=successful, failed=total - successful,
            failure_rate=(total - successful) / total if total else None,
            by_status=dict(sorted(by_status.items())),
            by_tool={name: {key: counts.get(key, 0) for key in ("total", "successful", "failed")}
                     for name, counts in sorted(by_tool.items())},
            total_duration=self.durations.total(),
            mean_duration=self.durations.total() / self.durations.count if self.durations.count else None,
        )


def tool_call_stats(records: Iterable[TrialResult]) -> ToolCallStats:
    """Count tool calls by status and tool. Fixes Corral's bug: invalid_tool, invalid_args,
    execution_error, blocked, rejected, timeout (and any unknown status) are all failures."""
    tally = _ToolTally()
    for record in records:
        tally.add(record)
    return tally.result()


def fault_of(record: TrialResult) -> str | None:
    """Whose fault an errored or timed-out trial was (None for a trial that did not error)."""
    if not is_errored(record):
        return None
    return record.fault or (Fault.TIMEOUT if record.status == TrialStatus.TIMEOUT else Fault.UNKNOWN)


class _CalibrationTally:
    def __init__(self) -> None:
        self.tp = self.fp = self.fn = self.tn = self.errors = self.timeouts = 0
        self.tasks: set[str] = set()

    def add(self, record: TrialResult) -> None:
        if record.solvable is None:
            return
        self.tasks.add(record.task_id)
        if record.status == TrialStatus.TIMEOUT:
            self.timeouts += 1
        elif has_error(record):
            self.errors += 1
        elif record.surrendered:
            self.tp, self.fp = (self.tp + 1, self.fp) if record.solvable is False else (self.tp, self.fp + 1)
        else:
            self.fn, self.tn = (self.fn + 1, self.tn) if record.solvable is False else (self.fn, self.tn + 1)

    def result(self) -> SurrenderCalibration | None:
        tp, fp, fn, tn = self.tp, self.fp, self.fn, self.tn
        if tp + fp + fn + tn + self.errors + self.timeouts == 0:
            return None
        return SurrenderCalibration(
            precision=tp / (tp + fp) if tp + fp else None, recall=tp / (tp + fn) if tp + fn else None,
            true_positive=tp, false_positive=fp, false_negative=fn, true_negative=tn,
            n_excluded_errors=self.errors, n_excluded_timeouts=self.timeouts,
            precision_ci=wilson_interval(tp, tp + fp), recall_ci=wilson_interval(tp, tp + fn), n_tasks=len(self.tasks))


def surrender_calibration(records: Iterable[TrialResult]) -> SurrenderCalibration | None:
    """Precision and recall of surrendering as a detector of unsolvable tasks (see the class)."""
    tally = _CalibrationTally()
    for record in records:
        tally.add(record)
    return tally.result()


class _Sums:
    """Counts and sums of one task's (or one unit's) observations."""

    __slots__ = ("c", "n", "n_errors", "n_missing", "n_surrendered", "score_sq", "score_sum")

    def __init__(self) -> None:
        self.n = self.c = self.n_surrendered = self.n_errors = self.n_missing = 0
        self.score_sum = self.score_sq = 0.0

    def add(self, score: float, ok: bool) -> None:
        self.n += 1
        self.c += ok
        self.score_sum += score
        self.score_sq += score * score


class UnitTally:
    """One unit's observations in one arm: sums, and one outcome byte per trial index (for McNemar)."""

    __slots__ = ("outcomes", "sums", "unit_id")

    def __init__(self, unit_id: str) -> None:
        self.unit_id = unit_id
        self.sums = _Sums()
        self.outcomes = bytearray()

    def add(self, index: int, score: float, ok: bool) -> None:
        if index < 0:
            raise ValueError(f"trial index {index} of task {self.unit_id!r} is negative.")
        if index >= len(self.outcomes):
            self.outcomes.extend(bytes(max(index + 1 - len(self.outcomes), len(self.outcomes))))
        if self.outcomes[index]:
            raise ValueError(f"two analysed trials for task {self.unit_id!r}, trial index {index}; "
                             "pairing needs one trial per (task, trial index).")
        self.outcomes[index] = SUCCEEDED if ok else FAILED
        self.sums.add(score, ok)

    @property
    def n(self) -> int:
        return self.sums.n

    @property
    def mean_score(self) -> float:
        return self.sums.score_sum / self.sums.n

    @property
    def success_rate(self) -> float:
        return self.sums.c / self.sums.n


class ArmTally:
    """Accumulates one arm's records (`add`) and computes its metrics (`finish`).

    chains: the chains of the benchmark; their links are scored by episode as one unit each.
    After `finish`, `units` holds the per-unit tallies the paired comparisons read.
    """

    def __init__(self, arm: str | None = None, pass_threshold: float = 0.0, *, chains: Sequence[ChainDef] = (),
                 include_assisted: bool = False) -> None:
        self.arm = arm
        self.pass_threshold = pass_threshold
        self.include_assisted = include_assisted
        self.chains = list(chains)
        self._link_of = {task: chain for chain in self.chains for task in chain.order}
        self.units: dict[str, UnitTally] = {}
        self._tasks: dict[str, _Sums] = {}
        self._chain_records: dict[str, list[TrialResult]] = defaultdict(list)
        self._status: Counter[str] = Counter()
        self._faults: Counter[str] = Counter()
        self._tools = _ToolTally()
        self._calibration = _CalibrationTally()
        self._assisted_success: dict[str, Cluster] = {}
        self._assisted_score: dict[str, Cluster] = {}
        self._trial_rates: dict[str, list[int]] = {}  # task -> [n, surrendered, errored]
        self.n_records = self.n_trials = self.n_assisted = self.n_unassisted = self.n_not_attempted = 0
        self.n_missing = 0  # errored or timed-out trials whose fault is outside the agent: left out
        self._missing_faults: Counter[str] = Counter()
        self._tokens = [0, 0, 0]
        self._costs = StreamSum()  # exact sums in bounded memory (not a list of every trial's value)
        self._durations = StreamSum()
        self.chain_metrics: list[ChainMetrics] = []

    def add(self, record: TrialResult) -> None:
        # One call per trial of a whole benchmark (a million at the end of a big run): the rules of
        # records.py (is_attempted, effective_score, is_errored) and fault_of are spelled out inline here,
        # and must say the same (tests/core/test_metrics_arm.py checks they agree); success is `passes`.
        arm = record.arm
        if arm != self.arm:
            if self.arm is not None:
                raise ValueError(f"arm metrics of {self.arm!r} got a record of arm {arm!r}; "
                                 "pass the records of one arm at a time.")
            self.arm = arm
        self.n_records += 1
        status = record.status
        self._status[status] += 1
        tokens = self._tokens
        tokens[0] += record.prompt_tokens
        tokens[1] += record.completion_tokens
        tokens[2] += record.total_tokens
        if record.cost is not None:
            self._costs.add(record.cost)
        if record.duration is not None:
            self._durations.add(record.duration)
        task_id = record.task_id
        chain = self._link_of.get(task_id) if self._link_of else None
        if chain is not None and record.episode_id is not None:
            self._chain_records[chain.chain_id].append(dataclasses.replace(record, tool_calls=[]))
        if status not in ATTEMPTED_STATUSES:
            self.n_not_attempted += 1
            return
        score, error, surrendered = record.score, record.error, record.surrendered
        ok = passes(status, score, error, surrendered, self.pass_threshold)
        value = 0.0 if score is None else float(score)
        if record.assisted:
            self.n_assisted += 1
            _add_cluster(self._assisted_success, task_id, float(ok), float(ok))
            _add_cluster(self._assisted_score, task_id, value, value * value)
            if not self.include_assisted:
                return
        else:
            self.n_unassisted += 1
        task = self._tasks.get(task_id)
        if task is None:
            task = self._tasks[task_id] = _Sums()
        if record.tool_calls:
            self._tools.add(record)
        if record.solvable is not None:
            self._calibration.add(record)
        if status == TrialStatus.TIMEOUT or status == TrialStatus.ERROR or error:
            task.n_errors += 1
            fault = record.fault or (Fault.TIMEOUT if status == TrialStatus.TIMEOUT else Fault.UNKNOWN)
            self._faults[fault] += 1
            if fault != AGENT_FAULT:  # outside the agent (a chain's link too): missing, not a failure
                task.n_missing += 1
                self._missing_faults[fault] += 1
                self.n_missing += 1
                return
        self.n_trials += 1
        task.n += 1
        task.c += ok
        task.score_sum += value
        task.score_sq += value * value
        task.n_surrendered += surrendered
        if chain is None:
            unit = self.units.get(task_id)
            if unit is None:
                unit = self.units[task_id] = UnitTally(task_id)
            unit.add(record.trial_index, value, ok)

    def missing_in(self, unit_id: str) -> int:
        """Errored trials of an independent task left out as missing (0 for a chain or an unknown task)."""
        sums = self._tasks.get(unit_id)
        return sums.n_missing if sums is not None and unit_id not in self._link_of else 0

    def attempted_units(self) -> set[str]:
        """Units with an analysed trial or a trial left out as missing (after `finish`)."""
        return set(self.units) | {task for task, sums in self._tasks.items()
                                  if sums.n_missing and task not in self._link_of}

    @property
    def missing_faults(self) -> dict[str, int]:
        return dict(sorted(self._missing_faults.items()))

    def add_all(self, records: Iterable[TrialResult]) -> ArmTally:
        for record in records:
            self.add(record)
        return self

    def _finish_chains(self) -> dict[str, UnitRow]:
        rows = {}
        self.chain_metrics = []
        for chain in self.chains:
            records = self._chain_records.get(chain.chain_id)
            if not records:
                continue
            metrics = chain_metrics(records, list(chain.order), self.pass_threshold, weights=chain.weights,
                                    include_assisted=self.include_assisted, depends_on=chain.depends_on)
            self.chain_metrics.append(metrics)
            unit = UnitTally(chain.chain_id)
            for episode in sorted(metrics.episodes.values(), key=lambda e: e.trial_index):
                unit.add(episode.trial_index, episode.workflow_score, episode.end_to_end)
            if unit.n:
                self.units[chain.chain_id] = unit
                rows[chain.chain_id] = UnitRow(chain.chain_id, list(chain.order), unit.n, unit.sums.c,
                                               unit.mean_score, unit.success_rate)
        return rows

    def finish(self, k_values: Iterable[int] = (1,)) -> ArmMetrics:
        ks = _validate_k_values(k_values)
        chain_units = self._finish_chains()
        units = [self.units[u] for u in sorted(self.units)]
        unit_clusters = [Cluster(u.n, float(u.sums.c)) for u in units]
        counts = {u.unit_id: (u.n, u.sums.c) for u in units}
        tasks = {task: _task_row(task, sums) for task, sums in sorted(self._tasks.items()) if sums.n}
        surrendered = [Cluster(s.n, float(s.n_surrendered)) for s in self._tasks.values()]
        errored = [Cluster(s.n + s.n_missing, float(s.n_errors)) for s in self._tasks.values()]
        costs, durations = self._costs, self._durations
        return ArmMetrics(
            arm=self.arm or "",
            pass_threshold=self.pass_threshold,
            n_records=self.n_records,
            n_trials=self.n_trials,
            n_tasks=len(units),
            n_assisted=self.n_assisted,
            n_not_attempted=self.n_not_attempted,
            include_assisted=self.include_assisted,
            n_missing=self.n_missing,
            missing_by_fault=dict(sorted(self._missing_faults.items())),
            tasks_only_missing=sorted(task for task, sums in self._tasks.items() if sums.n_missing and not sums.n),
            average_score=_average_score(units),
            success_rate=clustered_proportion(unit_clusters),
            n_success=sum(u.sums.c for u in units),
            pass_k={k: pass_k_over_tasks(counts, k) for k in ks},
            surrender_rate=clustered_proportion(surrendered),
            error_rate=clustered_proportion(errored),
            errors_by_fault=dict(sorted(self._faults.items())),
            status_counts=dict(sorted(self._status.items())),
            tool_calls=self._tools.result(),
            resources=Resources(
                prompt_tokens=self._tokens[0], completion_tokens=self._tokens[1], total_tokens=self._tokens[2],
                cost=costs.total() if costs.count else None,
                duration_total=durations.total() if durations.count else None,
                duration_mean=durations.total() / durations.count if durations.count else None,
            ),
            surrender_calibration=self._calibration.result(),
            assisted=AssistedSummary(
                n_assisted=self.n_assisted, n_unassisted=self.n_unassisted,
                assisted_success_rate=clustered_proportion(self._assisted_success.values()),
                assisted_average_score=clustered_mean(self._assisted_score.values()),
            ),
            tasks=tasks,
            chain_units=chain_units,
        )


def _average_score(units: list[UnitTally]) -> Estimate:
    """The mean over tasks of per-task mean scores, t interval across tasks; with one task, over its trials."""
    if len(units) == 1:
        sums = units[0].sums
        return clustered_mean([Cluster(sums.n, sums.score_sum, sums.score_sq)])
    return task_mean_interval([u.mean_score for u in units], trials=[u.n for u in units])


def _add_cluster(clusters: dict[str, Cluster], task: str, value: float, square: float) -> None:
    old = clusters.get(task)
    clusters[task] = Cluster(1, value, square) if old is None else \
        Cluster(old.n + 1, old.total + value, old.total_sq + square)


def _task_row(task_id: str, sums: _Sums) -> TaskRow:
    return TaskRow(task_id=task_id, n=sums.n, c=sums.c, mean_score=sums.score_sum / sums.n,
                   success_rate=sums.c / sums.n, success_ci=wilson_interval(sums.c, sums.n),
                   n_surrendered=sums.n_surrendered, n_errors=sums.n_errors)


def _validate_k_values(k_values: Iterable[int]) -> list[int]:
    ks = sorted(set(k_values))
    bad = [k for k in ks if not isinstance(k, int) or k < 1]
    if bad:
        raise ValueError(f"k values must be whole numbers >= 1, got {bad}.")
    return ks


def arm_metrics(
    records: Iterable[TrialResult],
    k_values: Iterable[int] = (1,),
    pass_threshold: float = 0.0,
    *,
    chains: Sequence[ChainDef] = (),
    include_assisted: bool = False,
) -> ArmMetrics:
    """All metrics of one arm's records (ValueError if they mix arms; see ArmMetrics).

    A task with fewer than k analysed trials is left out of pass@k/pass^k and listed there.
    """
    return ArmTally(None, pass_threshold, chains=chains, include_assisted=include_assisted) \
        .add_all(records).finish(k_values)
