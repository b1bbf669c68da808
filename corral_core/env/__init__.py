"""Environments: tasks, their tools and trial state, scoring, chains, and suite loading."""

from corral_core.env.approval import ApprovalDecision, ApprovalGate, ApprovalRequest, RejectAll
from corral_core.env.catalog import SuiteCatalog, combine_suites
from corral_core.env.chains import (
    DependencyError,
    EpisodeStore,
    LinkOutput,
    TaskDefinition,
    TaskGroup,
    topological_order,
)
from corral_core.env.environment import Environment, TaskState, TrialFinishedError, normalize_score
from corral_core.env.groups import ChainedEnvironment, suite_from_task_group
from corral_core.env.prebuilt import EnvironmentSuite, load_environments
from corral_core.env.records import ToolCall, ToolStatus, tool_statistics
from corral_core.env.scoring import (
    ScoringContext,
    build_scorer,
    choice,
    exact_match,
    extract_number,
    numeric,
    process_credit,
    regex,
)
from corral_core.env.suite import Suite, SuiteEnvironment, TaskSpec, load_module, load_suite

ServedSuite = Suite | SuiteCatalog | EnvironmentSuite  # what a server can serve

__all__ = [
    "ApprovalDecision",
    "ApprovalGate",
    "ApprovalRequest",
    "ChainedEnvironment",
    "DependencyError",
    "Environment",
    "EnvironmentSuite",
    "EpisodeStore",
    "LinkOutput",
    "RejectAll",
    "ScoringContext",
    "ServedSuite",
    "Suite",
    "SuiteCatalog",
    "SuiteEnvironment",
    "TaskDefinition",
    "TaskGroup",
    "TaskSpec",
    "TaskState",
    "ToolCall",
    "ToolStatus",
    "TrialFinishedError",
    "build_scorer",
    "choice",
    "combine_suites",
    "exact_match",
    "extract_number",
    "load_environments",
    "load_module",
    "load_suite",
    "normalize_score",
    "numeric",
    "process_credit",
    "regex",
    "suite_from_task_group",
    "tool_statistics",
    "topological_order",
]
