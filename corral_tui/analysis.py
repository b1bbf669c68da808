"""What the history and compare screens show, computed from the store (called from thread workers).

Each function takes the `Repository` and returns plain data; the screens only draw it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from corral_core.domain import BenchmarkStatus, TrialStatus
from corral_core.metrics import TRIAL_STATUSES

if TYPE_CHECKING:
    from corral_core.metrics import TrialResult
    from corral_core.store import BenchmarkInfo, Repository, TimelineEntry, TrialInfo

TRIAL_FILTER_STATUSES = (TrialStatus.RUNNING, *TRIAL_STATUSES)
Item = TypeVar("Item")


@dataclass
class Page(Generic[Item]):
    """One page of rows plus the total behind it (from a COUNT query)."""

    items: list[Item]
    offset: int
    limit: int
    total: int
    query: Any = None  # what was asked (filters), so a late reply to an older request is recognised

    @property
    def number(self) -> int:
        return self.offset // self.limit + 1 if self.limit else 1

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // self.limit)) if self.limit else 1


@dataclass
class TrialFilter:
    task: str | None = None
    arm: str | None = None
    status: str | None = None


@dataclass(frozen=True)
class Estimate:
    value: float | None
    ci: tuple[float, float] | None = None
    method: str = ""  # how the interval was computed (corral_core.metrics.intervals)


@dataclass
class ArmColumn:
    """One arm's column on the compare screen, from live metrics or from the stored metrics JSON; its
    errored and assisted trials are then set from the stored rows (`compare_view`)."""

    name: str
    n_trials: int  # the trials its score is computed over (attempted, unassisted)
    score: Estimate
    success: Estimate
    surrender: Estimate
    pass_k: dict[int, tuple[float | None, float | None]]  # k -> (pass@k, pass^k)
    tokens: int
    duration_mean: float | None
    n_assisted: int  # assisted trials the metrics report apart (attempted ones)
    task_scores: dict[str, float]
    cost: float | None = None
    errors_by_fault: dict[str, int] = field(default_factory=dict)  # errored trials by fault (stored rows)
    assisted_tasks: dict[str, int] = field(default_factory=dict)  # assisted trials by task (stored rows)

    @property
    def n_errored(self) -> int:
        return sum(self.errors_by_fault.values())

    @property
    def n_assisted_marked(self) -> int:
        """Assisted trials as the trials list marks them (attempted or not)."""
        return sum(self.assisted_tasks.values())

    @classmethod
    def from_metrics(cls, m: Any) -> ArmColumn:
        """From a corral_core.metrics.ArmMetrics."""
        return cls(m.arm, m.n_trials, _estimate(m.average_score), _estimate(m.success_rate),
                   _estimate(m.surrender_rate), {k: (p.pass_at_k, p.pass_hat_k) for k, p in m.pass_k.items()},
                   m.resources.total_tokens, m.resources.duration_mean, m.n_assisted,
                   {task: row.mean_score for task, row in m.tasks.items()}, m.resources.cost,
                   dict(m.errors_by_fault))

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ArmColumn:
        """From ArmMetrics as the runner stores it (metrics_to_dict)."""
        resources = d.get("resources") or {}
        return cls(str(d["arm"]), int(d.get("n_trials") or 0), _estimate(d.get("average_score")),
                   _estimate(d.get("success_rate")), _estimate(d.get("surrender_rate")),
                   {int(k): (p.get("pass_at_k"), p.get("pass_hat_k")) for k, p in (d.get("pass_k") or {}).items()},
                   int(resources.get("total_tokens") or 0), resources.get("duration_mean"),
                   int(d.get("n_assisted") or 0),
                   {task: row.get("mean_score") for task, row in (d.get("tasks") or {}).items()},
                   resources.get("cost"), dict(d.get("errors_by_fault") or {}))


def _estimate(value: Any) -> Estimate:
    if value is None:
        return Estimate(None)
    if isinstance(value, dict):
        ci = value.get("ci")
        return Estimate(value.get("value"), (float(ci[0]), float(ci[1])) if ci else None,
                        str(value.get("method") or ""))
    return Estimate(value.value, tuple(value.ci) if value.ci else None, str(getattr(value, "method", "") or ""))


@dataclass(frozen=True)
class PairScore:
    """A pair's primary outcome for the forest plot: mean over tasks of B - A and its 95% interval."""

    arm_a: str
    arm_b: str
    mean_diff: float | None
    ci: tuple[float, float] | None


@dataclass(frozen=True)
class LevelCurve:
    """Score by ordered level (verbosity): each level's mean over the tasks measured at every level, with a
    t interval over tasks, and the trend test's one-line result."""

    levels: list[str]
    points: list[Estimate]
    summary: str


@dataclass
class CompareView:
    """A benchmark's arms side by side."""

    benchmark: BenchmarkInfo
    arms: list[ArmColumn]  # in the benchmark's arm order
    comparisons: list[tuple[str, str, str]]  # (arm A, arm B, summary) of every pair of arms, Holm over all pairs
    tasks: list[str]  # every task with a trial, scored or not (an assisted-only task stays listed)
    k_values: list[int]
    stored: bool  # read from the finished benchmark's metrics (else computed from its trials)
    # each arm's tool documentation as its agents saw it: {channel, level, model, chars, tokens} per task
    documentation: dict[str, dict[str, Any]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # e.g. the trend across ordered levels
    other: BenchmarkInfo | None = None  # the second benchmark, when two are compared (compare_two_view)
    pairs: list[PairScore] = field(default_factory=list)  # in the order of `comparisons`
    curve: LevelCurve | None = None  # when the arms are ordered levels (the trend test ran)

    @property
    def n_tasks(self) -> int:
        """Tasks the scores are computed over (one task: its intervals are over trials, not tasks)."""
        return len({task for arm in self.arms for task in arm.task_scores})


def benchmark_page(repository: Repository, offset: int, limit: int) -> Page[BenchmarkInfo]:
    page = repository.list_benchmarks(offset=offset, limit=limit)
    return Page(page.items, offset, limit, repository.count_benchmarks())


def trial_page(repository: Repository, benchmark_id: str, filters: TrialFilter, offset: int, limit: int
               ) -> Page[TrialInfo]:
    options = {"task": filters.task, "arm": filters.arm, "status": filters.status}
    page = repository.trials(benchmark_id, offset=offset, limit=limit, **options)
    return Page(page.items, offset, limit, repository.count_trials(benchmark_id, **options), filters)


def filter_choices(benchmark: BenchmarkInfo, known_tasks: Iterable[str] = ()) -> tuple[list[str], list[str]]:
    """(tasks, arms) a benchmark's trials can be filtered by: its spec's tasks, else the loaded suites'."""
    spec = (benchmark.metrics or {}).get("spec") or {}
    tasks = [str(t) for t in spec.get("tasks") or []] or list(known_tasks)
    arms = [arm.name for arm in benchmark.arms]
    return tasks, arms


def compare_view(repository: Repository, benchmark_id: str) -> CompareView:
    """Per-arm metrics, paired comparisons of every pair of arms and the task x arm scores.

    A finished benchmark's stored metrics are read as they are (instant on 100,000 trials);
    a running or interrupted one is computed from its trials.
    """
    benchmark = repository.get_benchmark(benchmark_id)
    if benchmark is None:
        raise LookupError(f"no benchmark {benchmark_id!r} in the store")
    metrics = benchmark.metrics or {}
    spec = metrics.get("spec") or {}
    k_values = sorted({int(k) for k in spec.get("k_values") or []}) or \
        sorted({1, max(1, int(benchmark.trials_per_task or 1))})
    problems: list[str] = []
    if benchmark.status == BenchmarkStatus.FINISHED and metrics.get("arms"):
        arms = [ArmColumn.from_json(d) for d in metrics["arms"].values()]
        stored_pairs = metrics.get("comparisons") or []
        comparisons = [(str(c.get("arm_a")), str(c.get("arm_b")), str(c.get("summary"))) for c in stored_pairs]
        pairs = [pair_from_json(c) for c in stored_pairs]
        curve = curve_from_json(metrics.get("trend") or {})
        stored = True
    else:
        levels = _stored_levels(benchmark, spec)
        arms, comparisons, pairs, curve = _computed(repository, benchmark, k_values,
                                                    float(spec.get("pass_threshold") or 0.0), levels, problems)
        stored = False
    notes = ([curve.summary] if curve and curve.summary else []) + problems
    faults, assisted = repository.errors_by_arm(benchmark_id), repository.assisted_by_arm(benchmark_id)
    for column in arms:  # read from the stored rows, whatever the metrics count as analysed
        column.errors_by_fault = faults.get(column.name, {})
        column.assisted_tasks = assisted.get(column.name, {})
    tasks = sorted({task for column in arms for task in (*column.task_scores, *column.assisted_tasks)})
    documentation = metrics.get("documentation") or {}
    return CompareView(benchmark, arms, comparisons, tasks, k_values, stored,
                       documentation if isinstance(documentation, dict) else {}, notes, pairs=pairs, curve=curve)


def _stored_levels(benchmark: Any, plan: dict[str, Any]) -> list[str]:
    """The arms in level order as the finished run will test them (runner.results.ordered_levels): from the
    plan stored at the start, whose arms carry their whole model and agent (an arm that differs in
    temperature only is not a level of the same thing); the stored arms' ids when no plan was kept."""
    from corral_core.metrics import levels_in_order

    planned = plan.get("arms") or []
    if planned and all(isinstance(arm, dict) and "name" in arm for arm in planned):
        return levels_in_order([(str(arm["name"]), arm.get("verbosity"),
                                 (repr(arm.get("model")), repr(arm.get("agent")))) for arm in planned])
    return levels_in_order([(a.name, a.verbosity, (a.model, a.agent)) for a in benchmark.arms])


def pair_from_json(c: dict[str, Any]) -> PairScore:
    score = c.get("score") or {}
    ci = score.get("ci")
    return PairScore(str(c.get("arm_a")), str(c.get("arm_b")), score.get("mean_diff"),
                     (float(ci[0]), float(ci[1])) if ci else None)


def curve_from_json(trend: dict[str, Any]) -> LevelCurve | None:
    levels, points = trend.get("levels") or [], trend.get("curve") or []
    if not levels or len(points) != len(levels):
        return None
    return LevelCurve([str(level) for level in levels], [_estimate(point) for point in points],
                      str(trend.get("summary") or ""))


def _curve(trend: Any) -> LevelCurve | None:
    """A TrendResult (corral_core.metrics) as the plot's curve."""
    if trend is None:
        return None
    return LevelCurve(list(trend.levels), [_estimate(point) for point in trend.curve], trend.summary)


def compare_two_view(repository: Repository, first_id: str, second_id: str) -> CompareView:
    """Two benchmarks of the same suite side by side: every arm of each is a column ("A minimal", "B
    full"), computed from their trials, and every pair of columns is compared, paired by task."""
    from corral_core.errors import UserError

    first, second = repository.get_benchmark(first_id), repository.get_benchmark(second_id)
    if first is None or second is None:
        raise LookupError(f"no benchmark {first_id if first is None else second_id!r} in the store")
    if sorted(first.suites) != sorted(second.suites):
        raise UserError(f"benchmarks {first_id} and {second_id} ran different suites ({', '.join(first.suites)} / "
                        f"{', '.join(second.suites)}): their tasks cannot be paired.", where="compare",
                        fix="mark two benchmarks of the same suite.")
    spec = (first.metrics or {}).get("spec") or {}
    k_values = sorted({1, max(1, int(min(first.trials_per_task or 1, second.trials_per_task or 1)))})
    names = {first.id: "A", second.id: "B"}
    arms, comparisons, pairs, _curve_none = _computed_over(repository, [first, second], k_values,
                                                           float(spec.get("pass_threshold") or 0.0),
                                                           lambda benchmark, arm: f"{names[benchmark.id]} {arm}")
    tasks = sorted({task for column in arms for task in column.task_scores})
    return CompareView(first, arms, comparisons, tasks, k_values, False, other=second, pairs=pairs)


def arm_records(repository: Any, benchmark: Any) -> dict[str, list[TrialResult]]:
    """A stored benchmark's trials as metrics records by arm, through the engine's one converter."""
    from corral_core.runner import stored_benchmark_records

    by_arm: dict[str, list[TrialResult]] = {arm.name: [] for arm in benchmark.arms}
    for record in stored_benchmark_records(repository, benchmark):
        by_arm.setdefault(record.arm, []).append(record)
    return by_arm


Computed = tuple[list[ArmColumn], list[tuple[str, str, str]], list[PairScore], "LevelCurve | None"]


def _computed(repository: Any, benchmark: Any, k_values: list[int], threshold: float,
              levels: list[str], notes: list[str]) -> Computed:
    """Metrics of an unfinished benchmark by the engine's own call for a stored benchmark
    (corral_core.runner.analyse_benchmark: its stored spec's chains, equivalence margin and levels, so the
    verdicts a batch run of it prints), in one streamed pass over its stored trials. When its spec no
    longer loads (a suite moved), the arms' tallies without them, and a note says so; a benchmark recorded
    without a spec (an import) has only its tallies. Tool calls are not
    read: the screen shows no tool statistics."""
    from corral_core.errors import UserError
    from corral_core.runner.results import analyse_benchmark

    def from_tallies() -> Computed:
        return _computed_over(repository, [benchmark], k_values, threshold, lambda _benchmark, arm: arm, levels)

    if not (benchmark.spec_yaml and benchmark.suites):  # recorded without a spec (an import, an old store)
        return from_tallies()
    try:
        analysis = analyse_benchmark(repository, benchmark)
    except (UserError, OSError) as exc:
        notes.append(f"the stored spec does not load ({exc}): computed without its chains and equivalence margin")
        return from_tallies()
    arms = [ArmColumn.from_metrics(m) for m in analysis.arms.values()]
    comparisons = [(c.arm_a, c.arm_b, c.summary) for c in analysis.comparisons]
    pairs = [PairScore(c.arm_a, c.arm_b, c.score.mean_diff, c.score.ci) for c in analysis.comparisons]
    return arms, comparisons, pairs, _curve(analysis.trend)


def _computed_over(repository: Any, benchmarks: list[Any], k_values: list[int], threshold: float,
                   column: Any, levels: list[str] | None = None) -> Computed:
    """The arms of one or more benchmarks as columns named `column(benchmark, arm)`, each tallied in one
    streamed pass over its trials; every pair of columns is compared, paired by task."""
    from corral_core.metrics import ArmTally, compare_tallies, trend_over
    from corral_core.runner import stored_benchmark_records

    tallies: dict[str, ArmTally] = {}
    for benchmark in benchmarks:
        for arm in benchmark.arms:
            name = column(benchmark, arm.name)
            tallies[name] = ArmTally(name, threshold)
        for record in stored_benchmark_records(repository, benchmark, tool_calls=False):
            name = column(benchmark, record.arm)
            record = record.evolve(arm=name)
            tally = tallies.get(name)
            if tally is None:
                tally = tallies[name] = ArmTally(name, threshold)
            tally.add(record)
    names = [name for name, tally in tallies.items() if tally.n_records]
    arms = [ArmColumn.from_metrics(tallies[name].finish(k_values)) for name in names]
    # every pair at once, Holm over all of them: the same call (and so the same verdicts) as a batch run
    compared = compare_tallies([tallies[name] for name in names])
    comparisons = [(c.arm_a, c.arm_b, c.summary) for c in compared]
    pairs = [PairScore(c.arm_a, c.arm_b, c.score.mean_diff, c.score.ci) for c in compared]
    return arms, comparisons, pairs, _curve(trend_over(tallies, levels or []))


def arm_label(benchmark: Any) -> str:
    """The arms of a benchmark in a few words: 'minimal, brief, full'."""
    names = [arm.name for arm in benchmark.arms]
    text = ", ".join(names[:4])
    return text + (f" +{len(names) - 4}" if len(names) > 4 else "")


def from_iteration(entries: list[TimelineEntry], iteration: int) -> list[TimelineEntry]:
    """The entries of a timeline from the start of `iteration` (0-based) on. An entry without an
    iteration of its own (a message, an LLM call) belongs to the latest one named before it; a fork's
    hook and intervention at its fork point name that iteration, so they open its side."""
    current = -1
    shown = []
    for entry in entries:
        event = entry.event()
        named = event.data.get("iteration") if event is not None else None
        if isinstance(named, int):
            current = named
        if current >= iteration:
            shown.append(entry)
    return shown
