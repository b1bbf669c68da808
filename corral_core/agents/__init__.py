"""Agents on litellm: ReAct, native tool calling, planner/executor, reflection; hooks and controls."""

import inspect
from collections.abc import Callable

from corral_core.registry import Registry

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

AGENTS: Registry[type[BaseAgent]] = Registry(
    "agents", "agent type", title="Agents",
    where="a spec's `agent: {type: ..., options: {...}}` and the run form's Agent and + agents fields")


# Constructor arguments the runner sets itself; a spec's `agent.options` may not name them.
RESERVED_AGENT_OPTIONS = frozenset({"model", "max_iterations", "temperature", "hooks", "sink", "settings",
                                    "enable_surrender", "system_prompt", "api_endpoint", "api_key_env",
                                    "timeout", "max_retries", "max_connections", "kwargs", "self"})


def agent_options(cls: type[BaseAgent]) -> dict[str, str]:
    """An agent class's `options:` keys: its constructors' keyword parameters, but objects and
    what the runner sets itself (RESERVED_AGENT_OPTIONS)."""
    found: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if klass is object or not issubclass(klass, BaseAgent):
            continue
        for p in inspect.signature(klass.__init__).parameters.values():
            objects = ("actor", "executor")  # not YAML values
            if p.name in RESERVED_AGENT_OPTIONS or p.name in objects or p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
                continue
            kind = "" if p.annotation is p.empty else p.annotation
            kind = kind if isinstance(kind, str) else getattr(kind, "__name__", str(kind))
            found[p.name] = kind + ("" if p.default is p.empty else f" (default {p.default!r})")
    return found


def agent_kind(name: str, *, doc: str) -> Callable[[type[BaseAgent]], type[BaseAgent]]:
    """Decorator: register an agent class as `agent: {type: name}`, its constructor's keywords as its options."""

    def register(cls: type[BaseAgent]) -> type[BaseAgent]:
        AGENTS.add(name, cls, doc=doc, options=agent_options(cls))
        return cls

    return register


agent_kind("react", doc="thought / action / observation in Corral's XML tags (ReActAgent)")(ReActAgent)
agent_kind("tool_calling", doc="the model's native function calling (ToolCallingAgent)")(ToolCallingAgent)
agent_kind("planner", doc="a planner model writes plans, a ReAct executor carries them out (LLMPlanner)")(LLMPlanner)
agent_kind("reflection", doc="learns from its earlier attempts at the task, Corral's Reflexion (ReflectionAgent)")(
    ReflectionAgent)

__all__ = [
    "AGENTS",
    "AGENT_STATUSES",
    "RESERVED_AGENT_OPTIONS",
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
    "agent_kind",
    "agent_options",
    "create_intervention_hook",
    "every_n_iterations",
    "run_trial",
    "stop_on_repeated_tool_errors",
]
