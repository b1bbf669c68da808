"""BaseAgent: Corral's agent contract, with an honest lifecycle.

Every agent runs the same skeleton: build the conversation, fire BEFORE_TASK, iterate (BEFORE_ITERATION,
one step, AFTER_ITERATION) up to `max_iterations`, and always fire AFTER_TASK, whatever ended the run.
The result is an `AgentOutcome`; `run()` returns the answer, Corral's "GIVE UP" sentinel on surrender,
and "" otherwise: an error text is never passed off as an answer. Token usage sums every LLM call.
"""

from __future__ import annotations

import json
import logging
from abc import ABC, abstractmethod
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

from corral_core.domain import Fault, ToolStatus
from corral_core.events import (
    AgentFinishedData,
    AgentFinishedEvent,
    Event,
    EventSink,
    HookData,
    HookErrorEvent,
    HookFiredEvent,
    IterationStartedData,
    IterationStartedEvent,
    LLMRequestData,
    LLMRequestEvent,
    LLMResponseData,
    LLMResponseEvent,
    MessageData,
    MessageEvent,
    ToolCallData,
    ToolCallEvent,
)
from corral_core.llm.types import (
    DEFAULT_MAX_RETRIES,
    CallContext,
    LLMError,
    LLMResult,
    ModelSettings,
    Usage,
    request_digest,
)
from corral_core.tracing import genai_provider, span

from .breakpoints import BreakpointWatch
from .hooks import AgentHooks, CriticalHookError, HookContext, HookPoint, TrialCancelled
from .limits import LimitReached, UsageLimits
from .options import flag, positive_int
from .outcome import (
    SURRENDER_SENTINEL,
    AgentOutcome,
    AgentStatus,
    StepResult,
    TrialLedger,
    final_answer,
    is_surrender_reply,
)
from .prompts import EXTRACTOR_PROMPT, SURRENDER_REFUSED, SYSTEM_PROMPT, render

log = logging.getLogger(__name__)


@dataclass
class ToolOutcome:
    """One tool call as the agent saw it: `text` is what goes back to the model."""

    name: str
    arguments: dict[str, Any]
    ok: bool
    status: str
    text: str
    record: dict[str, Any]


class BaseAgent(ABC):
    """Base class of all agents (Corral's constructor and `run` contract).

    `settings` (a ModelSettings) overrides model/api_endpoint/temperature when given; otherwise they
    are built from the arguments, with `**kwargs` as extra LLM parameters.
    """

    llm_role = "agent"  # CallContext.role of the main loop's LLM calls

    def __init__(
        self,
        model: str = "openai/gpt-4o",
        max_iterations: int = 10,
        api_endpoint: str | None = None,
        system_prompt: str | None = None,
        user_prompt: str | None = None,
        extractor_prompt: str | None = None,
        surrender_prompt: str | None = None,
        temperature: float = 0.7,
        hooks: AgentHooks | None = None,
        *,
        enable_surrender: bool = False,
        sink: EventSink | None = None,
        settings: ModelSettings | None = None,
        api_key_env: str | None = None,
        timeout: float = 60.0,
        max_retries: int = DEFAULT_MAX_RETRIES,
        extract_answer: bool = False,
        **kwargs: Any,
    ) -> None:
        max_iterations = positive_int("max_iterations", max_iterations)
        enable_surrender = flag("enable_surrender", enable_surrender)
        extract_answer = flag("extract_answer", extract_answer)
        self.settings = settings or ModelSettings(
            model=model, api_base=api_endpoint, api_key_env=api_key_env, temperature=temperature,
            timeout=timeout, max_retries=max_retries, extra=dict(kwargs))
        self.model = self.settings.model
        self.api_endpoint = self.settings.api_base
        self.temperature = self.settings.temperature
        self.max_iterations = max_iterations
        self.system_prompt = system_prompt
        self.user_prompt = user_prompt
        self.extractor_prompt = extractor_prompt
        self.surrender_prompt = surrender_prompt
        self.hooks = hooks if hooks is not None else AgentHooks()
        self.enable_surrender = enable_surrender
        self.sink = sink
        self.extract_answer = extract_answer
        self.messages: list[dict[str, Any]] = []
        self.outcome: AgentOutcome | None = None
        self._ledger = TrialLedger()
        self.limits: UsageLimits | None = None  # cost/token limits of each trial this agent runs
        self.breakpoints: BreakpointWatch | None = None  # what each trial this agent runs stops at
        self._active_hooks: AgentHooks = self.hooks
        self._emitted = 0
        self._iteration = 0
        self._iterations = 0
        self._nested = False
        self._interface: Any = None
        self._task_id = ""
        self.trial_id: str | None = None
        self.trial_index = 0
        self.arm = ""
        self.benchmark_id: str | None = None
        self.label: str | None = None  # set on nested agents ("executor", "actor") for event readers

    # ----------------------------------------------------------------- Corral API
    @property
    def token_usage(self) -> dict[str, int]:
        """Cumulative token usage of the current (or last) trial."""
        return self._ledger.usage.to_dict()

    @token_usage.setter
    def token_usage(self, value: dict[str, int]) -> None:
        self._ledger.usage = Usage.from_dict(value)

    def get_total_token_usage(self) -> dict[str, int]:
        """{prompt_tokens, completion_tokens, total_tokens} summed over every LLM call of the trial."""
        return self._ledger.usage.to_dict()

    def reset_token_usage(self) -> None:
        self._ledger = TrialLedger()

    def get_llm_response(self, tools: list[dict[str, Any]] | None = None) -> LLMResult:
        """Call the model on the current conversation (main-loop role) and account for it."""
        return self.call_llm(self.messages, tools)

    def run(self, interface: Any, task_id: str, history: list[dict[str, Any]] | None = None,
            task_prompt: str | None = None, examples: Any = None, **kwargs: Any) -> str:
        """Solve `task_id` through `interface`; see `outcome` for how it ended.

        kwargs: `verbosity`, `enable_surrender`, and the trial identity used in events and
        CallContext (`trial_id`, `trial_index`, `arm`, `benchmark_id`, defaulting from the interface).
        """
        self._begin(interface, task_id, kwargs)
        status: AgentStatus = AgentStatus.ERROR
        answer: str | None = None
        error: str | None = None
        fault: str | None = None  # whose fault an error was: provider, environment or agent
        try:
            self.messages = []
            self._emitted = 0
            self._prepare(interface, task_id, history=history, task_prompt=task_prompt, examples=examples,
                          **kwargs)
            self.messages.extend(self._extra_messages)
            self._flush_messages()
            if not self._fire(HookPoint.BEFORE_TASK).should_continue:
                status = AgentStatus.STOPPED
            else:
                result = self._run_body()
                status, answer, error = result.status or AgentStatus.ERROR, result.answer, result.error
                fault = result.fault or Fault.AGENT
                if status == AgentStatus.ANSWERED and self.extract_answer:
                    answer = self._extract(answer or "")
        except TrialCancelled:
            status = AgentStatus.CANCELLED
        except CriticalHookError as exc:
            status, error, fault = AgentStatus.ERROR, f"a hook stopped the trial: {exc}", Fault.AGENT
        except LLMError as exc:  # a replay divergence is the agent asking something else than it did
            status, error = AgentStatus.ERROR, exc.message
            fault = Fault.AGENT if exc.kind == "replay_divergence" else Fault.PROVIDER
        except LimitReached as exc:
            if self._nested:  # the trial's limit: the outer agent ends the trial
                raise
            status, error, answer = AgentStatus.LIMIT, str(exc), exc.reply or self._last_reply()
        except Exception as exc:  # the trial ends as an error; the runner moves on to the next one
            # An environment server's refusal is reported in words; anything else is our bug: keep the traceback.
            from_server = type(exc).__module__ == "corral_core.client"
            log.warning("agent %s failed on task %s: %s", type(self).__name__, task_id, exc, exc_info=not from_server)
            status, error = AgentStatus.ERROR, str(exc) if from_server else f"{type(exc).__name__}: {exc}"
            fault = Fault.ENVIRONMENT if from_server else Fault.AGENT
        finally:
            status, error = self._after_task(status, answer, error)
        if status != AgentStatus.ERROR:
            fault = None
        elif fault is None:  # an AFTER_TASK hook ended it
            fault = Fault.AGENT
        if status not in (AgentStatus.ANSWERED, AgentStatus.LIMIT):  # over its limit: scored on its last reply
            answer = None
        self.outcome = AgentOutcome(status=status, answer=answer, error=error, iterations=self._iterations,
                                    usage=self._ledger.usage, cost=self._ledger.cost,
                                    assisted=self._ledger.assisted, fault=fault)
        if not self._nested:  # a nested agent's end is not the trial's end
            self.emit(AgentFinishedEvent(data=AgentFinishedData(
                status=status, answer=answer, error=error, iterations=self._iterations,
                usage=self._ledger.usage.to_dict(), cost=self._ledger.cost)))
        if status == AgentStatus.ANSWERED:
            return answer or ""
        return SURRENDER_SENTINEL if status == AgentStatus.SURRENDERED else ""

    def on_trial_result(self, task_id: str, outcome: Any) -> None:  # noqa: B027 - optional hook, no-op by default
        """How the trial this agent just ran ended (a `TrialOutcome`: status, score, answer,
        explanation); `run_trial` calls it after submitting or surrendering. Agents that learn
        across trials keep it; the default ignores it."""

    # ----------------------------------------------------------------- for subclasses
    @abstractmethod
    def _prepare(self, interface: Any, task_id: str, *, history: list[dict[str, Any]] | None,
                 task_prompt: str | None, examples: Any, **kwargs: Any) -> None:
        """Build `self.messages` for this task."""

    def _step(self, iteration: int) -> StepResult:
        """One iteration: LLM call, parsing, tools. Subclasses using the default loop override this."""
        raise NotImplementedError

    def _run_body(self) -> StepResult:
        """The iteration loop; ends on a final status, a stop from a hook, or the iteration limit."""
        for i in range(self.max_iterations):
            self._iteration = i
            before = self._fire(HookPoint.BEFORE_ITERATION)
            if not before.should_continue:
                return StepResult(status=AgentStatus.STOPPED)
            self._iterations = i + 1
            self.emit(IterationStartedEvent(
                data=IterationStartedData(iteration=i, **({"agent": self.label} if self.label else {}))))
            step = StepResult(data={"skipped": True}) if before.skip_current_step else self._step(i)
            after = self._fire(HookPoint.AFTER_ITERATION, **step.data)
            if not after.should_continue:
                return StepResult(status=AgentStatus.STOPPED)
            if step.status is not None:
                return step
        return StepResult(status=AgentStatus.ITERATION_LIMIT)

    def system_message(self) -> dict[str, Any]:
        return {"role": "system", "content": self.system_prompt or SYSTEM_PROMPT}

    # ----------------------------------------------------------------- conversation and events
    def conclude(self, reply: str, data: dict[str, Any]) -> StepResult | None:
        """End the run on a deliberate surrender or a "Final Answer:" in a text reply; None: go on.

        A surrender while surrender is off is refused in a message to the model (the run goes on).
        """
        if is_surrender_reply(reply):
            if self.enable_surrender:
                data["surrender_reason"] = reply.strip()
                return StepResult(status=AgentStatus.SURRENDERED, data=data)
            self.add_message({"role": "user", "content": SURRENDER_REFUSED})
            return StepResult(data=data)
        answer = final_answer(reply)
        if answer is not None:
            data["final_answer"] = answer
            return StepResult(status=AgentStatus.ANSWERED, answer=answer, data=data)
        return None

    def add_message(self, message: dict[str, Any]) -> None:
        """Append to the conversation and emit its MESSAGE event."""
        self.messages.append(message)
        self._flush_messages()

    def emit(self, event: Event) -> None:
        """Emit a trial-scoped event through the agent's sink (a no-op without one), stamped with the agent's
        trial, task and benchmark."""
        if self.sink is None:
            return
        event.trial_id, event.task_id, event.benchmark_id = self.trial_id, self._task_id or None, self.benchmark_id
        self.sink.emit(event)

    def mark_assisted(self) -> None:
        """Record that a person steered this trial (the runner reports such trials apart)."""
        self._ledger.assisted = True

    def add_wait_time(self, seconds: float) -> None:
        """Time spent paused by a controller; run_trial leaves it out of the trial duration."""
        self._ledger.wait_seconds += max(0.0, seconds)

    @property
    def wait_seconds(self) -> float:
        return self._ledger.wait_seconds

    @property
    def current_iteration(self) -> int:
        return self._iteration

    def _flush_messages(self) -> None:
        if self._emitted > len(self.messages):  # a hook shortened the conversation
            self._emitted = len(self.messages)
        for message in self.messages[self._emitted:]:
            data = MessageData(role=message.get("role"), content=message.get("content"))
            if message.get("name") is not None:
                data["name"] = message["name"]
            if message.get("tool_calls") is not None:
                data["tool_calls"] = message["tool_calls"]
            if message.get("tool_call_id") is not None:
                data["tool_call_id"] = message["tool_call_id"]
            data["index"] = self._ledger.next_message_index()
            if self.label:
                data["agent"] = self.label
            self.emit(MessageEvent(data=data))
        self._emitted = len(self.messages)

    # ----------------------------------------------------------------- LLM
    def call_llm(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None, *,
                 role: str | None = None, settings: ModelSettings | None = None) -> LLMResult:
        """One accounted LLM call: LLM_REQUEST/LLM_RESPONSE events, per-role turn, usage summed.

        Raises LLMError; `run()` turns it into an "error" outcome.
        """
        from corral_core.llm import completion

        settings = settings or self.settings
        role = role or self.llm_role
        self._flush_messages()
        request = [dict(m) for m in messages]
        turn = self._ledger.next_turn(role)
        digest = request_digest(request, tools)
        self.emit(LLMRequestEvent(data=LLMRequestData(role=role, turn=turn, digest=digest, n_messages=len(request),
                                                      model=settings.model)))
        context = CallContext(task_id=self._task_id, trial_index=self.trial_index, arm=self.arm, role=role,
                              turn=turn, benchmark_id=self.benchmark_id)
        with span(f"chat {settings.model}", {
                "gen_ai.operation.name": "chat", "gen_ai.provider.name": genai_provider(settings.model),
                "gen_ai.request.model": settings.model,
                "gen_ai.request.temperature": settings.temperature, "corral.arm": self.arm,
                "corral.llm.role": role, "corral.llm.turn": turn}, kind="client") as traced:
            try:
                result = completion(settings, request, tools or None, context=context)
            except LLMError as exc:
                self._ledger.count_waits(exc.retries, exc.retry_wait, exc.rate_limit_wait)
                traced.fail(str(exc.error_type or exc.kind), str(exc))
                raise
            traced.set({"gen_ai.response.model": result.model,
                        "gen_ai.usage.input_tokens": result.usage.prompt_tokens,
                        "gen_ai.usage.output_tokens": result.usage.completion_tokens,
                        "corral.llm.retries": result.retries, "corral.cost": result.cost})
        self._ledger.count_waits(result.retries, result.retry_wait, result.rate_limit_wait)
        self._ledger.add(result.usage, result.cost)
        limits = self._ledger.limits
        if limits is not None:  # the response is recorded below either way; the next step is refused
            try:
                limits.charge(result.usage.total_tokens, result.cost, self._ledger.usage.total_tokens,
                              self._ledger.cost)
            except LimitReached as exc:
                exc.reply = result.content  # the reply that crossed the limit is the trial's last word
                self._emit_response(role, turn, digest, result, settings)
                raise
        self._emit_response(role, turn, digest, result, settings)
        if self._ledger.breakpoints is not None:
            self._ledger.breakpoints.after_llm(self, result.content or "", self._ledger.usage.total_tokens,
                                               self._ledger.cost)
        return result

    def _emit_response(self, role: str, turn: int, digest: str, result: LLMResult, settings: ModelSettings) -> None:
        self.emit(LLMResponseEvent(data=LLMResponseData(
            role=role, turn=turn, digest=digest, content=result.content,
            tool_calls=[c.to_dict() for c in result.tool_calls], usage=result.usage.to_dict(),
            cost=result.cost, duration=result.duration, model=result.model or settings.model,
            arm=self.arm, trial_index=self.trial_index, retries=result.retries,
            retry_wait=round(result.retry_wait, 3), rate_limit_wait=round(result.rate_limit_wait, 3))))

    def _last_reply(self) -> str | None:
        """The model's last text in this trial (what a trial stopped by a limit is scored on)."""
        for message in reversed(self.messages):
            if message.get("role") == "assistant" and isinstance(message.get("content"), str):
                return message["content"] or None
        return None

    @property
    def llm_retries(self) -> int:
        """Transient provider failures (429, timeout, 5xx) retried in the current (or last) trial."""
        return self._ledger.llm_retries

    @property
    def llm_waits(self) -> tuple[float, float]:
        """Seconds the current (or last) trial waited (before retries, for the per-minute budgets)."""
        return self._ledger.llm_retry_wait, self._ledger.rate_limit_wait


    # ----------------------------------------------------------------- tools
    def execute_tool(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        """Run a tool through the interface; emits TOOL_CALL and says plainly when it failed.

        The trial's breakpoints are asked right before the call and right after it."""
        watch = self._ledger.breakpoints
        if watch is not None:
            watch.before_tool(self, name, arguments)
        response = self._interface.execute_tool(self._task_id, name, arguments)
        record = getattr(response, "tool_call", None)
        result = getattr(response, "result", None)
        if record is None and isinstance(result, dict) and {"tool_name", "status"} <= set(result):
            record = result  # a Corral server's client puts the whole ToolCall in `result`, even on failure
        if isinstance(record, dict):
            answered = ToolStatus.SUCCESS if response.success else ToolStatus.EXECUTION_ERROR
            status = str(record.get("status") or answered)
            ok = status == ToolStatus.SUCCESS
            if ok:
                text = _as_text(record.get("result"))
            else:
                reason = record.get("error_message") or getattr(response, "error", None) or "no error message"
                text = f"the tool call failed (status: {status}). Error: {reason}"
        else:
            ok = bool(getattr(response, "success", False))
            status = ToolStatus.SUCCESS if ok else ToolStatus.EXECUTION_ERROR
            error = getattr(response, "error", None)
            text = _as_text(result) if ok else \
                f"the tool call could not be made (status: {status}). Error: {error or 'unknown error'}"
            record = {"tool_name": name, "arguments": arguments, "result": text if ok else None,
                      "status": status, "error_message": None if ok else error, "duration": 0.0,
                      "timestamp": datetime.now(UTC).isoformat(), "risk": "safe", "approval": None,
                      "render": "text"}
        data = ToolCallData(**cast(ToolCallData, record))  # the server's ToolCall JSON (env.records.ToolCall)
        data["iteration"] = self._iteration
        self.emit(ToolCallEvent(data=data))
        if watch is not None:
            watch.after_tool(self, name, ok, status, record.get("error_message"))
        return ToolOutcome(name=name, arguments=arguments, ok=ok, status=status, text=text, record=record)

    def tool_listing(self) -> list[dict[str, Any]]:
        """The trial's tools as the server lists them (each with its `risk`)."""
        listing = self._interface.get_available_tools_for_task(self._task_id)
        tools = listing.get("tools", []) if isinstance(listing, dict) else listing
        return [tool for tool in tools or [] if isinstance(tool, dict)]

    # ----------------------------------------------------------------- internals
    def _begin(self, interface: Any, task_id: str, kwargs: dict[str, Any]) -> None:
        ledger = kwargs.pop("_ledger", None)
        self._ledger = ledger if ledger is not None else TrialLedger()
        if ledger is None:
            self._ledger.limits = self.limits
            self._ledger.breakpoints = self.breakpoints
        parent_hooks = kwargs.pop("_parent_hooks", None)
        self._nested = ledger is not None
        self._extra_messages = list(kwargs.pop("_extra_messages", None) or [])
        if parent_hooks is not None:
            from .hooks import ChildHooks

            self._active_hooks = ChildHooks(self.hooks, parent_hooks)
        else:
            self._active_hooks = self.hooks
        self._interface = interface
        self._task_id = task_id
        self.trial_id = kwargs.pop("trial_id", None) or getattr(interface, "trial_id", None)
        self.trial_index = int(kwargs.pop("trial_index", None) or getattr(interface, "trial_index", 0) or 0)
        self.arm = str(kwargs.pop("arm", None) or getattr(interface, "arm", "") or "")
        self.benchmark_id = kwargs.pop("benchmark_id", None) or getattr(interface, "benchmark_id", None)
        if "enable_surrender" in kwargs:
            self.enable_surrender = bool(kwargs.pop("enable_surrender"))
        self._iteration = 0
        self._iterations = 0
        self.outcome = None

    def _fire(self, point: HookPoint, **data: Any) -> HookContext:
        context = HookContext(task_id=self._task_id, agent=self, interface=self._interface, messages=self.messages,
                              iteration=self._iteration, metadata=self._ledger.metadata, iteration_data=data)
        if not self._active_hooks.has_hooks(point):
            return context

        def fired(hook_point: HookPoint, name: str, ctx: HookContext) -> None:
            self._flush_messages()
            self.emit(HookFiredEvent(data=HookData(point=hook_point.value, hook=name, iteration=ctx.iteration,
                                                   should_continue=ctx.should_continue,
                                                   skip_current_step=ctx.skip_current_step)))

        def failed(hook_point: HookPoint, name: str, exc: BaseException) -> None:
            self._flush_messages()
            self.emit(HookErrorEvent(
                data=HookData(point=hook_point.value, hook=name, error=f"{type(exc).__name__}: {exc}")))

        try:
            return self._active_hooks.execute(point, context, on_fired=fired, on_error=failed)
        finally:
            self._flush_messages()

    def _after_task(self, status: AgentStatus, answer: str | None, error: str | None
                    ) -> tuple[AgentStatus, str | None]:
        """Fire AFTER_TASK (every exit path); a hook there may still veto a submission or cancel."""
        try:
            context = self._fire(HookPoint.AFTER_TASK, status=status, answer=answer, error=error)
            if not context.should_continue and status in (AgentStatus.ANSWERED, AgentStatus.SURRENDERED):
                return AgentStatus.STOPPED, error
        except TrialCancelled:
            return AgentStatus.CANCELLED, error
        except CriticalHookError as exc:
            return AgentStatus.ERROR, error or f"a hook stopped the trial: {exc}"
        return status, error

    def _extract(self, answer: str) -> str:
        """Corral's extractor pass (opt-in): a temperature-0 call that keeps only the answer."""
        task = next((m.get("content") for m in self.messages if m.get("role") == "user"), "")
        last = self.messages[-1].get("content") if self.messages else ""
        message = f"The task is to:\n{_as_text(task)}\n\nAnd the answer provided by the model:\n\n{_as_text(last)}"
        prompt = render(self.extractor_prompt or EXTRACTOR_PROMPT, message=message, answer=answer)
        settings = ModelSettings(**{**self.settings.__dict__, "temperature": 0.0})
        try:
            result = self.call_llm([{"role": "user", "content": prompt}], role="extractor", settings=settings)
        except LLMError as exc:
            log.warning("answer extractor failed, keeping the raw answer: %s", exc.message)
            return answer
        return (result.content or "").strip() or answer


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    return str(value)
