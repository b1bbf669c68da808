"""A benchmark's results: per-arm metrics, arm comparisons, chain metrics and the headline.

The headline score of a benchmark is the mean over its arms of each arm's average score (the mean
over tasks of the per-task mean score, unassisted attempted trials only; a chain counts as one task
scored by its weighted workflow score, skipped links 0). It is what the attempt status compares with
the best earlier finished benchmark of the same spec digest, in the spec's direction.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import operator
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Generic, TypeVar

import yaml

from corral_core.domain import RunStatus, TrialStatus
from corral_core.env import Suite, load_suite
from corral_core.errors import UserError
from corral_core.metrics import (
    Analysis,
    ArmMetrics,
    Attempt,
    ChainDef,
    ChainMetrics,
    PairedComparison,
    TrialResult,
    analyse,
    levels_in_order,
    metrics_to_dict,
    success,
)
from corral_core.metrics.costs import CostStudy
from corral_core.metrics.records import RETIRED_STATUS, passes
from corral_core.metrics.selection import SelectionStudy
from corral_core.metrics.trend import TrendResult
from corral_core.runner.plan import chained_tasks
from corral_core.runner.run_store import RunRepository
from corral_core.spec import BenchmarkSpec, spec_from_dict
from corral_core.store.convert import TRIAL_RECORD_COLUMNS
from corral_core.store.models import BenchmarkInfo, TrialInfo
from corral_core.store.tables import iso_from_driver
from corral_core.trial_result import RECORD_FIELDS, build_record

log = logging.getLogger(__name__)

ERRORED_STATUSES = frozenset({TrialStatus.ERROR, TrialStatus.TIMEOUT})
Item = TypeVar("Item")


class StoredTrials(Generic[Item]):
    """A benchmark's stored trials as records or report rows: read from the store again, by keyset
    pages, on every pass, so a result never holds a whole benchmark (a million trials) in memory."""

    def __init__(self, read: Callable[[], Iterator[Item]], count: int) -> None:
        self._read = read
        self._count = count

    def __iter__(self) -> Iterator[Item]:
        return self._read()

    def __len__(self) -> int:
        return self._count


# What a result holds of its trials: a list (a run without a store) or the store's stream.
Trials = Sequence[Item] | StoredTrials[Item]


LOST_OWNERSHIP = RunStatus.LOST_OWNERSHIP  # the status of a run whose benchmark another process claimed (ownership.py)

@dataclass
class BenchmarkResult:
    """What `BenchmarkRunner.run` returns (and what `--json` and `export` write)."""

    benchmark_id: str
    spec: BenchmarkSpec
    status: str  # finished | interrupted | lost_ownership
    arms: dict[str, ArmMetrics]
    comparisons: list[PairedComparison]  # every pair of arms, Holm-adjusted
    chains: dict[str, list[ChainMetrics]]  # arm -> one entry per chained suite
    records: Trials[TrialResult]  # every trial but retired attempts, as metrics read them
    rows: Trials[dict[str, Any]] = field(default_factory=list)  # one per trial, for reports
    headline_score: float | None = None
    previous_best: float | None = None
    attempt_status: str | None = None  # metrics.ATTEMPT_STATUSES, or None (unfinished)
    resumed: bool = False
    trials_run: int = 0  # trials run by this call (a resumed run counts only its own)
    duration: float = 0.0
    attempt: Attempt | None = None  # the comparison with the best earlier run behind attempt_status
    trend: TrendResult | None = None  # across arms that are ordered verbosity levels
    costs: CostStudy | None = None  # the cost of documentation: steps, tokens, cost per arm vs the first
    selection: SelectionStudy | None = None  # which tool each arm called first / at all
    stopped_by: str | None = None  # an infrastructure failure that interrupted the run (a lost Dask scheduler)

    @property
    def errored(self) -> int:
        """Trials that ended in an error or a timeout (counted by the metrics, which saw every record)."""
        return sum(m.status_counts.get(status, 0) for m in self.arms.values() for status in ERRORED_STATUSES)

    @property
    def trials_total(self) -> int:
        """Every trial the metrics counted (all but retired attempts)."""
        return sum(m.n_records for m in self.arms.values())

    @property
    def interrupted(self) -> bool:
        return self.status != RunStatus.FINISHED

    @property
    def lost_ownership(self) -> bool:
        """Another process claimed the benchmark during the run: it stopped, and the results are not its own."""
        return self.status == LOST_OWNERSHIP

    def to_dict(self, *, include_trials: bool = True) -> dict[str, Any]:
        """JSON-ready results: spec, ids, per-arm metrics, comparisons, chains, per-trial rows."""
        spec = self.spec
        data: dict[str, Any] = {
            "benchmark_id": self.benchmark_id,
            "name": spec.name,
            "status": self.status,
            "spec_digest": spec.digest,
            "spec": {**spec.normalized(), "direction": spec.direction, "source": spec.source,
                     "parallel": spec.parallel},
            "headline_score": _finite(self.headline_score),
            "previous_best": _finite(self.previous_best),
            "attempt_status": self.attempt_status,
            "attempt": metrics_to_dict(self.attempt) if self.attempt is not None else None,
            "resumed": self.resumed,
            "trials_run": self.trials_run,
            "trials_total": self.trials_total,
            "trials_errored": self.errored,
            "cost_total": _cost_total(self.arms.values()),
            "duration": self.duration,
            "stopped_by": self.stopped_by,
            "arms": {name: metrics_to_dict(m) for name, m in self.arms.items()},
            "documentation": arms_documentation(spec),
            "comparisons": [metrics_to_dict(c) for c in self.comparisons],
            "trend": metrics_to_dict(self.trend) if self.trend is not None else None,
            "costs": metrics_to_dict(self.costs) if self.costs is not None else None,
            "selection": metrics_to_dict(self.selection) if self.selection is not None else None,
            "chains": {arm: [metrics_to_dict(c) for c in chains] for arm, chains in self.chains.items()},
        }
        if include_trials:
            data["trials"] = list(self.json_rows())
        return data

    def json_rows(self) -> Iterator[dict[str, Any]]:
        """The per-trial rows as JSON-ready dicts, one at a time (what `to_dict` lists under "trials")."""
        return (_jsonable_row(row) for row in self.rows)


def arms_documentation(spec: BenchmarkSpec) -> dict[str, dict[str, Any]]:
    """What each arm's agents are shown of the tools (corral_core.docsize.arm_documentation): the
    channel their agent type reads, the level, the documentation variant and components, the overlays
    shown (file, sha256, text), and its size per task in characters and tokens (by the arm's model's
    tokenizer; null when litellm cannot count for it here)."""
    from corral_core.docsize import arm_documentation

    sized: dict[str, dict[str, Any]] = {}
    for arm in spec.arms:
        per_suite = [(suite, [t for t in spec.task_ids if t in suite.tasks]) for suite in spec.suites]
        parts = [arm_documentation(suite, tasks, arm.verbosity, arm.agent.type, arm.model.id, arm.variant,
                                   arm.components)
                 for suite, tasks in per_suite if tasks]
        tasks = sum(len(tasks) for _, tasks in per_suite)
        if not parts or not tasks:
            continue
        weights = [len(tasks) for _, tasks in per_suite if tasks]
        tokens = [part["tokens"] for part in parts]
        overlays = [record for suite, tasks in per_suite if tasks for record in suite.documentation_record()
                    if record["variant"] == (arm.variant or suite.default_variant)]
        sized[arm.name] = {
            "channel": parts[0]["channel"], "level": parts[0]["level"], "model": arm.model.id,
            # the documentation beyond the level: its variant (None: the suites' default), its components
            # (None: all), and the overlay files it shows, each with its sha256 and text
            "variant": arm.variant or next((r["variant"] for r in overlays), None) or "original",
            "components": list(arm.components) if arm.components is not None else None,
            "overlays": overlays,
            "chars": round(sum(p["chars"] * w for p, w in zip(parts, weights, strict=True)) / tasks, 1),
            "tokens": None if None in tokens else round(sum(t * w for t, w in zip(tokens, weights, strict=True))
                                                        / tasks, 1),
        }
    return sized


def chain_defs(spec: BenchmarkSpec) -> list[ChainDef]:
    """The spec's chains (one per suite with chained tasks), with the spec's link weights."""
    weights = dict(spec.chain_weights)
    chains = []
    for suite in spec.suites:
        links = chained_tasks(suite, spec.task_ids)
        if links:
            given = {task: weights[task] for task in links if task in weights}
            upstream = {task: tuple(suite.tasks[task].depends_on) for task in links}
            chains.append(ChainDef(f"{suite.name} (chain)", tuple(links), given or None, upstream))
    return chains


def ordered_levels(spec: BenchmarkSpec) -> list[str]:
    """The arms in verbosity order when they are levels of one thing: three or more arms, each its own
    verbosity level, the same model and agent otherwise (else [], and no trend test)."""
    return levels_in_order([(arm.name, arm.verbosity, (repr(arm.model.to_dict()), repr(arm.agent.to_dict())))
                            for arm in spec.arms])


def compute_analysis(spec: BenchmarkSpec, records: Iterable[TrialResult]) -> Analysis:
    """Per-arm metrics, every pair of arms compared, chain metrics, the headline score and, for arms that
    are ordered levels, the trend across them (one pass)."""
    return analyse(records, [a.name for a in spec.arms], list(spec.k_values), spec.pass_threshold,
                   chains=chain_defs(spec), equivalence_margin=spec.equivalence_margin,
                   ordered_levels=ordered_levels(spec), correct_tools=correct_tools(spec))


def correct_tools(spec: BenchmarkSpec) -> dict[str, list[str]]:
    """The selected tasks' declared `correct_tools` (tasks that declare none are left out)."""
    chosen = set(spec.task_ids)
    return {task_id: list(task.correct_tools) for suite in spec.suites for task_id, task in suite.tasks.items()
            if task_id in chosen and task.correct_tools}


def compute_metrics(spec: BenchmarkSpec, records: Iterable[TrialResult]
                    ) -> tuple[dict[str, ArmMetrics], list[PairedComparison], dict[str, list[ChainMetrics]],
                               float | None]:
    """Per-arm metrics, every pair of arms compared, chain metrics and the headline score (one pass)."""
    analysis = compute_analysis(spec, records)
    return analysis.arms, analysis.comparisons, analysis.chains, analysis.headline


@dataclass(frozen=True)
class TaskFacts:
    """What metrics need about each task that a stored trial row does not hold: the task's declared
    solvability (None when its suite declares none unsolvable) and its position in its suite's chain."""

    solvable: dict[str, bool | None] = field(default_factory=dict)
    chain_position: dict[str, int] = field(default_factory=dict)


def task_facts(suites: Iterable[Suite], task_ids: Iterable[str]) -> TaskFacts:
    """Solvability and chain positions of the selected tasks of `suites` (as a spec selects them)."""
    selected = list(task_ids)
    facts = TaskFacts()
    for suite in suites:
        declared = any(not task.solvable for task in suite.tasks.values())
        for task_id, task in suite.tasks.items():
            facts.solvable[task_id] = task.solvable if declared else None
        for pos, task_id in enumerate(chained_tasks(suite, selected)):
            facts.chain_position[task_id] = pos
    return facts


def records_from_store(stored: Iterable[Any], facts: TaskFacts) -> list[TrialResult]:
    """Stored trial records (Repository.trial_records) with the task facts the metrics need."""
    return list(iter_records_from_store(stored, facts))


def iter_records_from_store(stored: Iterable[Any], facts: TaskFacts) -> Iterator[TrialResult]:
    """`records_from_store` one record at a time (a store stream in, a metrics stream out)."""
    values = operator.attrgetter(*RECORD_FIELDS)
    return iter_records_from_values(
        ((values(row), [(c["tool_name"], c["status"], c.get("duration")) for c in row.tool_calls]) for row in stored),
        facts)


def iter_records_from_values(rows: Iterable[tuple[Sequence[Any], Sequence[tuple[Any, Any, Any]]]], facts: TaskFacts
                             ) -> Iterator[TrialResult]:
    """The one converter from stored trials to metrics records: each trial's TRIAL_RECORD_COLUMNS values
    and its tool calls as (tool_name, status, duration), as Repository.iter_trial_record_values gives them.
    Each record is built by trial_result.build_record, written from TrialResult's declaration (a million of them
    at the end of a big run)."""
    solvable, position = facts.solvable.get, facts.chain_position.get
    status_at, task_at = TRIAL_RECORD_COLUMNS.index("status"), TRIAL_RECORD_COLUMNS.index("task_id")
    build = build_record
    for values, calls in rows:
        if values[status_at] == RETIRED_STATUS:  # an attempt --retry-errors replaced: history, not a measurement
            continue
        task_id = values[task_at]
        yield build(values, solvable=solvable(task_id), chain_position=position(task_id), tool_calls=[
            {"tool_name": name, "status": state, "duration": took} for name, state, took in calls] if calls else [])


def metrics_records(spec: BenchmarkSpec, stored: Iterable[Any]) -> list[TrialResult]:
    """Store trial records (corral_core.store) as metrics records, with solvability and chain order."""
    return records_from_store(stored, task_facts(spec.suites, spec.task_ids))


def stored_benchmark_records(repository: RunRepository, benchmark: BenchmarkInfo, *, tool_calls: bool = True
                             ) -> Iterator[TrialResult]:
    """A stored benchmark's trials as metrics records, streamed from the store (keyset pages), its task
    facts read from the suites it ran (the paths kept with it) and the `tasks:` of its stored spec. A
    suite that no longer loads leaves its tasks' solvability and chain position unknown (logged), as
    metrics treat undeclared tasks. `tool_calls=False`: without them (no tool-call statistics)."""
    suites: list[Suite] = []
    for path in benchmark.suites:
        try:
            suites.append(load_suite(path))
        except (UserError, OSError) as exc:
            log.warning("suite %s of benchmark %s does not load (%s); its tasks' solvability and chain "
                        "order are unknown", path, benchmark.id, exc)
    try:
        chosen = (yaml.safe_load(benchmark.spec_yaml or "") or {}).get("tasks")
    except (yaml.YAMLError, AttributeError):
        chosen = None
    if not isinstance(chosen, list):
        chosen = None
    task_ids = [t for suite in suites for t in suite.ordered_task_ids()
                if chosen is None or t in {str(c) for c in chosen}]
    return iter_records_from_values(repository.iter_trial_record_values(benchmark.id, tool_calls=tool_calls),
                                    task_facts(suites, task_ids))


@dataclass
class StoredAnalysis:
    """A stored benchmark's metrics, computed in one streamed pass, and its trials to read again."""

    arms: dict[str, ArmMetrics]
    comparisons: list[PairedComparison]
    chains: dict[str, list[ChainMetrics]]
    headline: float | None
    records: StoredTrials[TrialResult]
    rows: StoredTrials[dict[str, Any]]
    trend: TrendResult | None = None
    costs: CostStudy | None = None
    selection: SelectionStudy | None = None


def analyse_stored(spec: BenchmarkSpec, repository: RunRepository, benchmark_id: str) -> StoredAnalysis:
    """The end of a run: metrics over the benchmark's stored trials, streamed by keyset pages (memory
    of one page plus the metrics' per-task sums), and the trials as records and rows to read again."""
    facts = task_facts(spec.suites, spec.task_ids)

    def records() -> Iterator[TrialResult]:
        return iter_records_from_values(repository.iter_trial_record_values(benchmark_id), facts)

    analysis = compute_analysis(spec, records())
    total = sum(m.n_records for m in analysis.arms.values())
    rows = StoredTrials(lambda: stored_trial_rows(repository, benchmark_id, spec.pass_threshold), total)
    return StoredAnalysis(analysis.arms, analysis.comparisons, analysis.chains, analysis.headline,
                          StoredTrials(records, total), rows, analysis.trend, analysis.costs,
                          analysis.selection)


_INFO_FIELDS = tuple(f.name for f in dataclasses.fields(TrialInfo))
_info_values = operator.attrgetter(*_INFO_FIELDS)


def trial_row(trial: Any, pass_threshold: float) -> dict[str, Any]:
    """One per-trial row for reports, from a store TrialInfo (or any object with its fields): its fields
    in order, `id` renamed `trial_id` (last), then `success`."""
    if isinstance(trial, TrialInfo):  # the stored trial, field by field (asdict would deep-copy each)
        row = dict(zip(_INFO_FIELDS, _info_values(trial), strict=True))
        row["trial_id"] = row.pop("id")
        row["success"] = success(trial, pass_threshold)
        return row
    is_instance = dataclasses.is_dataclass(trial) and not isinstance(trial, type)
    row = dataclasses.asdict(trial) if is_instance else dict(trial)
    row["trial_id"] = row.pop("id", row.get("trial_id"))
    record = TrialResult.from_mapping(row)
    row["success"] = success(record, pass_threshold)
    return row


def stored_trial_rows(repository: RunRepository, benchmark_id: str, pass_threshold: float) -> Iterator[dict[str, Any]]:
    """Every stored trial of a benchmark as a report row, streamed in start order (keyset pages): what
    `trial_row` makes of each TrialInfo, built from the stored values (a million rows in an export)."""
    keys = ROW_KEYS
    return (dict(zip(keys, values, strict=True))
            for values in stored_trial_values(repository, benchmark_id, pass_threshold, keys))


def stored_trial_values(repository: RunRepository, benchmark_id: str, pass_threshold: float, columns: Sequence[str], *,
                        iso_times: bool = False) -> Iterator[tuple[Any, ...]]:
    """`stored_trial_rows`' values in `columns` order (any of ROW_KEYS), one tuple per row and no dict
    (the export writes a million of them); `iso_times`: started_at and finished_at as ISO 8601 text."""
    width = len(_INFO_FIELDS)
    extra = {"surrendered": width, "assisted": width + 1, "success": width + 2}
    if iso_times:
        extra.update(started_at=width + 3, finished_at=width + 4)
    position = {name: i for i, name in enumerate(_INFO_FIELDS)} | {"trial_id": 0} | extra
    unknown = [name for name in columns if name not in ROW_KEYS]
    if unknown:
        raise ValueError(f"not a trial row column: {', '.join(unknown)}")
    if not columns:
        raise ValueError("no columns")
    pick: Callable[[tuple[Any, ...]], tuple[Any, ...]] = operator.itemgetter(*(position[name] for name in columns))
    if len(columns) == 1:  # itemgetter of one index gives the value, not a tuple
        one = position[columns[0]]
        pick = lambda values: (values[one],)  # noqa: E731
    status, score_at, error_at = (_INFO_FIELDS.index(name) for name in ("status", "score", "error"))
    surrendered_at, assisted_at = _INFO_FIELDS.index("surrendered"), _INFO_FIELDS.index("assisted")
    started_at, finished_at = _INFO_FIELDS.index("started_at"), _INFO_FIELDS.index("finished_at")
    iso = iso_from_driver
    for values in repository.iter_trial_values(benchmark_id, driver_times=iso_times):
        state = values[status]
        if state == RETIRED_STATUS:
            continue
        surrendered = bool(values[surrendered_at])
        score = values[score_at]
        success = passes(state, score, values[error_at], surrendered, pass_threshold)
        if iso_times:
            yield pick((*values, surrendered, bool(values[assisted_at]), success,
                        iso(values[started_at]), iso(values[finished_at])))
        else:
            yield pick((*values, surrendered, bool(values[assisted_at]), success))


# trial_row's keys: the stored trial's fields, `id` renamed `trial_id` (moved last), then `success`
ROW_KEYS = (*_INFO_FIELDS[1:], "trial_id", "success")


def _cost_total(arms: Iterable[ArmMetrics]) -> float | None:
    """The run's cost over every arm; None when no arm knows its cost."""
    costs = [m.resources.cost for m in arms if m.resources.cost is not None]
    return math.fsum(costs) if costs else None


def _jsonable_row(row: dict[str, Any]) -> dict[str, Any]:
    return {key: (value.isoformat() if isinstance(value, datetime) else _finite(value)) for key, value in row.items()}


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def stored_spec(benchmark: BenchmarkInfo, where: str = "fork") -> BenchmarkSpec:
    """A stored benchmark's spec (as run: the CLI's overrides are in its stored text), its suites read
    from the paths kept with it. `where`: the command asking, for the error."""
    data = yaml.safe_load(benchmark.spec_yaml or "") or {}
    suites = [str(path) for path in benchmark.suites]
    if not isinstance(data, dict) or not suites:
        raise UserError(f"benchmark {benchmark.id} has no usable stored spec.", where=where,
                        fix="use a benchmark run by this version of corral-tui.")
    data.pop("suite", None)
    data["suites"] = suites  # stored resolved: the spec's own may be relative to a file we no longer know
    return spec_from_dict(data, Path(suites[0]).parent, source=f"the stored spec of benchmark {benchmark.id}")


def analyse_benchmark(repository: RunRepository, benchmark: BenchmarkInfo, *, tool_calls: bool = False
                      ) -> Analysis:
    """A stored benchmark — running, interrupted or finished — analysed by the call its run makes at its
    end (compute_analysis with its spec, rebuilt from the store, over its stored trials, streamed): the
    same chains (once per episode), equivalence margin, ordered levels and errors apart, so the same
    verdicts as batch and export. A spec that no longer loads raises UserError (what, where, fix)."""
    spec = stored_spec(benchmark, where="compare")
    facts = task_facts(spec.suites, spec.task_ids)
    values = repository.iter_trial_record_values(benchmark.id, tool_calls=tool_calls)
    return compute_analysis(spec, iter_records_from_values(values, facts))
