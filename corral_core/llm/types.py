"""Plain data the LLM layer hands to agents: settings, results, usage, errors, call context.

Nothing here imports litellm: agents, the store and the TUI can use these types for free.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Literal, cast, get_args

ErrorKind = Literal[
    "connection", "timeout", "rate_limit", "auth", "bad_request", "provider", "replay_divergence", "script"
]
ERROR_KINDS: tuple[str, ...] = get_args(ErrorKind)
DEFAULT_MAX_RETRIES = 4  # transient failures (429, timeout, 5xx) retried per call unless the settings say otherwise

# Keyword arguments completion() sets itself; `extra` may not override them.
RESERVED_PARAMS = frozenset(
    {"model", "messages", "tools", "metadata", "timeout", "max_retries", "api_base", "api_key", "temperature",
     "stream", "num_retries", "max_connections", "requests_per_minute", "tokens_per_minute", "price"}
)


@dataclass
class ModelSettings:
    """Which model to call and how. `api_key_env` names the env var holding the key (read per call)."""

    model: str
    api_base: str | None = None
    api_key_env: str | None = None
    temperature: float = 0.7
    timeout: float = 60.0
    max_retries: int = DEFAULT_MAX_RETRIES
    extra: dict[str, Any] = field(default_factory=dict)
    max_connections: int | None = None  # requests of this model in flight at once, per process; None: no cap
    requests_per_minute: int | None = None  # requests started per minute, per process; None: no limit
    tokens_per_minute: int | None = None  # prompt + completion tokens per minute, per process; None: no limit
    price: tuple[float, float] | None = None  # USD per million (prompt, completion) tokens; None: litellm's price

    def __post_init__(self) -> None:
        if not isinstance(self.model, str) or not self.model.strip():
            raise ValueError("model settings: `model` must be a non-empty model id such as 'openai/gpt-4o-mini' "
                             "or 'scripted/samplemath'.")
        self.temperature = _number(self.model, "temperature", self.temperature, float, "a number such as 0.7")
        self.timeout = _number(self.model, "timeout", self.timeout, float, "seconds, greater than 0")
        self.max_retries = _number(self.model, "max_retries", self.max_retries, int, "a whole number >= 0")
        if self.timeout <= 0:
            raise ValueError(f"model settings for {self.model}: `timeout` must be > 0 seconds, got {self.timeout!r}.")
        if self.max_retries < 0:
            raise ValueError(f"model settings for {self.model}: `max_retries` must be >= 0, got {self.max_retries!r}.")
        if self.max_connections is not None:
            self.max_connections = _number(self.model, "max_connections", self.max_connections, int,
                                           "a whole number >= 1")
            if self.max_connections < 1:
                raise ValueError(f"model settings for {self.model}: `max_connections` must be >= 1, got "
                                 f"{self.max_connections!r}.")
        for name in ("requests_per_minute", "tokens_per_minute"):
            limit = getattr(self, name)
            if limit is not None and (_number(self.model, name, limit, int, "a whole number >= 1") < 1):
                raise ValueError(f"model settings for {self.model}: `{name}` must be >= 1, got {limit!r}.")
        if self.extra is None:
            self.extra = {}
        if not isinstance(self.extra, dict):
            raise ValueError(f"model settings for {self.model}: `extra` must be a mapping of litellm parameters.")
        clash = sorted(RESERVED_PARAMS & set(self.extra or {}))
        if clash:
            raise ValueError(
                f"model settings for {self.model}: extra params {clash} are set by corral-tui itself; "
                "use the dedicated settings (api_base, api_key_env, temperature, timeout, max_retries) instead."
            )


def _number(model: str, name: str, value: Any, kind: type, expected: str) -> Any:
    if isinstance(value, bool):
        raise ValueError(f"model settings for {model}: `{name}` must be {expected}, got {value!r}.")
    try:
        return kind(value)
    except (TypeError, ValueError):
        raise ValueError(f"model settings for {model}: `{name}` must be {expected}, got {value!r}.") from None


@dataclass
class LLMToolCall:
    """One function call the model asked for; `arguments` is the JSON text the model produced."""

    id: str
    name: str
    arguments: str

    def to_dict(self) -> dict[str, str]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}

    def to_message(self) -> dict[str, Any]:
        """The OpenAI `tool_calls` entry for an assistant message built from this call."""
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}


@dataclass
class Usage:
    """Token counts; `a + b` sums them so agents can total a whole trial."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.total_tokens + other.total_tokens,
        )

    def to_dict(self) -> dict[str, int]:
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "total_tokens": self.total_tokens}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Usage:
        data = data or {}
        prompt = int(data.get("prompt_tokens") or 0)
        completion = int(data.get("completion_tokens") or 0)
        total = int(data.get("total_tokens") or 0) or prompt + completion
        return cls(prompt, completion, total)


@dataclass
class LLMResult:
    """What one LLM call returned, already converted from litellm's objects."""

    content: str | None
    tool_calls: list[LLMToolCall]
    usage: Usage
    cost: float | None
    model: str
    duration: float
    retries: int = 0  # transient failures (429, timeout, 5xx) retried before this answer
    retry_wait: float = 0.0  # seconds spent waiting between those attempts
    rate_limit_wait: float = 0.0  # seconds waited for the model's requests/tokens-per-minute budget


class LLMError(Exception):
    """An LLM call failed in a way the agent should report, not crash on.

    `kind` is one of ERROR_KINDS; `message` keeps the provider's own words. `status_code` and
    `error_type` (e.g. "ContextWindowExceededError") are kept when the provider gave them.
    """

    def __init__(self, kind: ErrorKind, message: str, *, status_code: int | None = None,
                 error_type: str | None = None) -> None:
        if kind not in ERROR_KINDS:
            raise ValueError(f"unknown LLMError kind {kind!r}; expected one of {ERROR_KINDS}")
        self.kind = kind
        self.message = message
        self.status_code = status_code
        self.error_type = error_type
        self.retries = 0  # transient failures retried before giving up (set by completion())
        self.retry_wait = 0.0
        self.rate_limit_wait = 0.0  # seconds waited for the requests/tokens-per-minute budget
        super().__init__(message)

    def __repr__(self) -> str:
        return f"LLMError({self.kind!r}, {self.message!r})"

    def __reduce__(self) -> tuple[Any, ...]:  # picklable across processes despite keyword-only fields
        return (_rebuild_error, (self.kind, self.message, self.status_code, self.error_type))


def _rebuild_error(kind: ErrorKind, message: str, status_code: int | None, error_type: str | None) -> LLMError:
    return LLMError(kind, message, status_code=status_code, error_type=error_type)


def shown_turn(turn: object) -> int:
    """An LLM turn as people read it: stored from 0 (replay's key), shown from 1 like iterations."""
    return cast("int", int(turn or 0) + 1)  # type: ignore[call-overload]


@dataclass
class CallContext:
    """Who is calling: lets scripted and replay models pick the right turn for a trial."""

    task_id: str
    trial_index: int = 0
    arm: str = ""
    role: str = "agent"
    turn: int = 0
    benchmark_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"task_id": self.task_id, "trial_index": self.trial_index, "arm": self.arm, "role": self.role,
                "turn": self.turn, "benchmark_id": self.benchmark_id}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CallContext:
        return cls(task_id=str(data.get("task_id") or ""), trial_index=int(data.get("trial_index") or 0),
                   arm=str(data.get("arm") or ""), role=str(data.get("role") or "agent"),
                   turn=int(data.get("turn") or 0), benchmark_id=data.get("benchmark_id"))


def request_digest(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> str:
    """sha256 of the canonical JSON of a request (messages + tools): the key replay checks against.

    `tools=None` and `tools=[]` give the same digest. Agents put this in LLM_REQUEST/LLM_RESPONSE events.
    """
    canonical = json.dumps({"messages": messages, "tools": tools or []}, sort_keys=True,
                           separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()
