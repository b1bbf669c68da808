"""Pure statistics over plain trial records (the stdlib, and numpy for every Monte Carlo draw; never imports
the UI or the store).

Definitions (what docs/benchmarks.md, "What the metrics mean", quotes):

- success: status completed, score > pass_threshold (default 0, as in Corral), no error, not
  surrendered.
- analysed trials: attempted (not skipped / cancelled / running), not assisted by a person (assisted
  trials are reported apart) and not errored or timed out by a fault outside the agent (those are
  missing, not failures; a sensitivity line counts them as failures). A missing score counts as 0.
- the unit of analysis is the task: an independent task, or a whole chain (its episodes are its
  trials; a skipped link scores 0 in the episode's weighted workflow score).
- average_score (the headline): mean over tasks of each task's mean score; t interval across tasks,
  its spread floored at what pass/fail trials at the arm's mean rate would show.
- success / surrender / error rates: pooled over trials, Wilson interval on the design-effect
  adjusted sample size (cluster-robust variance by task).
- pass@k: mean over tasks of 1 - C(n-c, k)/C(n, k) (unbiased, Chen et al.); pass^k: mean over
  tasks of C(c, k)/C(n, k). Tasks with fewer than k trials are left out and listed.
- comparisons: every pair of arms, paired by task; sign-flip permutation test (exact or seeded Monte
  Carlo) and the interval that inverts it; Holm-adjusted; McNemar on trials as a labelled secondary.
  See docs/statistics.md.
- chains: per-link success, partial completion, end-to-end success, weighted workflow score.
"""

from .analysis import Analysis, analyse, trend_over
from .arm import (
    ArmMetrics,
    ArmTally,
    AssistedSummary,
    Resources,
    SurrenderCalibration,
    TaskRow,
    ToolCallStats,
    UnitRow,
    arm_metrics,
    fault_of,
    surrender_calibration,
    tool_call_stats,
)
from .attempt import (
    ATTEMPT_STATUSES,
    DIRECTIONS,
    ERRORED_SHARE,
    Attempt,
    AttemptStatus,
    EarlierRun,
    best_score,
    classify_attempt,
    headline_units,
)
from .chain import ChainDef, ChainMetrics, EpisodeRow, LinkStats, chain_metrics, normalise_weights
from .compare import (
    ErrorsApart,
    McNemarResult,
    PairedComparison,
    Sensitivity,
    TaskDifferences,
    TaskLevelResult,
    TaskSpread,
    compare_arms,
    compare_tallies,
    task_differences,
    tasks_needed,
)
from .intervals import Cluster, clustered_mean, clustered_proportion, task_mean_interval
from .paired import (
    BootstrapCI,
    SignFlipInterval,
    SignFlipTest,
    bootstrap_mean_ci,
    cohens_dz,
    format_p,
    holm,
    sign_flip_interval,
    sign_flip_test,
)
from .records import (
    ATTEMPTED_STATUSES,
    EXCLUDED_STATUSES,
    TOOL_STATUSES,
    TRIAL_STATUSES,
    TrialResult,
    effective_score,
    has_error,
    is_attempted,
    is_errored,
    is_missing,
    success,
)
from .serialize import metrics_to_dict, to_jsonable
from .stats import (
    Estimate,
    PassK,
    mcnemar_exact,
    mean_ci,
    pass_at_k,
    pass_hat_k,
    pass_k_over_tasks,
    proportion,
    t_cdf,
    t_quantile,
    wilson_interval,
)
from .trend import levels_in_order

__all__ = [
    "ATTEMPTED_STATUSES",
    "ATTEMPT_STATUSES",
    "DIRECTIONS",
    "ERRORED_SHARE",
    "EXCLUDED_STATUSES",
    "TOOL_STATUSES",
    "TRIAL_STATUSES",
    "Analysis",
    "ArmMetrics",
    "ArmTally",
    "AssistedSummary",
    "Attempt",
    "AttemptStatus",
    "BootstrapCI",
    "ChainDef",
    "ChainMetrics",
    "Cluster",
    "EarlierRun",
    "EpisodeRow",
    "ErrorsApart",
    "Estimate",
    "LinkStats",
    "McNemarResult",
    "PairedComparison",
    "PassK",
    "Resources",
    "Sensitivity",
    "SignFlipInterval",
    "SignFlipTest",
    "SurrenderCalibration",
    "TaskDifferences",
    "TaskLevelResult",
    "TaskRow",
    "TaskSpread",
    "ToolCallStats",
    "TrialResult",
    "UnitRow",
    "analyse",
    "arm_metrics",
    "best_score",
    "bootstrap_mean_ci",
    "chain_metrics",
    "classify_attempt",
    "clustered_mean",
    "clustered_proportion",
    "cohens_dz",
    "compare_arms",
    "compare_tallies",
    "effective_score",
    "fault_of",
    "format_p",
    "has_error",
    "headline_units",
    "holm",
    "is_attempted",
    "is_errored",
    "is_missing",
    "levels_in_order",
    "mcnemar_exact",
    "mean_ci",
    "metrics_to_dict",
    "normalise_weights",
    "pass_at_k",
    "pass_hat_k",
    "pass_k_over_tasks",
    "proportion",
    "sign_flip_interval",
    "sign_flip_test",
    "success",
    "surrender_calibration",
    "t_cdf",
    "t_quantile",
    "task_differences",
    "task_mean_interval",
    "tasks_needed",
    "to_jsonable",
    "tool_call_stats",
    "trend_over",
    "wilson_interval",
]
