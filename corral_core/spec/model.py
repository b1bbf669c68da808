"""The validated shape of a benchmark spec: plain frozen dataclasses (see corral_core.spec)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from corral_core.agents import RESERVED_AGENT_OPTIONS as RESERVED_AGENT_OPTIONS  # the spec's vocabulary
from corral_core.agents.breakpoints import Breakpoint
from corral_core.constants import AGENT_TYPES as AGENT_TYPES  # the spec's vocabulary
from corral_core.env import Suite
from corral_core.env.approval import APPROVAL_POLICIES as APPROVAL_POLICIES  # the spec's vocabulary
from corral_core.llm.types import DEFAULT_MAX_RETRIES

SPEC_KEYS = ("name", "description", "suite", "suites", "agent", "model", "arms", "trials_per_task", "k_values",
             "parallel", "surrender", "pass_threshold", "tasks", "timeouts", "approval", "hooks", "direction",
             "chain", "limits", "executor", "equivalence_margin", "litellm_callbacks")
CHAIN_KEYS = ("weights",)
AGENT_KEYS = ("type", "max_iterations", "temperature", "system_prompt", "options")
MODEL_KEYS = ("id", "api_base", "api_key_env", "temperature", "timeout", "max_retries", "max_connections", "extra",
              "requests_per_minute", "tokens_per_minute", "price")
PRICE_KEYS = ("input", "output")  # USD per million prompt / completion tokens
ARM_KEYS = ("name", "verbosity", "model", "agent", "variant", "components")
TIMEOUT_KEYS = ("trial", "tool", "grader", "approval")
LIMIT_SCOPES = ("trial", "benchmark")
LIMIT_KEYS = ("cost", "tokens")
HOOK_KEYS = ("interventions", "heartbeat", "breakpoints")
HEARTBEAT_KEYS = ("every", "prompt")
DEFAULT_TIMEOUTS = {"trial": 600.0, "tool": 120.0, "grader": 300.0, "approval": 120.0}


@dataclass(frozen=True)
class ModelSpec:
    """Which LLM an arm calls. `temperature` None leaves the agent's (or litellm's) default."""

    id: str
    api_base: str | None = None
    api_key_env: str | None = None
    temperature: float | None = None
    timeout: float = 60.0
    max_retries: int = DEFAULT_MAX_RETRIES  # transient failures (429, timeout, 5xx) retried per LLM call
    extra: dict[str, Any] = field(default_factory=dict)
    max_connections: int | None = None  # requests in flight at once for this model id; None: no cap
    requests_per_minute: int | None = None  # requests started per minute for this model id; None: no limit
    tokens_per_minute: int | None = None  # tokens (prompt + completion) per minute for this model id
    price: tuple[float, float] | None = None  # USD per million (prompt, completion) tokens; None: litellm's

    def to_dict(self) -> dict[str, Any]:
        # max_connections and the per-minute limits are left out: they change how fast a run goes, not its
        # results (nor its digest); a price changes costs, so cost limits: in, but only when set
        price = {"price": {"input": self.price[0], "output": self.price[1]}} if self.price is not None else {}
        return {"id": self.id, "api_base": self.api_base, "api_key_env": self.api_key_env,
                "temperature": self.temperature, "timeout": self.timeout, "max_retries": self.max_retries,
                "extra": dict(self.extra), **price}


@dataclass(frozen=True)
class AgentSpec:
    """Which agent class runs the trials, and its constructor options."""

    type: str = "react"
    max_iterations: int = 10
    temperature: float | None = None
    system_prompt: str | None = None
    options: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "max_iterations": self.max_iterations, "temperature": self.temperature,
                "system_prompt": self.system_prompt, "options": dict(self.options)}


@dataclass(frozen=True)
class ArmSpec:
    """One arm of the sweep: every task runs `trials_per_task` times under these settings."""

    name: str
    verbosity: str
    model: ModelSpec
    agent: AgentSpec
    variant: str | None = None  # a documentation variant of the suites (None: their default)
    components: tuple[str, ...] | None = None  # exactly these documentation components (None: all)

    @property
    def documentation(self) -> dict[str, Any]:
        """What the arm sets of its documentation beyond the level: {variant?, components?}."""
        chosen: dict[str, Any] = {}
        if self.variant is not None:
            chosen["variant"] = self.variant
        if self.components is not None:
            chosen["components"] = list(self.components)
        return chosen

    def to_dict(self) -> dict[str, Any]:
        # variant and components only when set: a spec without them keeps its digest
        return {"name": self.name, "verbosity": self.verbosity, "model": self.model.to_dict(),
                "agent": self.agent.to_dict(), **self.documentation}


@dataclass(frozen=True)
class Timeouts:
    """Seconds; None means no limit. `approval` is how long a `confirm` tool waits for a person."""

    trial: float | None = DEFAULT_TIMEOUTS["trial"]
    tool: float | None = DEFAULT_TIMEOUTS["tool"]
    grader: float | None = DEFAULT_TIMEOUTS["grader"]
    approval: float | None = DEFAULT_TIMEOUTS["approval"]

    def to_dict(self) -> dict[str, float | None]:
        return {"trial": self.trial, "tool": self.tool, "grader": self.grader, "approval": self.approval}


@dataclass(frozen=True)
class Limits:
    """Cost (USD) and token limits per trial and per benchmark; None means no limit."""

    trial_cost: float | None = None
    trial_tokens: int | None = None
    benchmark_cost: float | None = None
    benchmark_tokens: int | None = None

    def to_dict(self) -> dict[str, dict[str, float | int | None]]:
        return {"trial": {"cost": self.trial_cost, "tokens": self.trial_tokens},
                "benchmark": {"cost": self.benchmark_cost, "tokens": self.benchmark_tokens}}

    @property
    def any(self) -> bool:
        return any(v is not None for v in (self.trial_cost, self.trial_tokens, self.benchmark_cost,
                                           self.benchmark_tokens))


@dataclass(frozen=True)
class HooksSpec:
    """Scripted interventions per task (Corral's map), a periodic heartbeat prompt, and breakpoints
    (agents/breakpoints.py: recorded in batch, paused at in the workbench)."""

    interventions: dict[str, str] = field(default_factory=dict)
    heartbeat_every: int | None = None
    heartbeat_prompt: str | None = None
    breakpoints: tuple[Breakpoint, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """What changes results (the digest): breakpoints only pause or record, so they are left out."""
        heartbeat = None if self.heartbeat_every is None else {"every": self.heartbeat_every,
                                                                 "prompt": self.heartbeat_prompt}
        return {"interventions": dict(self.interventions), "heartbeat": heartbeat}


@dataclass(frozen=True)
class BenchmarkSpec:
    """A validated benchmark spec. Build it with `load_spec(path)` or `spec_from_dict(...)`."""

    name: str
    source: str  # the spec file, or "<run form>"
    base_dir: Path
    suite_paths: tuple[Path, ...]
    agent: AgentSpec
    model: ModelSpec
    arms: tuple[ArmSpec, ...]
    trials_per_task: int = 1
    k_values: tuple[int, ...] = (1,)
    parallel: int = 1
    surrender: bool = False
    pass_threshold: float = 0.0
    tasks: tuple[str, ...] | None = None  # the subset asked for; None means every task
    timeouts: Timeouts = field(default_factory=Timeouts)
    approval: str = "reject"
    hooks: HooksSpec = field(default_factory=HooksSpec)
    direction: str = "maximize"  # whether a higher (maximize) or lower headline score is better
    chain_weights: tuple[tuple[str, float], ...] = ()  # (link task id, weight); each chain's sum to 1
    limits: Limits = field(default_factory=Limits)
    executor: str = "local"  # where trials run (runner/executors.py); not part of the digest, like parallel
    equivalence_margin: float | None = None  # TOST margin on score differences (docs/statistics.md)
    litellm_callbacks: tuple[str, ...] = ()  # litellm integrations to report to (llm/callbacks.py); no digest
    description: str = ""
    text: str = ""  # the YAML text as written (for the store and `export`)
    data: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)  # the raw mapping
    suites: tuple[Suite, ...] = field(default=(), compare=False, repr=False)
    content_hashes: tuple[tuple[str, str], ...] = ()  # (file, sha256) of suites, modules, scripts

    @property
    def task_ids(self) -> list[str]:
        """The tasks this spec runs, suite by suite, each suite in dependency order."""
        chosen = set(self.tasks) if self.tasks is not None else None
        return [t for suite in self.suites for t in suite.ordered_task_ids() if chosen is None or t in chosen]

    def suite_of(self, task_id: str) -> Suite:
        for suite in self.suites:
            if task_id in suite.tasks:
                return suite
        raise KeyError(task_id)

    def normalized(self) -> dict[str, Any]:
        """Everything that changes results, in a canonical shape (what the digest hashes)."""
        limits = {"limits": self.limits.to_dict()} if self.limits.any else {}  # unset: digests stay as they were
        return {**limits,
            "name": self.name,
            "suites": [str(p) for p in self.suite_paths],
            "tasks": self.task_ids,
            "arms": [arm.to_dict() for arm in self.arms],
            "trials_per_task": self.trials_per_task,
            "k_values": list(self.k_values),
            "surrender": self.surrender,
            "pass_threshold": self.pass_threshold,
            "timeouts": self.timeouts.to_dict(),
            "approval": self.approval,
            "hooks": self.hooks.to_dict(),
            "content": dict(self.content_hashes),
            # only when set, so the digests of specs written before these keys stay the same
            **({"direction": self.direction} if self.direction != "maximize" else {}),
            **({"chain": {"weights": dict(self.chain_weights)}} if self.chain_weights else {}),
            **({"equivalence_margin": self.equivalence_margin} if self.equivalence_margin is not None else {}),
        }

    @property
    def digest(self) -> str:
        """sha256 of the canonical JSON of `normalized()` (the store's compute_spec_digest)."""
        text = json.dumps(self.normalized(), sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    spec_digest = digest

    @property
    def total_trials(self) -> int:
        return len(self.arms) * len(self.task_ids) * self.trials_per_task

    def with_overrides(self, *, model: str | None = None, parallel: int | None = None, api_base: str | None = None,
                       max_connections: int | None = None, **model_settings: Any) -> BenchmarkSpec:
        """The same spec with every arm on `model` (the CLI's --model), and/or another `parallel`, and/or
        every arm's model at `api_base` (--model-base-url) with at most `max_connections` (--max-connections).

        `model_settings` sets other model keys on every arm's model (temperature, max_retries,
        requests_per_minute, tokens_per_minute, price); `extra` is merged into each model's own extra."""
        data = json.loads(json.dumps(self.data, default=str))
        if model is not None:
            data["model"] = model
            arms = data.get("arms")
            if isinstance(arms, list):
                for arm in arms:
                    if isinstance(arm, dict):
                        arm.pop("model", None)
            elif isinstance(arms, dict):
                arms.pop("model", None)
        if parallel is not None:
            data["parallel"] = parallel
        settings = {k: v for k, v in (("api_base", api_base), ("max_connections", max_connections),
                                      *model_settings.items()) if v is not None}
        if settings:
            _set_model_keys(data, settings)
        from corral_core.spec import spec_from_dict

        spec = spec_from_dict(data, self.base_dir, source=self.source)
        text = self.text if model is None and not settings else yaml.safe_dump(data, sort_keys=False)
        return replace(spec, text=text)


def _set_model_keys(data: dict[str, Any], settings: dict[str, Any]) -> None:
    """Set `settings` on the spec's model and on every arm's own model (a plain id becomes a mapping)."""

    def updated(model: Any) -> Any:
        if isinstance(model, str):
            model = {"id": model}
        if isinstance(model, dict):
            extra = {**(model.get("extra") or {}), **settings["extra"]} if "extra" in settings else None
            return {**model, **settings, **({"extra": extra} if extra is not None else {})}
        return model

    if "model" in data:
        data["model"] = updated(data["model"])
    arms = data.get("arms")
    entries = arms if isinstance(arms, list) else [arms] if isinstance(arms, dict) else []
    for arm in entries:
        if isinstance(arm, dict) and "model" in arm:
            arm["model"] = updated(arm["model"])
