"""What the server holds: environments per task (Corral's routes) and per trial runtime (ours).

Two kinds of *targets* answer the same read/act operations:

- `TaskSlot`: Corral's "one current trial per task". Its environment is created on first use and
  reset after every submit or surrender, so the next trial starts implicitly (ids "0", "1", ...).
  A lock per task serialises the actions on it (Corral had none).
- `TrialRuntime`: one isolated trial (`tr_` + 16 hex) with its own environment and workspace,
  opened with POST /tasks/{id}/trials, finalised in place and queryable until DELETE.

Reads take no lock (they only look at state that actions replace atomically); actions do.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import shutil
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corral_core.domain import ToolStatus
from corral_core.env import Environment, EpisodeStore, ServedSuite, TrialFinishedError
from corral_core.env.approval import ApprovalGate, StricterGate, is_stricter, policy_of
from corral_core.events import (
    NULL_SINK,
    TELEMETRY_KINDS,
    Event,
    EventSink,
    ToolCallData,
    ToolCallExecutedEvent,
    ToolCallRequestedData,
    ToolCallRequestedEvent,
    TrialClosedData,
    TrialClosedEvent,
    TrialOpenedData,
    TrialOpenedEvent,
)
from corral_core.safetext import clean
from corral_core.server.approvals import EventingGate, QueueGate
from corral_core.tools import Tool
from corral_core.tracing import span

log = logging.getLogger(__name__)

ARCHIVE_LIMIT = 1000  # finished-trial snapshots kept per task (oldest dropped first)
_SLUG = re.compile(r"[^A-Za-z0-9_.-]+")
# The server's own telemetry (events.TELEMETRY_KINDS): a host that wants it (a monitor, a test) asks with
# create_app(telemetry=True), the default; the runner's embedded servers don't.


class NotFoundError(LookupError):
    """Unknown task, trial, episode or approval: HTTP 404 with this message."""


class ConflictError(RuntimeError):
    """The request contradicts the trial's state (e.g. it already ended): HTTP 409."""


class DocumentationViewError(ValueError):
    """A trial asked for a documentation variant the suite does not have, or unknown components: HTTP 422."""

    def __init__(self, message: str, key: str, value: Any) -> None:
        super().__init__(message)
        self.key = key
        self.value = value


class TaskSlot:
    """The task routes' current trial of one task."""

    reset_after_finish = True
    benchmark_id: str | None = None
    verbosity: str | None = None

    def __init__(self, runtime: ServerRuntime, task_id: str) -> None:
        self.runtime = runtime
        self.task_id = task_id
        self.lock = threading.Lock()
        self._create_lock = threading.Lock()
        self._env: Environment | None = None

    @property
    def env(self) -> Environment:
        env = self._env
        if env is None:
            with self._create_lock:
                if self._env is None:
                    self._env = self.runtime.new_task_route_env(self.task_id)
                env = self._env
        return env

    @property
    def env_if_created(self) -> Environment | None:
        return self._env

    @property
    def trial_id(self) -> str:
        return self.env.state.trial_id


@dataclass(eq=False)
class TrialRuntime:
    """One isolated trial."""

    trial_id: str
    task_id: str
    env: Environment
    workspace: str
    episode_id: str | None = None
    benchmark_id: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    verbosity: str | None = None  # the level its MCP endpoint lists tools at, when opened with one
    reset_after_finish = False


Target = TaskSlot | TrialRuntime


class ServerRuntime:
    """Environments, trial runtimes, episodes and finished-trial archives of one server."""

    def __init__(
        self,
        suite: ServedSuite,
        *,
        gate: ApprovalGate,
        sink: EventSink | None = None,
        base_work_dir: Path | None = None,
        tool_timeout: float | None = None,
        grader_timeout: float | None = None,
        telemetry: bool = True,
    ) -> None:
        self.suite = suite
        self.telemetry = telemetry  # emit TELEMETRY_KINDS (the host chooses; no reader in the engine needs them)
        self.gate = gate
        self.sink = None if sink is None or sink is NULL_SINK else sink
        self.tool_timeout = tool_timeout
        self.grader_timeout = grader_timeout
        self.owns_work_dir = base_work_dir is None
        self._base_work_dir = None if base_work_dir is None else Path(base_work_dir)
        self.task_ids = list(suite.task_ids)
        self.slots: dict[str, TaskSlot] = {tid: TaskSlot(self, tid) for tid in self.task_ids}
        self.trials: dict[str, TrialRuntime] = {}
        self.episodes: dict[str, EpisodeStore] = {}
        self._archives: dict[str, OrderedDict[str, dict[str, Any]]] = {tid: OrderedDict() for tid in self.task_ids}
        self._registry_lock = threading.Lock()
        # Corral's task routes share upstream outputs across rounds, like its TaskGroup did; a link
        # whose latest trial ends unscored withdraws its output (SuiteEnvironment.on_unscored).
        self._task_route_episode = EpisodeStore("task-routes") if suite.chained else None
        self._closed = False

    @property
    def base_work_dir(self) -> Path:
        """Where workspaces go; the default temporary directory is made on first use only."""
        with self._registry_lock:
            if self._base_work_dir is None:
                self._base_work_dir = Path(tempfile.mkdtemp(prefix="corral-server-"))
            self._base_work_dir.mkdir(parents=True, exist_ok=True)
            return self._base_work_dir

    @property
    def base_work_dir_if_created(self) -> Path | None:
        return self._base_work_dir

    # --- events --------------------------------------------------------------------------------

    def emit(self, event: Event) -> None:
        if self.sink is not None and (self.telemetry or event.kind not in TELEMETRY_KINDS):
            self.sink.emit(event)

    def _gate_for(self, benchmark_id: str | None, approval: str | None = None) -> ApprovalGate:
        gate = self.gate if approval is None else StricterGate(self.gate, approval)
        return EventingGate(gate, self.sink or NULL_SINK, benchmark_id)

    @property
    def approval_policy(self) -> str:
        """How this server decides confirm-level tools: reject, approve or ask."""
        return policy_of(self.gate)

    def _check_asked_policy(self, approval: str | None) -> str | None:
        """The policy a client asked for (auto means approve); 409 if it is looser than the server's."""
        if approval is None:
            return None
        asked = "approve" if approval == "auto" else approval
        own = self.approval_policy
        if is_stricter(own, asked):
            raise ConflictError(
                f"This server's approval policy is {own!r}, stricter than the {asked!r} the run asked for; a "
                "run may make a server stricter for its trials, never looser. Restart the server with "
                "another --approve, or change the spec's `approval`."
            )
        return asked

    # --- lookups -------------------------------------------------------------------------------

    def slot(self, task_id: str) -> TaskSlot:
        slot = self.slots.get(task_id)
        if slot is None:
            raise NotFoundError(_unknown_task(task_id, self.task_ids))
        return slot

    def trial(self, trial_id: str) -> TrialRuntime:
        runtime = self.trials.get(trial_id)
        if runtime is None:
            raise NotFoundError(
                f"Trial not found: {trial_id!r}. Open one with POST /tasks/{{task_id}}/trials; "
                "a closed trial (DELETE /trials/{trial_id}) is gone."
            )
        return runtime

    # --- environments ----------------------------------------------------------------------------

    def new_task_route_env(self, task_id: str) -> Environment:
        return self.suite.create_environment(
            task_id,
            work_dir=None,
            episode=self._task_route_episode,
            base_work_dir=self.base_work_dir / "task-routes",
            approval_gate=self._gate_for(None),
            tool_timeout=self.tool_timeout,
            grader_timeout=self.grader_timeout,
        )

    def open_trial(self, task_id: str, *, episode_id: str | None = None, benchmark_id: str | None = None,
                   meta: dict[str, Any] | None = None, inputs: dict[str, str] | None = None,
                   approval: str | None = None, variant: str | None = None,
                   components: list[str] | None = None) -> TrialRuntime:
        """Open a trial runtime. `inputs` (upstream task id -> output) seeds the episode with links
        finished elsewhere (a resumed chain round); outputs already in the episode are kept.
        `approval` is the run's policy for confirm-level tools, applied when stricter than ours.
        `variant` and `components` choose the documentation its tools show (Suite.view)."""
        self.slot(task_id)  # 404 for an unknown task
        approval = self._check_asked_policy(approval)
        shown = self._documented_tools(task_id, variant, components)
        if self._closed:
            raise ConflictError("The server is shutting down; no new trials.")
        trial_id = "tr_" + secrets.token_hex(8)
        episode = None
        if episode_id is not None:
            with self._registry_lock:
                episode = self.episodes.setdefault(episode_id, EpisodeStore(episode_id))
            for upstream, output in (inputs or {}).items():
                if episode.output(upstream) is None:
                    episode.record(upstream, output, None)
        workspace = self.base_work_dir / "trials" / f"{_slug(task_id)}_{trial_id}"
        env = self.suite.create_environment(
            task_id,
            work_dir=workspace,
            episode=episode,
            trial_id=trial_id,
            approval_gate=self._gate_for(benchmark_id, approval),
            tool_timeout=self.tool_timeout,
            grader_timeout=self.grader_timeout,
        )
        for tool in shown:  # the same tools (functions, sessions), shown with the trial's documentation
            env.tools[tool.name] = tool
        runtime = TrialRuntime(trial_id, task_id, env, str(env.get_current_work_dir() or workspace),
                               episode_id, benchmark_id, dict(meta or {}))
        with self._registry_lock:
            if self._closed:
                env.close()
                raise ConflictError("The server is shutting down; no new trials.")
            self.trials[trial_id] = runtime
        self.emit(TrialOpenedEvent(trial_id=trial_id, task_id=task_id, benchmark_id=benchmark_id, data=TrialOpenedData(
            episode_id=episode_id, workspace=runtime.workspace, meta=runtime.meta)))
        return runtime

    def _documented_tools(self, task_id: str, variant: str | None, components: list[str] | None) -> list[Tool]:
        if variant is None and components is None:
            return []
        try:
            return self.suite.tools_for(task_id, variant, components)
        except ValueError as exc:
            key, value = ("components", components) if "component" in str(exc) else ("variant", variant)
            raise DocumentationViewError(str(exc), key, value) from None

    def close_trial(self, trial_id: str) -> TrialRuntime:
        with self._registry_lock:
            runtime = self.trials.pop(trial_id, None)
        if runtime is None:
            raise NotFoundError(f"Trial not found: {trial_id!r} (never opened, or already closed).")
        self._dispose(runtime)
        return runtime

    def _dispose(self, runtime: TrialRuntime) -> None:
        # Wait briefly for an action in flight; a stuck tool must not stop a close.
        acquired = runtime.lock.acquire(timeout=2.0)
        try:
            runtime.env.close()
            if self.owns_work_dir:
                _remove_tree(runtime.workspace)
        except Exception:
            log.exception("closing trial %s failed", runtime.trial_id)
        finally:
            if acquired:
                runtime.lock.release()
        self.emit(TrialClosedEvent(trial_id=runtime.trial_id, task_id=runtime.task_id,
                                   benchmark_id=runtime.benchmark_id, data=TrialClosedData()))

    def close_episode(self, episode_id: str) -> None:
        with self._registry_lock:
            if self.episodes.pop(episode_id, None) is None:
                raise NotFoundError(f"Episode not found: {episode_id!r}.")

    # --- operations shared by both kinds of target ---------------------------------------------

    def execute(self, target: Target, tool_name: str, arguments: dict[str, Any],
                trace: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Run one tool call; the hot path, so it does little besides the call itself. `trace`: the
        caller's trace context (HTTP headers, an MCP `_meta`), the parent of the `execute_tool` span."""
        with span(f"execute_tool {tool_name}", {"gen_ai.operation.name": "execute_tool",
                                                "gen_ai.tool.name": tool_name, "gen_ai.tool.type": "function",
                                                "corral.task_id": target.env.task_id,
                                                "corral.trial_id": target.env.state.trial_id}, parent=trace) as traced:
            result = self._execute(target, tool_name, arguments)
            traced.set({"corral.tool.status": result.get("status"),
                        "corral.risk": result.get("risk"), "corral.approval": result.get("approval"),
                        "corral.tool.duration": result.get("duration")})
            if result.get("status") != ToolStatus.SUCCESS:
                traced.fail(str(result.get("status")), result.get("error_message"))
        return result

    def _execute(self, target: Target, tool_name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        with target.lock:
            env = target.env
            state = env.state
            if state.is_finished:
                raise ConflictError(_finished(env.task_id, state.trial_id, state.status))
            trial_id = state.trial_id
            if self.sink is not None and self.telemetry:
                tool = env.tools.get(tool_name)
                self.emit(ToolCallRequestedEvent(
                    trial_id=trial_id, task_id=env.task_id, benchmark_id=target.benchmark_id,
                    data=ToolCallRequestedData(tool_name=tool_name, arguments=arguments,
                                               risk=tool.risk.value if tool is not None else None)))
            call = env.call_tool(tool_name, arguments)
        # a tool's result or error may echo a secret (a backend answering with the request's headers):
        # masked here, before the agent, the events or the execute_tool span see it
        result: ToolCallData = clean(call.to_dict())
        if self.sink is not None and self.telemetry:
            self.emit(ToolCallExecutedEvent(trial_id=trial_id, task_id=env.task_id, benchmark_id=target.benchmark_id,
                                            data=result))
        return dict(result)

    def finish(self, target: Target, answer: Any, *, surrender: bool) -> dict[str, Any]:
        """Submit or surrender; answers with the id of the trial that just ended (Corral: the next)."""
        with target.lock:
            env = target.env
            state = env.state
            if state.is_finished:
                raise ConflictError(_finished(env.task_id, state.trial_id, state.status))
            try:
                score = env.surrender() if surrender else env.submit_answer(answer)
            except TrialFinishedError as exc:
                raise ConflictError(str(exc)) from None
            snapshot = env.snapshot()
            finished_id = state.trial_id
            self._archive(env.task_id, finished_id, snapshot)
            if target.reset_after_finish:
                env.reset_state()
                env.trial_states.pop(finished_id, None)  # the server's archive keeps it (bounded)
        return {
            "score": float(score),
            "state": snapshot,
            "trial_id": finished_id,
            "surrendered": bool(state.surrendered),
            "explanation": state.explanation,
        }

    def configure(self, target: Target) -> dict[str, Any]:
        with target.lock:
            env = target.env
            status = env.configure_additional_apps()
            return {"status": str(status), "task_id": env.task_id, "trial_id": env.state.trial_id}

    @staticmethod
    def status(target: Target) -> dict[str, Any]:
        env = target.env
        state = env.state
        return {
            "is_attempted": state.is_attempted,
            "score": state.score,
            "submitted_answer": state.submitted_answer,
            "tool_statistics": env.tool_statistics(),
            "trial_id": state.trial_id,
        }

    # --- finished trials -------------------------------------------------------------------------

    def _archive(self, task_id: str, trial_id: str, snapshot: dict[str, Any]) -> None:
        with self._registry_lock:
            archive = self._archives[task_id]
            archive[trial_id] = snapshot
            archive.move_to_end(trial_id)
            while len(archive) > ARCHIVE_LIMIT:
                archive.popitem(last=False)

    def finished_trials(self, task_id: str) -> dict[str, dict[str, Any]]:
        self.slot(task_id)
        with self._registry_lock:
            return dict(self._archives[task_id])

    def trial_snapshot(self, task_id: str, trial_id: str) -> dict[str, Any]:
        """A finished trial of the task, its current task-route trial, or one of its open runtimes."""
        slot = self.slot(task_id)
        with self._registry_lock:
            snapshot = self._archives[task_id].get(trial_id)
        if snapshot is not None:
            return snapshot
        env = slot.env_if_created
        if env is not None and env.state.trial_id == trial_id:
            return env.snapshot()
        runtime = self.trials.get(trial_id)
        if runtime is not None and runtime.task_id == task_id:
            return runtime.env.snapshot()
        raise NotFoundError(f"Trial not found: {trial_id!r} of task {task_id!r}.")

    def last_score(self, task_id: str) -> dict[str, Any]:
        self.slot(task_id)
        with self._registry_lock:
            archive = self._archives[task_id]
            if not archive:
                raise NotFoundError(f"No trials completed yet for task {task_id!r}.")
            trial_id = next(reversed(archive))
            score = archive[trial_id].get("score")
        return {"task_id": task_id, "trial_id": trial_id, "score": score}

    # --- shutdown ----------------------------------------------------------------------------------

    def begin_shutdown(self) -> None:
        """Reject pending approvals so no request waits on a person while the server stops."""
        if isinstance(self.gate, QueueGate):
            self.gate.close()

    def close(self) -> None:
        """Close every environment and remove the server's own temporary workspaces."""
        self.begin_shutdown()
        with self._registry_lock:
            if self._closed:
                return
            self._closed = True
            runtimes = list(self.trials.values())
            self.trials.clear()
            self.episodes.clear()
        for runtime in runtimes:
            self._dispose(runtime)
        for slot in self.slots.values():
            env = slot.env_if_created
            if env is not None:
                try:
                    env.close()
                except Exception:
                    log.exception("closing the environment of task %s failed", slot.task_id)
        if self.owns_work_dir and self._base_work_dir is not None:
            shutil.rmtree(self._base_work_dir, ignore_errors=True)


def _slug(text: str) -> str:
    return _SLUG.sub("_", text)[:80] or "task"


def _unknown_task(task_id: str, known: list[str]) -> str:
    shown = ", ".join(known[:20]) + (" ..." if len(known) > 20 else "")
    return f"Task not found: {task_id!r}. Available tasks: {shown or 'none'}."


def _finished(task_id: str, trial_id: str, status: str) -> str:
    return (f"Trial {trial_id} of task {task_id!r} already ended ({status}); submit, surrender and tool "
            f"calls need a running trial. Open a new one with POST /tasks/{task_id}/trials.")


def _remove_tree(path: str) -> None:
    """Remove a trial's workspace; most trials leave it empty, and one rmdir is a fraction of rmtree's walk."""
    try:
        os.rmdir(path)
    except OSError:  # not empty (or already gone): the walk
        shutil.rmtree(path, ignore_errors=True)
