"""One trial, start to finish: open it on the server, build the agent, run, report, close.

Each trial gets a fresh agent (a reflection agent is reused across one task's trials, since it
learns from them), a `TrialController` and an `InterventionInbox` registered with the run's
`ControlRegistry`, and the spec's scripted hooks. It is reported as TRIAL_STARTED (keyed by the
server's trial id) and TRIAL_FINISHED with the contract's fields; a chain link whose upstream link
failed is reported the same way with status `skipped` and a synthetic id (`sk_...`).
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from corral_core.agents import (
    AGENTS,
    AgentHooks,
    BaseAgent,
    HookPoint,
    InterventionInbox,
    create_intervention_hook,
    every_n_iterations,
    run_trial,
)
from corral_core.agents.breakpoints import BreakpointSet, BreakpointWatch
from corral_core.agents.limits import BenchmarkBudget, UsageLimits
from corral_core.domain import AgentStatus, Decider, Fault, TrialStatus
from corral_core.env.approval import ApprovalDecision, ApprovalRequest
from corral_core.events import (
    Event,
    EventKind,
    EventSink,
    TrialFinishedData,
    TrialFinishedEvent,
    TrialStartedData,
    TrialStartedEvent,
    marks_assisted,
)
from corral_core.llm.callbacks import use_callbacks
from corral_core.llm.types import ModelSettings
from corral_core.runner.live_trials import ControlRegistry
from corral_core.spec import ArmSpec, BenchmarkSpec
from corral_core.tracing import Span, genai_provider, span
from corral_core.trial_result import TrialResult

if TYPE_CHECKING:
    from corral_core.runner.plan import ForkPoint

log = logging.getLogger(__name__)

DEFAULT_TEMPERATURE = 0.7  # litellm's usual default, as ModelSettings has it


class NoPersonGate:
    """`approval: ask` in batch: nobody can answer, so the call is rejected and the trial marked."""

    policy = "ask"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._trials: dict[str, str] = {}

    def request(self, request: ApprovalRequest) -> ApprovalDecision:
        with self._lock:
            self._trials.setdefault(str(request.trial_id), request.tool_name)
        return ApprovalDecision(False, Decider.POLICY, "needs approval, and a batch run has no person to ask")

    def needed(self, trial_id: str) -> str | None:
        """The first confirm-level tool the trial asked for, if it asked."""
        with self._lock:
            return self._trials.pop(trial_id, None)


class AssistTracker:
    """An event sink noting trials a person touched through an approval (user or remote)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._trials: set[str] = set()

    def emit(self, event: Event) -> None:
        if event.kind is EventKind.APPROVAL_DECIDED and marks_assisted(event):
            with self._lock:
                self._trials.add(str(event.trial_id))

    def pop(self, trial_id: str) -> bool:
        with self._lock:
            if trial_id in self._trials:
                self._trials.discard(trial_id)
                return True
            return False


class _TrialInterface:
    """The trial client as the agent sees it, keeping the finishing result, tool time and the first
    failure of the environment under a tool (the agent reads it as a failed call; the trial errors)."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.result: Any = None
        self.tool_duration = 0.0
        self.environment_failure: str | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def execute_tool(self, task_id: str, tool_name: str, arguments: dict[str, Any] | None = None) -> Any:
        response = self._client.execute_tool(task_id, tool_name, arguments)
        call = getattr(response, "tool_call", None)
        if isinstance(call, dict):
            self.tool_duration += float(call.get("duration") or 0.0)
            if call.get("fault") == Fault.ENVIRONMENT and self.environment_failure is None:
                self.environment_failure = str(call.get("error_message") or f"the tool {tool_name} failed")
        elif getattr(response, "fault", None) == Fault.ENVIRONMENT and self.environment_failure is None:
            # no call came back: the environment server itself could not be reached
            self.environment_failure = f"the tool {tool_name} could not be called: {response.error}"
        return response

    def submit_answer(self, task_id: str, answer: str) -> Any:
        self.result = self._client.submit_answer(task_id, answer)
        return self.result

    def surrender_task(self, task_id: str) -> Any:
        self.result = self._client.surrender_task(task_id)
        return self.result


@dataclass
class RunContext:
    """What every trial of one run shares."""

    spec: BenchmarkSpec
    benchmark_id: str
    sink: EventSink
    registry: ControlRegistry
    router_for: Callable[[str], Any]  # task id -> CorralRouter of the server holding it
    stop: threading.Event
    no_person: NoPersonGate | None = None
    assists: AssistTracker = field(default_factory=AssistTracker)
    approval: str | None = None  # sent when opening each trial: the server applies it (or refuses)
    _shared_hooks: list[tuple[HookPoint, Any]] = field(default_factory=list)
    budget: BenchmarkBudget | None = None  # the benchmark's cost/token limits, shared by its trials
    fork: ForkPoint | None = None  # a fork's one trial replays its parent up to here (runner/fork.py)
    breakpoints: BreakpointSet | None = None  # the run's, replaceable while it runs; None: the spec's

    def __post_init__(self) -> None:
        limits = self.spec.limits
        if limits.benchmark_cost is not None or limits.benchmark_tokens is not None:
            self.budget = BenchmarkBudget(limits.benchmark_cost, limits.benchmark_tokens)
        hooks = self.spec.hooks
        if hooks.interventions:
            self._shared_hooks.append((HookPoint.BEFORE_TASK, create_intervention_hook(hooks.interventions)))
        if hooks.heartbeat_every and hooks.heartbeat_prompt:
            self._shared_hooks.append((HookPoint.BEFORE_ITERATION,
                                       every_n_iterations(hooks.heartbeat_every, hooks.heartbeat_prompt)))

    def trial_limits(self) -> UsageLimits | None:
        limits = self.spec.limits
        return UsageLimits(limits.trial_cost, limits.trial_tokens, self.budget) if limits.any else None

    def emit(self, event: Event) -> None:
        """Emit a trial's event, stamped with the run's benchmark."""
        event.benchmark_id = self.benchmark_id
        self.sink.emit(event)

    def hooks(self, controller: Any, inbox: InterventionInbox) -> AgentHooks:
        hooks = AgentHooks()
        controller.attach(hooks)
        inbox.attach(hooks)
        for point, callback in self._shared_hooks:
            hooks.register(point, callback)
        if self.fork is not None:
            self.fork.attach(hooks, inbox)
        return hooks


def model_settings(arm: ArmSpec) -> ModelSettings:
    """How the arm's agent calls its model (the model's temperature, else the agent's, else the default)."""
    model = arm.model
    temperature = model.temperature if model.temperature is not None else arm.agent.temperature
    return ModelSettings(model=model.id, api_base=model.api_base, api_key_env=model.api_key_env,
                         temperature=DEFAULT_TEMPERATURE if temperature is None else temperature,
                         timeout=model.timeout, max_retries=model.max_retries, extra=dict(model.extra),
                         max_connections=model.max_connections, requests_per_minute=model.requests_per_minute,
                         tokens_per_minute=model.tokens_per_minute, price=model.price)


def build_agent(arm: ArmSpec, spec: BenchmarkSpec, hooks: AgentHooks | None, sink: EventSink | None) -> BaseAgent:
    """The arm's agent with its model settings, the spec's surrender flag and the run's sink."""
    model = arm.model
    settings = model_settings(arm)
    if spec.litellm_callbacks:  # here, so trials on Dask workers report to them too
        use_callbacks(spec.litellm_callbacks)
    cls = AGENTS.get(arm.agent.type).factory
    return cls(max_iterations=arm.agent.max_iterations, system_prompt=arm.agent.system_prompt, hooks=hooks,
               enable_surrender=spec.surrender, sink=sink, settings=settings, timeout=model.timeout,
               max_retries=model.max_retries, **arm.agent.options)


def started_data(arm: ArmSpec, index: int, episode_id: str | None) -> TrialStartedData:
    return TrialStartedData(arm=arm.name, trial_index=index, episode_id=episode_id, agent=arm.agent.type,
                            model=arm.model.id, verbosity=arm.verbosity)


def _finished_data(arm: ArmSpec, index: int, episode_id: str | None, **values: Any) -> TrialFinishedData:
    """The TRIAL_FINISHED payload of a TrialResult: `values` over an error's defaults (no time spent)."""
    outcome = {"status": AgentStatus.ERROR, "duration": 0.0, "tool_duration": 0.0, **values}
    return TrialResult("", arm.name, index, episode_id=episode_id, **outcome).finished_data()


def record_of(task_id: str, data: Mapping[str, Any]) -> TrialResult:
    """The metrics record of a TRIAL_FINISHED payload (without tool calls)."""
    return TrialResult.from_mapping({**data, "task_id": task_id, "tool_calls": []})


def execute_trial(ctx: RunContext, arm: ArmSpec, task_id: str, index: int, *, episode_id: str | None = None,
                  inputs: dict[str, str] | None = None, agent: BaseAgent | None = None
                  ) -> tuple[str, TrialFinishedData]:
    """Run one trial; returns (trial id, TRIAL_FINISHED data). Never raises for a failed trial.

    Its `invoke_agent` span holds the whole trial, its creation on the server included, so the trial
    is one trace: the creation request, every LLM call and every tool call the server ran for it."""
    with span(f"invoke_agent {arm.agent.type}", agent_attributes(ctx, arm, task_id, index, None)) as traced:
        return _execute_trial(ctx, arm, task_id, index, traced, episode_id=episode_id, inputs=inputs, agent=agent)


def _execute_trial(ctx: RunContext, arm: ArmSpec, task_id: str, index: int, traced: Span, *,
                   episode_id: str | None, inputs: dict[str, str] | None, agent: BaseAgent | None
                   ) -> tuple[str, TrialFinishedData]:
    spent = ctx.budget.exceeded() if ctx.budget is not None else None
    if spent is not None:  # the benchmark is over its limit: the trials left do not start
        return report_limit(ctx, arm, task_id, index, episode_id, spent)
    meta: dict[str, Any] = {"benchmark_id": ctx.benchmark_id, "arm": arm.name, "trial_index": index,
                            "approval": ctx.approval, **arm.documentation}
    if inputs:
        meta["inputs"] = inputs
    try:
        client = ctx.router_for(task_id).open_trial(task_id, episode_id, **meta)
    except Exception as exc:  # the server refused or is gone: a failed trial, not a crashed run
        traced.fail(Fault.ENVIRONMENT.value, f"could not open a trial on the server: {exc}")
        return fail_trial(ctx, arm, task_id, index, episode_id, f"could not open a trial on the server: {exc}",
                          fault=Fault.ENVIRONMENT)
    trial_id = client.trial_id
    traced.set({"gen_ai.conversation.id": trial_id, "corral.trial_id": trial_id})
    if hasattr(client, "close_on_finish"):  # closed below once it ends: let the submission close it
        client.close_on_finish = True
    started_fields = started_data(arm, index, episode_id)
    if ctx.fork is not None:
        started_fields.update(ctx.fork.started_data())
    ctx.emit(TrialStartedEvent(trial_id=trial_id, task_id=task_id, data=started_fields))
    started = time.perf_counter()
    try:
        try:
            data = _run_opened(ctx, arm, task_id, index, episode_id, client, agent)
        except Exception as exc:  # a bug somewhere below: keep the run going, say what happened
            log.exception("trial %s of %s failed unexpectedly", trial_id, task_id)
            data = _finished_data(arm, index, episode_id, error=f"{type(exc).__name__}: {exc}", fault=Fault.UNKNOWN,
                                  duration=time.perf_counter() - started)
        traced.set({"corral.status": data.get("status"), "corral.fault": data.get("fault"),
                    "corral.score": data.get("score"), "corral.assisted": data.get("assisted"),
                    "gen_ai.usage.input_tokens": data.get("prompt_tokens"),
                    "gen_ai.usage.output_tokens": data.get("completion_tokens")})
        if data.get("error"):
            traced.fail(str(data.get("fault") or TrialStatus.ERROR), str(data["error"]))
    finally:
        try:
            client.close()
        except Exception as exc:
            log.debug("closing trial %s failed: %s", trial_id, exc)
    ctx.emit(TrialFinishedEvent(trial_id=trial_id, task_id=task_id, data=data.copy()))  # data is returned too
    return trial_id, data


def agent_attributes(ctx: RunContext, arm: ArmSpec, task_id: str, index: int, trial_id: str | None
                     ) -> dict[str, Any]:
    """The `invoke_agent` span's attributes (GenAI conventions, then ours); None values are left out."""
    return {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": str(arm.agent.type),
            "gen_ai.provider.name": genai_provider(arm.model.id),
            "gen_ai.request.model": arm.model.id, "gen_ai.conversation.id": trial_id,
            "corral.benchmark_id": ctx.benchmark_id, "corral.arm": arm.name, "corral.verbosity": str(arm.verbosity),
            "corral.task_id": task_id, "corral.trial_id": trial_id, "corral.trial_index": index,
            "corral.approval": ctx.approval or ctx.spec.approval}


def _run_opened(ctx: RunContext, arm: ArmSpec, task_id: str, index: int, episode_id: str | None, client: Any,
                agent: BaseAgent | None) -> TrialFinishedData:
    trial_id = client.trial_id
    controller = ctx.registry.new_controller()
    inbox = InterventionInbox()
    hooks = ctx.hooks(controller, inbox)
    if agent is None:
        agent = build_agent(arm, ctx.spec, hooks, ctx.sink)
    else:
        agent.hooks = hooks
    agent.limits = ctx.trial_limits()
    holding = ctx.registry.hold_on_breakpoints  # a person may set breakpoints while the run goes on
    points = ctx.breakpoints or BreakpointSet(ctx.spec.hooks.breakpoints)
    agent.breakpoints = BreakpointWatch(points, controller.hold if holding else None) \
        if holding or points.points else None
    interface = _TrialInterface(client)
    ctx.registry.register(trial_id, task_id=task_id, arm=arm.name, index=index, controller=controller, inbox=inbox,
                          agent=agent, episode_id=episode_id, time_limit=ctx.spec.timeouts.trial)
    if ctx.stop.is_set():  # the run was stopped while this trial was opening: its cancel_all missed it
        controller.cancel()
    try:
        outcome = run_trial(agent, interface, task_id, verbosity=arm.verbosity, trial_id=trial_id,
                            trial_index=index, arm=arm.name, benchmark_id=ctx.benchmark_id)
    finally:
        timed_out = ctx.registry.unregister(trial_id)
    usage = outcome.usage
    values: dict[str, Any] = dict(
        status=outcome.status, score=outcome.score, answer=outcome.answer,
        surrendered=bool(outcome.surrendered), error=outcome.error, fault=outcome.fault,
        explanation=outcome.explanation,
        iterations=outcome.iterations, prompt_tokens=usage.prompt_tokens, completion_tokens=usage.completion_tokens,
        total_tokens=usage.total_tokens, cost=outcome.cost, duration=outcome.duration,
        tool_duration=interface.tool_duration, assisted=bool(outcome.assisted) or ctx.assists.pop(trial_id),
        llm_retries=agent.llm_retries, llm_retry_wait=round(agent.llm_waits[0], 3),
        rate_limit_wait=round(agent.llm_waits[1], 3),
    )
    if outcome.status == AgentStatus.LIMIT:  # not an error: the limit ended it; the reason goes with the grader's words
        values.update(error=None, explanation="; ".join(t for t in (outcome.error, outcome.explanation) if t))
    state = getattr(interface.result, "state", None) or {}
    if timed_out and outcome.status == AgentStatus.CANCELLED:
        limit = ctx.spec.timeouts.trial or 0
        values.update(status=TrialStatus.TIMEOUT, score=None, fault=Fault.TIMEOUT,
                    error=f"the trial ran longer than its {limit:g} s limit (timeouts.trial) and was cancelled")
    elif state.get("status") == TrialStatus.TIMEOUT:  # the grader overran timeouts.grader: no score
        values.update(status=TrialStatus.TIMEOUT, score=None, error=None, fault=Fault.GRADER)
    elif interface.environment_failure is not None and outcome.status != AgentStatus.CANCELLED:
        # the environment failed under a tool: whatever the agent did next measured the failure, not the agent
        values.update(status=TrialStatus.ERROR, score=None, fault=Fault.ENVIRONMENT,
                    error=f"the environment failed during the trial: {interface.environment_failure}")
    needed = ctx.no_person.needed(trial_id) if ctx.no_person is not None else None
    if needed is not None:
        values.update(status=TrialStatus.ERROR, fault=Fault.ENVIRONMENT,
                    error=f"needs approval: the agent called the confirm-level tool {needed!r}, and `approval: "
                          "ask` has no person to ask in a batch run (use `approval: approve` or `reject`, or run it "
                          "in the TUI)")
    return _finished_data(arm, index, episode_id, **values)


def fail_trial(ctx: RunContext, arm: ArmSpec, task_id: str, index: int, episode_id: str | None,
               error: str, fault: str = Fault.ENVIRONMENT) -> tuple[str, TrialFinishedData]:
    """Report a trial that could not run at all as an error (a synthetic id, `er_...`)."""
    trial_id = "er_" + secrets.token_hex(8)
    ctx.emit(TrialStartedEvent(trial_id=trial_id, task_id=task_id, data=started_data(arm, index, episode_id)))
    data = _finished_data(arm, index, episode_id, error=error, fault=fault)
    ctx.emit(TrialFinishedEvent(trial_id=trial_id, task_id=task_id, data=data.copy()))  # data is returned too
    return trial_id, data


def report_limit(ctx: RunContext, arm: ArmSpec, task_id: str, index: int, episode_id: str | None,
                 reason: str) -> tuple[str, TrialFinishedData]:
    """Report a trial that does not start because the benchmark is over its limit (`lm_...`)."""
    trial_id = "lm_" + secrets.token_hex(8)
    ctx.emit(TrialStartedEvent(trial_id=trial_id, task_id=task_id, data=started_data(arm, index, episode_id)))
    data = _finished_data(arm, index, episode_id, status=TrialStatus.LIMIT, explanation=f"not started: {reason}")
    ctx.emit(TrialFinishedEvent(trial_id=trial_id, task_id=task_id, data=data.copy()))  # data is returned too
    return trial_id, data


def skip_trial(ctx: RunContext, arm: ArmSpec, task_id: str, index: int, episode_id: str | None,
               upstream: list[str]) -> tuple[str, TrialFinishedData]:
    """Report a chain link that cannot run because an upstream link of its round did not succeed."""
    trial_id = "sk_" + secrets.token_hex(8)
    ctx.emit(TrialStartedEvent(trial_id=trial_id, task_id=task_id, data=started_data(arm, index, episode_id)))
    names = ", ".join(upstream)
    data = _finished_data(arm, index, episode_id, status=TrialStatus.SKIPPED,
                          explanation=f"skipped: upstream task {names} did not succeed in this round")
    ctx.emit(TrialFinishedEvent(trial_id=trial_id, task_id=task_id, data=data.copy()))  # data is returned too
    return trial_id, data
