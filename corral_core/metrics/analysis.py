"""A whole benchmark's analysis in one pass over its records: per-arm metrics, every pair of arms
compared, chain metrics and the headline score."""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from .arm import ArmMetrics, ArmTally
from .chain import ChainDef, ChainMetrics
from .compare import ALPHA, PairedComparison, compare_tallies
from .costs import CostStudy, CostTally
from .records import TrialResult
from .selection import SelectionStudy, SelectionTally
from .trend import TrendResult, trend_test


@dataclass
class Analysis:
    arms: dict[str, ArmMetrics]  # in arm order, arms without records left out
    comparisons: list[PairedComparison]  # every pair of arms, Holm-adjusted
    chains: dict[str, list[ChainMetrics]]  # arm -> one entry per chain
    headline: float | None  # mean over arms of each arm's average score (None without any)
    trend: TrendResult | None = None  # across `ordered_levels`, when given (3 levels or more)
    costs: CostStudy | None = None  # steps, tokens and cost per arm against the first (two arms or more)
    selection: SelectionStudy | None = None  # first-call and any-call rate of each tool per arm


def analyse(records: Iterable[TrialResult], arm_order: Sequence[str] = (), k_values: Iterable[int] = (1,),
            pass_threshold: float = 0.0, *, chains: Sequence[ChainDef] = (), include_assisted: bool = False,
            seed: int = 0, alpha: float = ALPHA, equivalence_margin: float | None = None,
            ordered_levels: Sequence[str] = (), correct_tools: Mapping[str, Collection[str]] | None = None
            ) -> Analysis:
    """Consume `records` once (any iterable: a list, a stream of store pages) and analyse them.

    Arms are reported in `arm_order`, then any other arm met in the records, by name. With
    `ordered_levels` (arm names in level order, e.g. verbosity), a trend test across them too. With
    `correct_tools` (task -> the tools that count as a correct choice), the selection study's correct-choice
    rates too.
    """
    ks = list(k_values)
    tallies: dict[str, ArmTally] = {}
    costs = CostTally(pass_threshold, include_assisted)
    selection = SelectionTally(include_assisted, correct_tools)
    for record in records:
        costs.add(record)
        selection.add(record)
        tally = tallies.get(record.arm)
        if tally is None:
            tally = tallies[record.arm] = ArmTally(record.arm, pass_threshold, chains=chains,
                                                   include_assisted=include_assisted)
        tally.add(record)
    names = [a for a in arm_order if a in tallies] + sorted(a for a in tallies if a not in arm_order)
    arms = {name: tallies[name].finish(ks) for name in names}
    comparisons = compare_tallies([tallies[name] for name in names], seed=seed, alpha=alpha,
                                  equivalence_margin=equivalence_margin)
    chain_results = {name: tallies[name].chain_metrics for name in names if tallies[name].chain_metrics}
    values = [m.average_score.value for m in arms.values() if m.average_score.value is not None]
    headline = math.fsum(values) / len(values) if values else None
    return Analysis(arms, comparisons, chain_results, headline, trend_over(tallies, ordered_levels, seed=seed),
                    costs.study(names, seed=seed, alpha=alpha), selection.study(names))


def trend_over(tallies: dict[str, ArmTally], ordered_levels: Sequence[str], *, seed: int = 0) -> TrendResult | None:
    """The trend test across `ordered_levels` (3 or more arm names in level order) from the arms' tallies;
    None when there are fewer levels or a level has no tally."""
    if len(ordered_levels) < 3 or not all(level in tallies for level in ordered_levels):
        return None
    means = {level: {u: unit.mean_score for u, unit in tallies[level].units.items()} for level in ordered_levels}
    trials = {level: {u: unit.n for u, unit in tallies[level].units.items()} for level in ordered_levels}
    return trend_test(ordered_levels, means, trials, seed=seed)
