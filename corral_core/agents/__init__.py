"""Agents on litellm: ReAct, native tool calling, planner/executor, reflection; hooks and controls."""

from .base import BaseAgent, ToolOutcome
from .hooks import AgentHooks, CriticalHookError, HookContext, HookPoint, TrialCancelled
from .interventions import (
    InterventionInbox,
    create_intervention_hook,
    every_n_iterations,
    stop_on_repeated_tool_errors,
)
from .outcome import AGENT_STATUSES, SURRENDER_SENTINEL, AgentOutcome
from .planner import LLMPlanner
from .react import ReActAgent
from .reflection import ReflectionAgent
from .session import TrialOutcome, run_trial
from .tool_calling import ToolCallingAgent
from .trial_control import TrialController

AGENT_CLASSES: dict[str, type[BaseAgent]] = {  # keys: corral_core.spec.AGENT_TYPES
    "react": ReActAgent,
    "tool_calling": ToolCallingAgent,
    "planner": LLMPlanner,
    "reflection": ReflectionAgent,
}

__all__ = [
    "AGENT_CLASSES",
    "AGENT_STATUSES",
    "SURRENDER_SENTINEL",
    "AgentHooks",
    "AgentOutcome",
    "BaseAgent",
    "CriticalHookError",
    "HookContext",
    "HookPoint",
    "InterventionInbox",
    "LLMPlanner",
    "ReActAgent",
    "ReflectionAgent",
    "ToolCallingAgent",
    "ToolOutcome",
    "TrialCancelled",
    "TrialController",
    "TrialOutcome",
    "create_intervention_hook",
    "every_n_iterations",
    "run_trial",
    "stop_on_repeated_tool_errors",
]
