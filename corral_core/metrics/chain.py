"""Chained-task metrics: per-link success, partial completion, end-to-end success, workflow score.

An episode is one round through the chain (records sharing an `episode_id`). Each link of an
episode ends as `success`, `failed` (attempted, not a success), `skipped` (never attempted,
usually because an upstream link failed) or `missing` (no record at all).

The workflow score of an episode is the seed's weighted sum of its link scores,
sum(w_link * score_link) with weights summing to 1 (equal weights unless the spec sets them); a
skipped or missing link scores 0. Its mean over episodes is the chain's headline.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from corral_core.domain import Fault, TrialStatus

from .records import EXCLUDED_STATUSES, TrialResult, effective_score, is_missing, single_arm, success
from .stats import UNIT, Estimate, mean_ci, proportion, wilson_interval

LINK_OUTCOMES = ("success", "failed", "skipped", "missing")


@dataclass(frozen=True)
class ChainDef:
    """A chain as the metrics see it: an id, its links in dependency order, optional link weights."""

    chain_id: str
    order: tuple[str, ...]
    weights: Mapping[str, float] | None = None
    depends_on: Mapping[str, tuple[str, ...]] | None = None  # link -> its upstream links (None: a line)


def equal_weights(order: Sequence[str]) -> dict[str, float]:
    return {task: 1.0 / len(order) for task in order}


def normalise_weights(weights: Mapping[str, float], order: Sequence[str]) -> tuple[dict[str, float], str | None]:
    """Weights for every link of `order`, summing to 1, and a note when they had to be normalised.

    ValueError for a weight naming no link, a negative or non-finite weight, or all zero. A link the
    weights do not name gets weight 0.
    """
    unknown = sorted(set(weights) - set(order))
    if unknown:
        raise ValueError(f"weights name tasks {unknown} that are not links of the chain {list(order)}.")
    values = {task: float(weights.get(task, 0.0)) for task in order}
    if any(not math.isfinite(w) or w < 0 for w in values.values()) or math.fsum(values.values()) <= 0:
        raise ValueError(f"weights must be finite, non-negative and not all zero, got {dict(weights)}.")
    total = math.fsum(values.values())
    if abs(total - 1.0) <= 1e-9:
        return values, None
    normalised = {task: w / total for task, w in values.items()}
    shown = ", ".join(f"{task} {w:.3g}" for task, w in normalised.items())
    return normalised, f"the weights sum to {total:g}, not 1; normalised to {shown}"


@dataclass(frozen=True)
class LinkStats:
    """One link (task) of the chain over the analysed episodes."""

    task_id: str
    position: int  # 0-based place in the chain order
    n_episodes: int
    attempted: int
    succeeded: int
    failed: int
    skipped: int
    missing: int
    success_rate: float | None  # succeeded / attempted: how the link does once reached
    completion_rate: float | None  # succeeded / n_episodes: how often the chain gets past it
    success_ci: tuple[float, float] | None = None  # Wilson over the `attempted` episodes (each one round)
    completion_ci: tuple[float, float] | None = None  # Wilson over the n_episodes


@dataclass(frozen=True)
class EpisodeRow:
    """How one episode went, link by link in chain order."""

    episode_id: str
    outcomes: dict[str, str]  # task_id -> success | failed | skipped | missing
    prefix_completed: int  # links that succeeded with every upstream link succeeded (in a line: the prefix)
    end_to_end: bool
    workflow_score: float = 0.0  # sum(weight * link score); skipped and missing links score 0
    trial_index: int = 0  # the round (the smallest trial index of its links)


@dataclass(frozen=True)
class ChainMetrics:
    """Metrics of one arm's chained episodes (see the module docstring for link outcomes)."""

    arm: str
    chain_order: list[str]
    n_episodes: int  # analysed episodes
    n_excluded_episodes: int  # a link cancelled/running, or (unless include_assisted) assisted
    n_ignored_records: int  # no episode_id, or a task outside chain_order
    links: dict[str, LinkStats]
    end_to_end: Estimate  # episodes whose every link succeeded; Wilson CI
    partial_completion: Estimate  # mean of prefix_completed / links (independent of how links are listed); t CI
    links_succeeded: Estimate  # mean share of links that succeeded, in any order; t CI
    workflow_score: Estimate  # the headline: mean over episodes of the weighted workflow score
    weights: dict[str, float]  # the link weights used (sum 1; equal unless given)
    weights_note: str | None  # how given weights were normalised, if they were
    episodes: dict[str, EpisodeRow]
    # episodes left out because a link errored outside the agent (provider, environment, timeout...):
    # they measured the infrastructure, so they are set apart as errors, not counted as failed links
    n_errored_episodes: int = 0
    errored_faults: dict[str, int] = field(default_factory=dict)  # those links, by fault


def _resolve_order(records: Sequence[TrialResult], chain_order: Sequence[str] | None) -> list[str]:
    if chain_order is not None:
        order = list(chain_order)
        if not order:
            raise ValueError("chain_order is empty; list the chain's task ids in dependency order.")
        if len(set(order)) != len(order):
            raise ValueError(f"chain_order {order} names a task twice; list each link once.")
        return order
    positions: dict[str, set[int | None]] = defaultdict(set)
    for record in records:
        if record.episode_id is not None:
            positions[record.task_id].add(record.chain_position)
    if not positions:
        raise ValueError("no chained records (none has an episode_id); nothing to order.")
    unknown = sorted(t for t, p in positions.items() if None in p or len(p) != 1)
    if unknown:
        raise ValueError(
            f"cannot derive the chain order: tasks {unknown} lack a single chain_position; "
            "pass chain_order explicitly."
        )
    return sorted(positions, key=lambda task: min(p for p in positions[task] if p is not None))


def _link_outcome(record: TrialResult | None, pass_threshold: float) -> str:
    if record is None:
        return "missing"
    if record.status == TrialStatus.SKIPPED:
        return "skipped"
    return "success" if success(record, pass_threshold) else "failed"


def chain_metrics(
    records: Sequence[TrialResult],
    chain_order: Sequence[str] | None = None,
    pass_threshold: float = 0.0,
    *,
    weights: Mapping[str, float] | None = None,
    include_assisted: bool = False,
    depends_on: Mapping[str, Sequence[str]] | None = None,
) -> ChainMetrics:
    """Per-link and per-episode metrics of one arm's chain.

    chain_order lists the links in dependency order (None: order by each record's
    chain_position). weights (task -> weight) set the workflow score of each episode,
    sum(w * score), where skipped or missing links score 0 (the seed's "workflow-level score");
    weights not summing to 1 are normalised and `weights_note` says so. Without weights every
    link weighs the same. depends_on (link -> upstream links) defines partial completion for a
    branching chain: the links that succeeded with every upstream link succeeded, whatever order the
    links are listed in; without it the chain is a line in chain_order (the completed prefix).
    """
    arm = single_arm(list(records), "chain_metrics")
    order = _resolve_order(records, chain_order)
    used, note = normalise_weights(weights, order) if weights is not None else (equal_weights(order), None)
    in_chain = set(order)
    by_episode: dict[str, dict[str, TrialResult]] = defaultdict(dict)
    ignored = 0
    for record in records:
        if record.episode_id is None or record.task_id not in in_chain:
            ignored += 1
            continue
        links = by_episode[record.episode_id]
        if record.task_id in links:
            raise ValueError(
                f"episode {record.episode_id!r} has two records for link {record.task_id!r}; "
                "each link runs once per episode."
            )
        links[record.task_id] = record

    episodes: dict[str, EpisodeRow] = {}
    workflow_scores: list[float] = []
    excluded = errored = 0
    faults: dict[str, int] = defaultdict(int)
    for episode_id in sorted(by_episode):
        links = by_episode[episode_id]
        if any(r.status in EXCLUDED_STATUSES - {TrialStatus.SKIPPED} for r in links.values()) or (
            not include_assisted and any(r.assisted for r in links.values())
        ):
            excluded += 1
            continue
        missing = [r for r in links.values() if is_missing(r)]
        if missing:
            errored += 1
            for r in missing:
                faults[r.fault or (Fault.TIMEOUT if r.status == TrialStatus.TIMEOUT else Fault.UNKNOWN)] += 1
            continue
        outcomes = {task: _link_outcome(links.get(task), pass_threshold) for task in order}
        prefix = _completed_in_order(outcomes, order, depends_on)
        workflow = _workflow_score(links, order, used)
        index = min(r.trial_index for r in links.values())
        episodes[episode_id] = EpisodeRow(episode_id, outcomes, prefix, prefix == len(order), workflow, index)
        workflow_scores.append(workflow)

    rows = list(episodes.values())
    n = len(rows)
    return ChainMetrics(
        arm=arm,
        chain_order=order,
        n_episodes=n,
        n_excluded_episodes=excluded,
        n_ignored_records=ignored,
        links={task: _link_stats(task, position, rows) for position, task in enumerate(order)},
        end_to_end=proportion(sum(row.end_to_end for row in rows), n),
        partial_completion=mean_ci([row.prefix_completed / len(order) for row in rows], bounds=UNIT),
        links_succeeded=mean_ci(
            [sum(o == "success" for o in row.outcomes.values()) / len(order) for row in rows], bounds=UNIT
        ),
        workflow_score=mean_ci(workflow_scores, bounds=UNIT),
        weights=used,
        weights_note=note,
        episodes=episodes,
        n_errored_episodes=errored,
        errored_faults=dict(faults),
    )


def _completed_in_order(outcomes: Mapping[str, str], order: list[str],
                        depends_on: Mapping[str, Sequence[str]] | None) -> int:
    """Links that succeeded and whose every upstream link (transitively) succeeded."""
    if depends_on is None:
        prefix = 0
        while prefix < len(order) and outcomes[order[prefix]] == "success":
            prefix += 1
        return prefix
    done: dict[str, bool] = {}

    def completed(task: str, seen: frozenset[str]) -> bool:
        if task not in done:
            ups = [up for up in depends_on.get(task, ()) if up in outcomes and up not in seen]
            done[task] = outcomes[task] == "success" and all(completed(up, seen | {task}) for up in ups)
        return done[task]

    return sum(completed(task, frozenset()) for task in order)


def _workflow_score(links: Mapping[str, TrialResult], order: list[str], weights: Mapping[str, float]) -> float:
    return math.fsum(
        weights[task] * effective_score(links[task])
        for task in order
        if task in links and links[task].status != TrialStatus.SKIPPED
    )


def _link_stats(task: str, position: int, rows: list[EpisodeRow]) -> LinkStats:
    counts = {outcome: 0 for outcome in LINK_OUTCOMES}
    for row in rows:
        counts[row.outcomes[task]] += 1
    attempted = counts["success"] + counts["failed"]
    return LinkStats(
        task_id=task,
        position=position,
        n_episodes=len(rows),
        attempted=attempted,
        succeeded=counts["success"],
        failed=counts["failed"],
        skipped=counts["skipped"],
        missing=counts["missing"],
        success_rate=counts["success"] / attempted if attempted else None,
        completion_rate=counts["success"] / len(rows) if rows else None,
        success_ci=wilson_interval(counts["success"], attempted),
        completion_ci=wilson_interval(counts["success"], len(rows)),
    )
