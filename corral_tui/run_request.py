"""The run form's values as plain data, and the benchmark spec mapping they stand for."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corral_core.tools.verbosity import VALID_LEVELS

VERBOSITY_LEVELS = VALID_LEVELS  # the levels the run form offers, in order (re-exported for the screens)


@dataclass
class RunRequest:
    """What a person asked for in the run form."""

    suite: str  # suite name
    tasks: list[str] | None = None  # None: every task of the suite
    agent: str = "react"
    max_iterations: int = 10
    model: str | None = None  # None: the suite's scripted model
    api_base: str | None = None  # the model's endpoint (an OpenAI-compatible server, a proxy)
    api_key_env: str | None = None  # the environment variable holding its key (None: the provider's own)
    verbosities: list[str] = field(default_factory=lambda: ["full"])
    trials: int = 1
    parallel: int = 1
    surrender: bool = False
    approval: str = "ask"
    start_paused: bool = False
    breakpoints: list[str] = field(default_factory=list)  # corral_core.agents.breakpoints syntax
    more_models: list[str] = field(default_factory=list)  # further models, each an arm (same API base and key)
    more_agents: list[str] = field(default_factory=list)  # further agent types, each an arm
    kept: dict[str, Any] = field(default_factory=dict)  # spec keys from an opened file the form does not show

    @property
    def models(self) -> list[str | None]:
        """Every model the arms run (None: the suite's scripted model)."""
        return [self.model, *self.more_models] if self.model else [None]

    @property
    def agents(self) -> list[str]:
        return [self.agent, *self.more_agents]

    @property
    def arm_names(self) -> list[str]:
        """The arms' names, as the spec names them (verbosity, then model and agent when they vary)."""
        models, agents = self.models, self.agents
        return ["-".join(part for part in (level, short_model(model) if len(models) > 1 else None,
                                           agent if len(agents) > 1 else None) if part)
                for model in models for agent in agents for level in self.verbosities]

    def spec_data(self, suite_path: Path, approval_timeout: float) -> dict[str, Any]:
        """The benchmark spec mapping (validated by corral_core.spec.spec_from_dict)."""
        data: dict[str, Any] = {
            "name": f"workbench-{self.suite}",
            "suite": str(suite_path),
            "agent": {"type": self.agent, "max_iterations": self.max_iterations},
            "arms": self._arms(),
            "trials_per_task": self.trials,
            "parallel": self.parallel,
            "surrender": self.surrender,
            "approval": self.approval,
            "timeouts": {"approval": approval_timeout},
        }
        if self.model:
            data["model"] = self._model(self.model)
        if self.tasks:
            data["tasks"] = list(self.tasks)
        if self.breakpoints:
            data["hooks"] = {"breakpoints": list(self.breakpoints)}
        for key, value in self.kept.items():  # an opened file's other keys, as it wrote them
            if key in ("hooks", "timeouts") and isinstance(value, dict):
                value = {**data.get(key, {}), **value}
            data[key] = value
        return data

    def _model(self, model_id: str) -> str | dict[str, Any]:
        settings = {key: value for key, value in (("api_base", self.api_base), ("api_key_env", self.api_key_env))
                    if value}
        return {"id": model_id, **settings} if settings else model_id

    def _arms(self) -> list[dict[str, Any]]:
        """One arm per verbosity level, and per model and agent when the form names several: only the
        varying keys are written, so the spec names each arm by them (`brief-gpt-4o-planner`)."""
        models, agents = self.models, self.agents
        if len(models) == 1 and len(agents) == 1:
            return [{"name": level, "verbosity": level} for level in self.verbosities]
        arms = []
        for model in models:
            for agent in agents:
                for level in self.verbosities:
                    arm: dict[str, Any] = {"verbosity": level}
                    if len(models) > 1 and model is not None:
                        arm["model"] = self._model(model)
                    if len(agents) > 1:
                        arm["agent"] = {"type": agent, "max_iterations": self.max_iterations}
                    arms.append(arm)
        return arms


def short_model(model_id: str | None) -> str | None:
    """A model id's last part, as the spec names arms by it (`openai/gpt-4o` -> `gpt-4o`)."""
    if model_id is None:
        return None
    return model_id.rstrip("/").rsplit("/", 1)[-1].removesuffix(".yaml").removesuffix(".script")


def split_list(text: str) -> list[str]:
    """'a, b  c' -> ['a', 'b', 'c'] (commas or spaces), without duplicates."""
    parts = [part.strip() for part in text.replace(",", " ").split()]
    return list(dict.fromkeys(part for part in parts if part))


def parse_verbosities(text: str) -> list[str]:
    """The arms' verbosity levels from a comma list; unknown levels raise ValueError naming them."""
    levels = [level.lower() for level in split_list(text)] or ["full"]
    unknown = [level for level in levels if level not in VERBOSITY_LEVELS]
    if unknown:
        raise ValueError(f"unknown verbosity level {', '.join(unknown)}; use: {', '.join(VERBOSITY_LEVELS)}")
    return levels


def parse_count(text: str, what: str, minimum: int = 1, maximum: int = 10_000) -> int:
    try:
        value = int(text.strip() or minimum)
    except ValueError:
        raise ValueError(f"{what} must be a whole number, not {text!r}") from None
    if not minimum <= value <= maximum:
        raise ValueError(f"{what} must be between {minimum} and {maximum}, not {value}")
    return value


def remember(request: RunRequest, path: Path) -> None:
    """Keep the run form's values for the next start of the workbench (best effort: a file that
    cannot be written only means the form starts with its defaults)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(dataclasses.asdict(request), indent=1), encoding="utf-8")
    except OSError:
        pass


def remembered(path: Path) -> RunRequest | None:
    """The run form's values kept by `remember` (None: none kept, or not readable as such)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        names = {f.name for f in dataclasses.fields(RunRequest)}
        return RunRequest(**{key: value for key, value in data.items() if key in names})
    except (OSError, ValueError, TypeError):
        return None
