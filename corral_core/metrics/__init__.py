"""Pure statistics over plain trial records (stdlib only; never imports the UI or the store).

Definitions (what the README quotes):

- success: status completed, score > pass_threshold (default 0, as in Corral), no error, not
  surrendered.
- analysed trials: attempted (not skipped / cancelled / running) and not assisted by a person;
  assisted trials are reported apart. A missing score counts as 0.
- average_score: mean over tasks of each task's mean score (Corral's definition), t CI across tasks.
- pass@k: mean over tasks of 1 - C(n-c, k)/C(n, k) (unbiased, Chen et al.); pass^k: mean over
  tasks of C(c, k)/C(n, k). Tasks with fewer than k trials are left out and counted.
- rates (success, surrender, error): share of analysed trials with a Wilson 95% CI.
- tool calls: failed = any status other than success.
- chains: per-link success, partial completion (links done in order before the first
  non-success), end-to-end success (every link of an episode succeeded).
- comparisons: paired by (task, trial index); exact McNemar on success, bootstrap on score.
"""

from .arm import (
    ArmMetrics,
    AssistedSummary,
    Resources,
    SurrenderCalibration,
    TaskRow,
    ToolCallStats,
    arm_metrics,
    surrender_calibration,
    tool_call_stats,
)
from .attempt import AttemptStatus, attempt_status, best_score
from .chain import ChainMetrics, EpisodeRow, LinkStats, chain_metrics
from .compare import PairedComparison, compare_arms
from .records import (
    ATTEMPTED_STATUSES,
    EXCLUDED_STATUSES,
    TOOL_STATUSES,
    TRIAL_STATUSES,
    TrialRecord,
    effective_score,
    has_error,
    is_attempted,
    success,
)
from .serialize import metrics_to_dict, to_jsonable
from .stats import (
    Bootstrap,
    Estimate,
    PassK,
    cohens_dz,
    mcnemar_exact,
    mean_ci,
    paired_bootstrap,
    pass_at_k,
    pass_hat_k,
    pass_k_over_tasks,
    proportion,
    t_cdf,
    t_quantile,
    wilson_interval,
)

__all__ = [
    "ATTEMPTED_STATUSES",
    "EXCLUDED_STATUSES",
    "TOOL_STATUSES",
    "TRIAL_STATUSES",
    "ArmMetrics",
    "AssistedSummary",
    "AttemptStatus",
    "Bootstrap",
    "ChainMetrics",
    "EpisodeRow",
    "Estimate",
    "LinkStats",
    "PairedComparison",
    "PassK",
    "Resources",
    "SurrenderCalibration",
    "TaskRow",
    "ToolCallStats",
    "TrialRecord",
    "arm_metrics",
    "attempt_status",
    "best_score",
    "chain_metrics",
    "cohens_dz",
    "compare_arms",
    "effective_score",
    "has_error",
    "is_attempted",
    "mcnemar_exact",
    "mean_ci",
    "metrics_to_dict",
    "paired_bootstrap",
    "pass_at_k",
    "pass_hat_k",
    "pass_k_over_tasks",
    "proportion",
    "success",
    "surrender_calibration",
    "t_cdf",
    "t_quantile",
    "to_jsonable",
    "tool_call_stats",
    "wilson_interval",
]
