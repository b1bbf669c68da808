"""The seed's `Environment`: one task, its tools, the current trial's state and its workspace.

An environment never lets a tool exception escape: every call becomes a `ToolCall` record. It
enforces risk levels at the tool boundary (`blocked` never runs, `confirm` asks the approval gate)
and scores through `score()`, which may return a float or a `(score, explanation)` pair. A scorer
that raises scores 0 with the error kept as the explanation; a scorer that overruns
`grader_timeout` leaves the trial with status `timeout` and no score.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from abc import ABC, abstractmethod
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from corral_core.deadline import call_with_timeout
from corral_core.domain import Decider, EpisodeStatus, Fault
from corral_core.env.approval import CANCELLED, ApprovalGate, ApprovalRequest, RejectAll
from corral_core.env.records import ToolCall, ToolStatus, tool_statistics, utc_now
from corral_core.tools.base import RichResult, RiskLevel, result_text
from corral_core.tools.result_cap import cap_result
from corral_core.tools.trial_scope import TrialScope, in_trial_scope

if TYPE_CHECKING:
    from corral_core.env.chains import EpisodeStore
    from corral_core.tools import Tool


class TrialFinishedError(RuntimeError):
    """Raised when submitting or surrendering a trial that already ended."""


ScoreResult = float | tuple[float, str]


@dataclass
class TaskState:
    """The state of one trial of a task (Corral's TaskState / CorralState fields, plus ours)."""

    task_id: str
    trial_id: str
    workspace: str | None = None
    status: str = EpisodeStatus.RUNNING  # running | scored | surrendered | timeout
    submitted_answer: Any = None  # as sent: a string, number, boolean or null (Corral scores them all)
    score: float | None = None
    explanation: str | None = None
    surrendered: bool = False
    is_attempted: bool = False
    tool_calls: list[ToolCall] = field(default_factory=list)
    started_at: datetime = field(default_factory=utc_now)
    ended_at: datetime | None = None
    task_prompt: str | list[dict[str, Any]] | None = None
    messages: list[dict[str, Any]] = field(default_factory=list)  # Corral's field; the server sees none
    artifacts: dict[str, Any] = field(default_factory=dict)

    @property
    def feedback(self) -> str | None:
        """Corral's name for the scorer's explanation."""
        return self.explanation

    @feedback.setter
    def feedback(self, value: str | None) -> None:
        self.explanation = value

    @property
    def is_finished(self) -> bool:
        return self.status != EpisodeStatus.RUNNING

    @property
    def duration(self) -> float | None:
        if self.ended_at is None:
            return None
        return (self.ended_at - self.started_at).total_seconds()

    def snapshot(self) -> dict[str, Any]:
        """A JSON-safe view of the trial with the keys Corral's clients read, of every era.

        E2a's TaskState (`task_prompt`, `messages`, `tool_calls`, `feedback`, `env_start_time`,
        `env_end_time`), E2b's CorralState snapshot (`started_at`, `ended_at`, `duration`, `status`,
        `tool_statistics`, ...) and ours (`explanation`, the same text as `feedback`).
        """
        stats = tool_statistics(self.tool_calls)
        started = self.started_at.isoformat()
        ended = self.ended_at.isoformat() if self.ended_at else None
        return {
            "task_id": self.task_id,
            "task_prompt": self.task_prompt,
            "trial_id": self.trial_id,
            "status": self.status,
            "is_attempted": self.is_attempted,
            "submitted_answer": self.submitted_answer,
            "score": self.score,
            "feedback": self.explanation,
            "explanation": self.explanation,
            "surrendered": self.surrendered,
            "workspace": self.workspace,
            "artifacts": dict(self.artifacts),
            "messages": list(self.messages),
            "tool_calls": stats["tool_calls"],
            "started_at": started,
            "ended_at": ended,
            "env_start_time": started,
            "env_end_time": ended,
            "duration": self.duration,
            "tool_statistics": stats,
        }


# Set by `Environment.for_trial` while it constructs a copy: what the copy's base __init__ applies.
_TRIAL_OPTIONS: ContextVar[dict[str, Any] | None] = ContextVar("corral_trial_options", default=None)


class Environment(ABC):
    """Base class of every task environment (seed: "Environment Class").

    A subclass may take any constructor arguments, as in Corral (`MyEnv(task_id, question,
    expected)` calling `super().__init__(task_id, base_work_dir)`): the arguments are remembered, so
    `for_trial` can build an isolated copy for a parallel trial the same way the author built it.
    """

    _init_args: tuple[tuple[Any, ...], dict[str, Any]]
    episode: EpisodeStore | None = None  # the chain round whose outputs this trial shares, if any

    def __new__(cls, *args: Any, **kwargs: Any) -> Environment:
        instance = super().__new__(cls)
        instance._init_args = (args, kwargs)
        return instance

    def __init__(
        self,
        task_id: str,
        base_work_dir: str | Path | None = None,
        fs_manager: Any = None,
        *,
        approval_gate: ApprovalGate | None = None,
        tool_timeout: float | None = None,
        grader_timeout: float | None = None,
        trial_id: str | None = None,
        work_dir: str | Path | None = None,
    ) -> None:
        options = _TRIAL_OPTIONS.get()
        if options is not None:  # a copy built by for_trial: its trial id, workspace, gate and limits
            _TRIAL_OPTIONS.set(None)  # environments this constructor builds in turn are not copies
            approval_gate = options.get("approval_gate", approval_gate)
            tool_timeout = options.get("tool_timeout", tool_timeout)
            grader_timeout = options.get("grader_timeout", grader_timeout)
            trial_id = options.get("trial_id", trial_id)
            work_dir = options.get("work_dir", work_dir)
            self.episode = options.get("episode")
        self.task_id = task_id
        self.fs_manager = fs_manager
        self.tools: dict[str, Tool] = {}
        self.trial_counter = -1
        self.trial_states: dict[str, TaskState] = {}
        self.approval_gate: ApprovalGate = approval_gate or RejectAll()
        self.tool_timeout = tool_timeout
        self.grader_timeout = grader_timeout
        self._owns_base_dir = base_work_dir is None
        self.base_work_dir = Path(base_work_dir) if base_work_dir is not None else None
        self.current_work_dir: str | None = None
        self.state = TaskState(task_id=task_id, trial_id="-1")
        self.reset_state(trial_id, work_dir)

    # --- what subclasses provide -------------------------------------------------------------

    @abstractmethod
    def get_task_prompt(self) -> str | list[dict[str, Any]]:
        """The task description shown to the agent."""

    @abstractmethod
    def score(self) -> ScoreResult:
        """Score `self.state.submitted_answer`: a float in [0, 1] or (score, explanation)."""

    def configure_additional_apps(self) -> str:
        """Set up external services for the current trial; returns a status message."""
        return "No external app/service configuration needed for this trial."

    def hidden_argument_values(self) -> dict[str, Any]:
        """Values for tools' hidden arguments (never shown to, nor taken from, the agent): the
        trial's `work_dir` and `task_id`, and, as in Corral, the environment's `hidden_args` dict."""
        values: dict[str, Any] = {"work_dir": self.current_work_dir, "task_id": self.task_id}
        own = getattr(self, "hidden_args", None)
        if isinstance(own, dict):
            values.update(own)
        return values

    def dependencies(self) -> list[str]:
        """Tasks whose output this task takes as input: from a Corral `task_group` attribute
        (its TaskDefinition's `input_from_tasks`), else none."""
        group = getattr(self, "task_group", None)
        definition = getattr(group, "tasks", {}).get(self.task_id) if group is not None else None
        return list(getattr(definition, "input_from_tasks", None) or [])

    # --- serving -------------------------------------------------------------------------------

    def configure_runtime(self, *, approval_gate: ApprovalGate | None = None, tool_timeout: float | None = None,
                          grader_timeout: float | None = None, episode: EpisodeStore | None = None) -> None:
        """What a server sets on an environment it serves as is (Corral's task routes)."""
        if approval_gate is not None:
            self.approval_gate = approval_gate
        self.tool_timeout = tool_timeout
        self.grader_timeout = grader_timeout
        if episode is not None:
            self.episode = episode
            self.trial_scope.episode_id = episode.episode_id or self.trial_scope.trial_id

    def for_trial(self, trial_id: str, work_dir: str | Path, **options: Any) -> Environment:
        """A fresh environment for one isolated trial: this class constructed again with the
        arguments this instance was built with, in `work_dir`, with `options` (approval_gate,
        tool_timeout, grader_timeout, episode). Override it when construction has side effects
        that a copy must not repeat."""
        args, kwargs = getattr(self, "_init_args", ((self.task_id,), {}))
        token = _TRIAL_OPTIONS.set({**options, "trial_id": trial_id, "work_dir": work_dir})
        try:
            return type(self)(*args, **kwargs)
        finally:
            _TRIAL_OPTIONS.reset(token)

    # --- tools ---------------------------------------------------------------------------------

    def add_tool(self, tool: Tool) -> None:
        self.tools[tool.name] = tool

    def call_tool(self, tool_name: str, arguments: dict[str, Any] | None) -> ToolCall:
        """Run one tool call through validation, risk enforcement and execution; never raises."""
        started = time.perf_counter()
        arguments = dict(arguments) if isinstance(arguments, dict) else {}
        tool = self.tools.get(tool_name)
        if tool is None:
            available = ", ".join(sorted(self.tools)) or "none"
            call = ToolCall(tool_name, arguments, None, ToolStatus.INVALID_TOOL,
                            f"Tool {tool_name} not found. Available tools: {available}")
            return self._record(call, started)
        call = ToolCall(tool_name, arguments, None, ToolStatus.SUCCESS, risk=str(tool.risk.value), render=tool.render)
        hidden = set(tool.hidden_args)
        visible_args = {k: v for k, v in arguments.items() if k not in hidden}
        try:
            args = tool.validate(visible_args)
        except ValueError as exc:
            call.status, call.error_message = ToolStatus.INVALID_ARGS, str(exc)
            return self._record(call, started)
        if not self._allowed(tool, call, visible_args):
            return self._record(call, started)
        if hidden:
            values = self.hidden_argument_values()
            defaults = getattr(tool, "hidden_defaults", {})
            for name in hidden:  # a name the environment does not supply keeps the function's default
                if name in values:
                    args[name] = values[name]
                elif defaults.get(name) is not None:
                    args[name] = defaults[name]
        self._execute(tool, args, call)
        return self._record(call, started)

    def grader_call(self, tool_name: str, arguments: dict[str, Any] | None = None) -> ToolCall:
        """Call a tool for the grader after the agent finished (final-state scoring): validated and
        run in this trial's scope like the agent's calls, so it reads this trial's world, but not one of
        the trial's tool calls and never asking for approval (the grader is the suite author's)."""
        started = time.perf_counter()
        arguments = dict(arguments or {})
        tool = self.tools.get(tool_name)
        if tool is None:
            return ToolCall(tool_name, arguments, None, ToolStatus.INVALID_TOOL,
                            f"Tool {tool_name} not found. Available tools: {', '.join(sorted(self.tools)) or 'none'}")
        call = ToolCall(tool_name, arguments, None, ToolStatus.SUCCESS, risk=str(tool.risk.value))
        try:
            args = tool.validate({k: v for k, v in arguments.items() if k not in set(tool.hidden_args)})
        except ValueError as exc:
            call.status, call.error_message = ToolStatus.INVALID_ARGS, str(exc)
            return call
        values = self.hidden_argument_values()
        args.update({name: values[name] for name in tool.hidden_args if name in values})
        self._execute(tool, args, call)
        call.duration = time.perf_counter() - started
        return call

    def _allowed(self, tool: Tool, call: ToolCall, arguments: dict[str, Any]) -> bool:
        if tool.risk is RiskLevel.BLOCKED:
            call.status = ToolStatus.BLOCKED
            call.error_message = f"Tool {tool.name} is blocked by policy and was not run."
            return False
        if tool.risk is not RiskLevel.CONFIRM:
            return True
        request = ApprovalRequest(self.task_id, self.state.trial_id, tool.name, arguments)
        decision = self.approval_gate.request(request)
        if decision.approved:
            call.approval = "approved"
            return True
        call.approval = decision.decided_by if decision.decided_by in (Decider.TIMEOUT, CANCELLED) else "rejected"
        call.status = ToolStatus.REJECTED
        reason = f": {decision.reason}" if decision.reason else ""
        call.error_message = f"Tool {tool.name} needs approval and was rejected ({decision.decided_by}){reason}."
        return False

    def _execute(self, tool: Tool, args: dict[str, Any], call: ToolCall) -> None:
        scope = self.trial_scope

        def run() -> Any:  # the trial's scope is current in the thread the tool runs in
            with in_trial_scope(scope):
                return tool.execute(**args)

        outcome = call_with_timeout(run, self.tool_timeout, f"tool-{tool.name}")
        if outcome.timed_out:
            call.status = ToolStatus.TIMEOUT
            call.error_message = f"Tool {tool.name} timed out after {self.tool_timeout:g}s."
        elif outcome.error is not None:
            call.status = ToolStatus.EXECUTION_ERROR
            call.error_message = describe_error(outcome.error)
            if getattr(outcome.error, "environment_failure", False):  # the server under the tool failed
                call.fault = Fault.ENVIRONMENT
        else:
            value = outcome.value
            if isinstance(value, RichResult):
                call.content, call.structured_content = value.content or None, value.structured
            call.result = cap_result(value if value is None or isinstance(value, str) else result_text(value))

    def _record(self, call: ToolCall, started: float) -> ToolCall:
        call.duration = time.perf_counter() - started
        self.state.tool_calls.append(call)
        return call

    def tool_statistics(self) -> dict[str, Any]:
        return tool_statistics(self.state.tool_calls)

    # --- what the agent reads ------------------------------------------------------------------

    def tools_guide(self, verbosity: Any = None, style: Any = None) -> str:
        """The text guide of this task's tools at `verbosity` (None means full) and doc `style`."""
        from corral_core.tools import tools_guide

        return tools_guide(self.tools.values(), verbosity, style)

    def task_guide(self, verbosity: Any = None, style: Any = None) -> str:
        """The task prompt followed by the tools guide (Corral's `/guide`)."""
        prompt = self.get_task_prompt()
        if not isinstance(prompt, str):
            prompt = "\n".join(str(p.get("text", "")) for p in prompt if isinstance(p, dict))
        return f"Task: {prompt}\n\n{self.tools_guide(verbosity, style)}"

    def tools_list(self, verbosity: Any = None, style: Any = None) -> list[dict[str, Any]]:
        """The `/tools` entries: OpenAI function format plus Corral E2's name/description/arguments."""
        from corral_core.tools import tools_listing

        return tools_listing(self.tools.values(), verbosity, style)

    def tools_mcp(self, verbosity: Any = None, style: Any = None) -> list[dict[str, Any]]:
        """The tools as MCP tool descriptions (name, description, inputSchema)."""
        from corral_core.tools import parse_verbosity

        level = parse_verbosity(verbosity)
        return [tool.to_mcp(level, style) for tool in self.tools.values()]

    def snapshot(self) -> dict[str, Any]:
        """The current trial's snapshot (`TaskState.snapshot`) with what only the environment
        knows: the task prompt when the state has none yet, and the trial counter."""
        state = self.state
        if state.task_prompt is None:
            try:
                state.task_prompt = self.get_task_prompt()
            except Exception:  # a prompt that cannot be built now must not break a state read
                state.task_prompt = None
        data = state.snapshot()
        data["trial_counter"] = self.trial_counter
        return data

    # --- the trial's end ---------------------------------------------------------------------

    def submit_answer(self, answer: Any) -> float:
        """Record the answer as sent (a string, number, boolean or null, as Corral E2 takes it) and
        score it. Returns the score (0.0 when the grader timed out)."""
        self._ensure_running()
        self.state.submitted_answer = answer
        self.state.is_attempted = True
        score, explanation, timed_out = self._run_scorer()
        self.state.ended_at = utc_now()
        if timed_out:
            self.state.status = EpisodeStatus.TIMEOUT
            self.state.score = None
            self.state.explanation = explanation
            self.on_unscored()
            return 0.0
        self.state.status = EpisodeStatus.SCORED
        self.state.score = score
        if explanation is not None:  # else keep feedback the scorer set on the state itself (Corral style)
            self.state.explanation = explanation
        self.on_scored("" if answer is None else answer if isinstance(answer, str) else json.dumps(answer), score)
        return score

    def on_scored(self, answer: str, score: float) -> None:  # noqa: B027 - optional hook, no-op by default
        """Called after a successful scoring (chained environments publish their output here)."""

    def on_unscored(self) -> None:  # noqa: B027 - optional hook, no-op by default
        """Called when a trial ends without a score (surrender, grader timeout)."""

    def surrender(self) -> float:
        """End the trial as surrendered. Returns the score already set, else 0; the state keeps the
        score it had (null unless the environment set one), as Corral's does."""
        self._ensure_running()
        self.state.surrendered = True
        self.state.is_attempted = True
        self.state.status = EpisodeStatus.SURRENDERED
        self.state.ended_at = utc_now()
        self.on_unscored()
        return self.state.score if self.state.score is not None else 0.0

    def _ensure_running(self) -> None:
        if self.state.is_finished:
            raise TrialFinishedError(
                f"trial {self.state.trial_id} of task {self.task_id} already ended ({self.state.status})"
            )

    def _run_scorer(self) -> tuple[float, str | None, bool]:
        # The grader runs where it can be abandoned: one that never returns cannot hold the trial.
        outcome = call_with_timeout(self.score, self.grader_timeout, f"grader-{self.task_id}")
        if outcome.timed_out:
            return 0.0, f"Grader timed out after {self.grader_timeout:g}s.", True
        if outcome.error is not None:
            return 0.0, f"Scoring failed: {type(outcome.error).__name__}: {outcome.error}", False
        return (*normalize_score(outcome.value), False)

    # --- trials --------------------------------------------------------------------------------

    def reset_state(self, trial_id: str | None = None, work_dir: str | Path | None = None) -> str:
        """Archive the current trial and start a new one; returns the new trial's id."""
        if self.state.trial_id != "-1":
            self.trial_states[self.state.trial_id] = self.state
        self._end_trial_scope()
        self.trial_counter += 1
        new_id = trial_id or str(self.trial_counter)
        episode = getattr(self, "episode", None)
        # what this trial's tools open for it (external MCP sessions), and whose trial it is
        self.trial_scope = TrialScope(new_id, episode.episode_id if episode is not None else None)
        if work_dir is None:
            work_dir = self._trial_work_dir(new_id)
        Path(work_dir).mkdir(parents=True, exist_ok=True)
        self.current_work_dir = str(work_dir)
        self.state = TaskState(task_id=self.task_id, trial_id=new_id, workspace=self.current_work_dir)
        return new_id

    def _trial_work_dir(self, trial_id: str) -> Path:
        if self.base_work_dir is None:
            self.base_work_dir = Path(tempfile.mkdtemp(prefix="corral-work-"))
        return self.base_work_dir / f"{self.task_id}_trial_{trial_id}"

    def _end_trial_scope(self) -> None:
        scope = getattr(self, "trial_scope", None)
        if scope is not None:
            scope.close()

    def get_current_work_dir(self) -> str | None:
        return self.current_work_dir

    def close(self) -> None:
        """End what the trial's tools opened and remove the workspaces this environment created itself."""
        self._end_trial_scope()
        if self._owns_base_dir and self.base_work_dir is not None:
            shutil.rmtree(self.base_work_dir, ignore_errors=True)


def describe_error(exc: BaseException) -> str:
    """A tool's failure in words: its message, or its type when it has none."""
    text = str(exc).strip()
    if isinstance(exc, (SystemExit, KeyboardInterrupt)) or not text:
        return f"{type(exc).__name__}{': ' + text if text else ''} raised by the tool"
    return text


def normalize_score(value: Any) -> tuple[float, str | None]:
    """Turn a scorer's return value into (score in [0, 1], explanation); bad values score 0."""
    explanation: str | None = None
    if isinstance(value, tuple) and len(value) == 2:
        value, explanation = value
        explanation = None if explanation is None else str(explanation)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0.0, f"Scoring failed: the scorer returned {value!r}, not a number in [0, 1]."
    score = float(value)
    if score != score:  # NaN
        return 0.0, "Scoring failed: the scorer returned NaN."
    if score < 0.0 or score > 1.0:
        clamped = min(max(score, 0.0), 1.0)
        note = f"score {score:g} clamped to {clamped:g}"
        return clamped, f"{explanation}; {note}" if explanation else note
    return score, explanation
