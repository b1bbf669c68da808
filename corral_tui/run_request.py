"""The run form's values as plain data, and the benchmark spec mapping they stand for."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corral_core.tools.verbosity import VALID_LEVELS as VERBOSITY_LEVELS


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

    def spec_data(self, suite_path: Path, approval_timeout: float) -> dict[str, Any]:
        """The benchmark spec mapping (validated by corral_core.spec.spec_from_dict)."""
        data: dict[str, Any] = {
            "name": f"workbench-{self.suite}",
            "suite": str(suite_path),
            "agent": {"type": self.agent, "max_iterations": self.max_iterations},
            "arms": [{"name": level, "verbosity": level} for level in self.verbosities],
            "trials_per_task": self.trials,
            "parallel": self.parallel,
            "surrender": self.surrender,
            "approval": self.approval,
            "timeouts": {"approval": approval_timeout},
        }
        if self.model:
            settings = {key: value for key, value in (("api_base", self.api_base), ("api_key_env", self.api_key_env))
                        if value}
            data["model"] = {"id": self.model, **settings} if settings else self.model
        if self.tasks:
            data["tasks"] = list(self.tasks)
        if self.breakpoints:
            data["hooks"] = {"breakpoints": list(self.breakpoints)}
        return data


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
