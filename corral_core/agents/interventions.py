"""Interventions are hooks: a scripted map (Corral's), a live inbox a person writes to, heartbeats.

    hooks = AgentHooks()
    inbox = InterventionInbox()
    inbox.attach(hooks)                      # BEFORE_ITERATION: pending messages reach the next LLM call
    hooks.register(HookPoint.BEFORE_TASK, create_intervention_hook({"add": "Use the calculator."}))
    hooks.register(HookPoint.BEFORE_ITERATION, every_n_iterations(3, "Check your progress."))
    hooks.register(HookPoint.AFTER_ITERATION, stop_on_repeated_tool_errors(3))
    agent = ReActAgent(model="scripted/samplemath", hooks=hooks)
    ...
    inbox.post("Round the result to two digits.")   # from any thread, while the agent runs
"""

from __future__ import annotations

import itertools
import re
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from corral_core.domain import ToolStatus
from corral_core.events import INBOX_SOURCE as INBOX_SOURCE  # re-exported: its home is the event vocabulary
from corral_core.events import InterventionAppliedEvent, InterventionData, InterventionUndeliveredEvent

from .hooks import AgentHooks, CriticalHookError, HookContext, HookPoint
from .react_parsing import parse_react, strip_actions

INBOX_PREFIX = "Intervention from the operator: "
_ACTION_BLOCK = re.compile(r"<action>.*?</action>\s*(?:<action_input>.*?</action_input>)?", re.DOTALL | re.IGNORECASE)
_hook_ids = itertools.count()


def _emit_applied(ctx: HookContext, text: str, source: str) -> None:
    emit = getattr(ctx.agent, "emit", None)
    if emit is not None:
        emit(InterventionAppliedEvent(data=InterventionData(text=text, source=source, iteration=ctx.iteration)))


def _append(ctx: HookContext, message: dict[str, Any]) -> None:
    add = getattr(ctx.agent, "add_message", None)
    if add is not None and getattr(ctx.agent, "messages", None) is ctx.messages:
        add(message)
    else:
        ctx.messages.append(message)


def create_intervention_hook(intervention_map: dict[str, str],
                             execute_tools: bool = False) -> Callable[[HookContext], None]:
    """Corral's scripted intervention: inject a thought for the tasks in `intervention_map`.

    Register it at BEFORE_TASK. The text becomes an assistant message (for ReAct wrapped in
    <thought>, as if the model had thought it). Its <action> blocks are removed, or, with
    `execute_tools=True`, run through the interface with their observations appended; an action that
    cannot be parsed or whose tool fails raises CriticalHookError, ending the trial as an error.
    """
    interventions = dict(intervention_map)

    def hook(ctx: HookContext) -> None:
        text = interventions.get(ctx.task_id)
        if not text:
            return
        body = _assistant_text(ctx.agent, text, execute_tools)
        _append(ctx, {"role": "assistant", "content": body})
        ctx.metadata["intervention_applied"] = True
        ctx.metadata["intervention_thought"] = text
        _emit_applied(ctx, text, "map")
        if execute_tools:
            _run_actions(ctx, text)

    hook.hook_name = "intervention_map"  # type: ignore[attr-defined]
    return hook


def _assistant_text(agent: Any, text: str, execute_tools: bool) -> str:
    """The intervention as the model's own message: a <thought> for ReAct, actions kept only if run."""
    from .react import ReActAgent

    thought = strip_actions(text)
    if isinstance(agent, ReActAgent) and not thought.lower().startswith("<thought>"):
        thought = f"<thought>{thought}</thought>"
    if not execute_tools:
        return thought
    blocks = _ACTION_BLOCK.findall(text)
    return "\n".join([thought, *blocks]) if blocks else thought


def _run_actions(ctx: HookContext, text: str) -> None:
    reply = parse_react(text)
    broken = [a.error for a in reply.actions if a.error] + [p for p in reply.problems if "action" in p]
    if broken:
        raise CriticalHookError(f"intervention for task {ctx.task_id!r} has an action that cannot run: {broken[0]}")
    for action in reply.actions:
        execute = getattr(ctx.agent, "execute_tool", None)
        if execute is None:
            raise CriticalHookError("intervention with execute_tools=True needs an agent with execute_tool()")
        outcome = execute(action.name, action.arguments or {})
        _append(ctx, {"role": "user", "content": f"Observation: {outcome.text}"})
        if not outcome.ok:
            raise CriticalHookError(
                f"intervention action {action.name!r} for task {ctx.task_id!r} failed: {outcome.text}")


UNDELIVERED_REASON = "the trial ended before its next LLM call"


class InterventionInbox:
    """Messages a person sends to a running agent; each reaches the model before its next LLM call.

    Thread-safe: `post` from the UI thread, the hook runs on the agent's thread at BEFORE_ITERATION.
    Each delivered message is a user message "Intervention from the operator: ...", an
    INTERVENTION_APPLIED event (source "inbox"), and marks the trial as assisted. When the trial
    ends (AFTER_TASK), the inbox closes: messages still waiting are reported as
    INTERVENTION_UNDELIVERED, and later posts are refused, so no message is ever silently lost.
    """

    def __init__(self, prefix: str = INBOX_PREFIX) -> None:
        self.prefix = prefix
        self._pending: deque[str] = deque()
        self._lock = threading.Lock()
        self._closed = False
        self.delivered: list[str] = []

    def post(self, text: str) -> bool:
        """Queue a message for the next LLM call; False (nothing queued) once the trial has ended."""
        text = str(text).strip()
        if not text:
            raise ValueError("an intervention needs some text")
        with self._lock:
            if self._closed:
                return False
            self._pending.append(text)
            return True

    def close(self) -> list[str]:
        """Refuse later posts; returns the messages that were never delivered."""
        with self._lock:
            self._closed = True
            texts = list(self._pending)
            self._pending.clear()
        return texts

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._pending)

    def hook(self, ctx: HookContext) -> None:
        with self._lock:
            texts = list(self._pending)
            self._pending.clear()
        for text in texts:
            _append(ctx, {"role": "user", "content": self.prefix + text})
            ctx.metadata["assisted"] = True
            mark = getattr(ctx.agent, "mark_assisted", None)
            if mark is not None:
                mark()
            _emit_applied(ctx, text, INBOX_SOURCE)
            self.delivered.append(text)

    hook.hook_name = "intervention_inbox"  # type: ignore[attr-defined]
    hook.quiet = True  # type: ignore[attr-defined]  # reports itself through INTERVENTION_APPLIED

    def _on_task_end(self, ctx: HookContext) -> None:
        emit = getattr(ctx.agent, "emit", None)
        for text in self.close():
            if emit is not None:
                emit(InterventionUndeliveredEvent(data=InterventionData(
                    text=text, source=INBOX_SOURCE, iteration=ctx.iteration, reason=UNDELIVERED_REASON)))

    _on_task_end.hook_name = "intervention_inbox"  # type: ignore[attr-defined]
    _on_task_end.quiet = True  # type: ignore[attr-defined]  # reports itself through INTERVENTION_UNDELIVERED

    def attach(self, hooks: AgentHooks, priority: int = 500) -> None:
        """Register at BEFORE_ITERATION; below a TrialController's gate (1000) so posts made while
        paused are delivered when the agent resumes. At AFTER_TASK the inbox closes."""
        hooks.register(HookPoint.BEFORE_ITERATION, self.hook, priority)
        hooks.register(HookPoint.AFTER_TASK, self._on_task_end, priority)


def every_n_iterations(n: int, prompt: str | Callable[[HookContext], str | None], *,
                       source: str = "heartbeat") -> Callable[[HookContext], None]:
    """A BEFORE_ITERATION hook injecting a user message every `n` iterations (CORAL's heartbeat).

    Fires at iterations n, 2n, ... (after n completed iterations). `prompt` may be a callable of the
    context returning the text, or None to skip this time.
    """
    if n < 1:
        raise ValueError(f"every_n_iterations needs n >= 1, got {n!r}")

    def hook(ctx: HookContext) -> None:
        if ctx.iteration == 0 or ctx.iteration % n:
            return
        text = prompt(ctx) if callable(prompt) else prompt
        if not text:
            return
        _append(ctx, {"role": "user", "content": text})
        _emit_applied(ctx, text, source)

    hook.hook_name = f"every_{n}_iterations"  # type: ignore[attr-defined]
    return hook


def stop_on_repeated_tool_errors(max_errors: int, *, consecutive: bool = True) -> Callable[[HookContext], None]:
    """An AFTER_ITERATION hook stopping the agent after `max_errors` failed tool calls.

    With `consecutive` (the default) a successful call resets the count. The reason is kept in
    `metadata["stopped_reason"]`.
    """
    if max_errors < 1:
        raise ValueError(f"stop_on_repeated_tool_errors needs max_errors >= 1, got {max_errors!r}")
    key = f"_tool_errors_{next(_hook_ids)}"

    def hook(ctx: HookContext) -> None:
        count = ctx.metadata.get(key, 0)
        for record in ctx.iteration_data.get("tool_results") or []:
            if record.get("status") == ToolStatus.SUCCESS:
                count = 0 if consecutive else count
            else:
                count += 1
        ctx.metadata[key] = count
        if count >= max_errors:
            ctx.should_continue = False
            ctx.metadata["stopped_reason"] = f"{count} failed tool calls" + (" in a row" if consecutive else "")

    hook.hook_name = f"stop_after_{max_errors}_tool_errors"  # type: ignore[attr-defined]
    return hook
