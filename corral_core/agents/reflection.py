"""ReflectionAgent: learns from its own earlier attempts at the same task (Corral's Reflexion).

After each trial `run_trial` hands the agent the trial's result (`on_trial_result`), which it keeps
next to the actor's trajectory. Before the next run of the same task, a reflection call (role
"reflection") turns that trajectory and its own score into a lesson. It never reads the score from
the server's task history when it has its own: with parallel arms or benchmarks on one server, the
task's latest trial is often someone else's. Only an agent driven by `run()` alone (no `run_trial`)
falls back to the server's `get_last_score`. Up to `max_reflections` lessons per task are injected as
a system message; memory is keyed by task id, so lessons never leak across tasks. A failed
reflection call costs the lesson, not the trial.
"""

from __future__ import annotations

import dataclasses
import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from corral_core.domain import AgentStatus
from corral_core.events import (
    HookData,
    HookErrorEvent,
)
from corral_core.llm.types import LLMError

from .base import BaseAgent, _as_text
from .hooks import AgentHooks, HookPoint
from .options import positive_int
from .outcome import StepResult
from .prompts import LESSONS_HEADER, REFLECTION_PROMPT, render
from .react import ReActAgent

log = logging.getLogger(__name__)

_MAX_TRAJECTORY_CHARS = 8000
_MAX_MESSAGE_CHARS = 400
# What a reflection prompt may use. Nothing random or time-dependent: the prompt is part of the request
# digest replay/<benchmark_id> checks, so a run-specific trial id would make every replayed reflection
# diverge. `trial` is the attempt's trial index within its arm (0, 1, ...), the same in every run.
_PROMPT_VARIABLES = ("task_id", "trial", "score", "trajectory")


@dataclass
class Lesson:
    trial_id: str | None
    score: float | None
    text: str


@dataclass
class _Attempt:
    """The actor's last run of a task, and (once run_trial reports it) how that trial ended."""

    messages: list[dict[str, Any]]
    status: str  # the actor's own outcome status
    trial_id: str | None
    trial_index: int
    result: Any = None  # the TrialOutcome run_trial reported


class ReflectionAgent(BaseAgent):
    """Wraps an actor agent (a ReActAgent by default) with reflection across trials of a task."""

    llm_role = "reflection"

    def __init__(self, actor: BaseAgent | None = None, max_reflections: int = 3,
                 reflection_model: str | None = None, *, reflection_prompt: str | None = None,
                 reflection_temperature: float = 0.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        max_reflections = positive_int("max_reflections", max_reflections)
        if isinstance(reflection_temperature, bool) or not isinstance(reflection_temperature, (int, float)):
            raise ValueError(f"reflection_temperature must be a number, got {reflection_temperature!r}")
        if reflection_prompt is not None:  # a placeholder typo fails here, not at the second trial
            if "{{trial_id}}" in reflection_prompt.replace(" ", ""):
                raise ValueError("reflection_prompt uses {{trial_id}}, which differs in every run, so replay could "
                                 "never reproduce the reflection; use {{trial}} (the attempt's trial index).")
            render(reflection_prompt, **dict.fromkeys(_PROMPT_VARIABLES, ""))
        self.actor = actor or ReActAgent(max_iterations=self.max_iterations, settings=self.settings,
                                         system_prompt=self.system_prompt, hooks=AgentHooks())
        self.actor.label = "actor"
        self.max_reflections = max_reflections
        self.reflection_prompt = reflection_prompt
        self.reflection_settings = dataclasses.replace(
            self.settings, model=reflection_model or self.settings.model, temperature=float(reflection_temperature))
        self.memory: dict[str, deque[Lesson]] = {}
        self._actor_ran = False
        self._attempts: dict[str, _Attempt] = {}

    def lessons(self, task_id: str) -> list[Lesson]:
        """The lessons kept for `task_id`, oldest first."""
        return list(self.memory.get(task_id, ()))

    def on_trial_result(self, task_id: str, outcome: Any) -> None:
        """Keep the result of this agent's own trial of `task_id` for the next reflection."""
        attempt = self._attempts.get(task_id)
        if attempt is not None:
            attempt.result = outcome

    def _flush_messages(self) -> None:
        if self._actor_ran:  # before that, messages hooks add are handed to the actor, which emits them
            super()._flush_messages()

    def _prepare(self, interface: Any, task_id: str, *, history: list[dict[str, Any]] | None,
                 task_prompt: str | None, examples: Any, **kwargs: Any) -> None:
        self._actor_ran = False
        self._actor_args = {"history": list(history or []), "task_prompt": task_prompt, "examples": examples,
                            **kwargs}

    def _run_body(self) -> StepResult:
        task_id = self._task_id
        self._reflect_on_previous(task_id)
        args = dict(self._actor_args)
        lessons = self.lessons(task_id)
        if lessons:
            args["history"] = [*args["history"], {"role": "system", "content": _format_lessons(lessons)}]
        actor = self.actor
        actor.sink = self.sink
        actor.run(self._interface, task_id, trial_id=self.trial_id, trial_index=self.trial_index, arm=self.arm,
                  benchmark_id=self.benchmark_id, enable_surrender=self.enable_surrender, _ledger=self._ledger,
                  _parent_hooks=self._active_hooks, _extra_messages=list(self.messages), **args)
        outcome = actor.outcome
        assert outcome is not None
        self._attempts[task_id] = _Attempt(list(actor.messages), outcome.status, self.trial_id,
                                           self.trial_index)
        self.messages = actor.messages  # AFTER_TASK hooks see the real conversation
        self._emitted = len(self.messages)
        self._actor_ran = True
        self._iterations = outcome.iterations
        return StepResult(status=outcome.status, answer=outcome.answer, error=outcome.error, fault=outcome.fault,
                          data={"lessons": len(lessons)})

    def _reflect_on_previous(self, task_id: str) -> None:
        attempt = self._attempts.pop(task_id, None)
        if attempt is None:
            return
        scored = _own_score(attempt) if attempt.result is not None else _server_score(self._interface, task_id,
                                                                                         attempt)
        if scored is None:
            return
        trial_id, score, ended = scored
        score_text = f"{score:.2f}" if score is not None else \
            f"nothing (it ended without a score: {ended.replace('_', ' ')})"
        prompt = render(self.reflection_prompt or REFLECTION_PROMPT, task_id=task_id,
                        trial=str(attempt.trial_index),
                        score=score_text, trajectory=_summarise(attempt.messages))
        try:
            result = self.call_llm([{"role": "user", "content": prompt}], role="reflection",
                                   settings=self.reflection_settings)
        except LLMError as exc:  # the actor can still try without a new lesson
            log.warning("reflection on task %s failed, running without a new lesson: %s", task_id, exc.message)
            self.emit(HookErrorEvent(data=HookData(
                point=HookPoint.BEFORE_TASK.value, hook="reflection",
                error=f"the reflection call failed, so this attempt has no new lesson: {exc.message}")))
            return
        text = (result.content or "").strip()
        if text:
            memory = self.memory.setdefault(task_id, deque(maxlen=self.max_reflections))
            memory.append(Lesson(trial_id, score, text))


def _own_score(attempt: _Attempt) -> tuple[str | None, float | None, str]:
    """(trial_id, score, how it ended) from the result run_trial reported for this agent's attempt."""
    result = attempt.result
    score = getattr(result, "score", None)
    trial_id = getattr(result, "trial_id", None) or attempt.trial_id
    ended = str(getattr(result, "status", None) or attempt.status)
    return trial_id, float(score) if score is not None else None, ended


def _server_score(interface: Any, task_id: str, attempt: _Attempt) -> tuple[str | None, float | None, str] | None:
    """The fallback without a reported result: the server's last score of the task, which is this
    agent's only when nothing else runs the task on that server."""
    last = _last_score(interface, task_id)
    if last is None:
        return None
    trial_id, score = last
    scored = attempt.status in (AgentStatus.ANSWERED, AgentStatus.SURRENDERED)
    return trial_id, score if scored else None, attempt.status


def _last_score(interface: Any, task_id: str) -> tuple[str | None, float | None] | None:
    """(trial_id, score) of the task's most recent finished trial, or None when there is none."""
    try:
        info = interface.get_last_score(task_id)
    except Exception as exc:  # 404 "No trials completed yet" is the normal first-run answer
        if "404" not in str(exc) and type(exc).__name__ != "NotFound":
            log.warning("could not read the last score of %s: %s", task_id, exc)
        return None
    if info is None:
        return None
    get: Callable[[str], Any] = info.get if isinstance(info, dict) else lambda key: getattr(info, key, None)
    score = get("score")
    trial_id = get("trial_id")
    return (str(trial_id) if trial_id is not None else None, float(score) if score is not None else None)


def _format_lessons(lessons: list[Lesson]) -> str:
    blocks = []
    for i, lesson in enumerate(lessons, start=1):
        score = f"{lesson.score:.2f}" if lesson.score is not None else "not scored"
        blocks.append(f"Attempt {i} (Score: {score}):\n{lesson.text}")
    return LESSONS_HEADER + "\n\n" + "\n\n".join(blocks)


def _summarise(messages: list[dict[str, Any]]) -> str:
    lines = []
    for message in messages:
        if message.get("role") == "system":
            continue
        content = _as_text(message.get("content"))
        if message.get("tool_calls"):
            calls = ", ".join(f"{c['function']['name']}({c['function']['arguments']})" for c in message["tool_calls"])
            content = f"{content} [tool calls: {calls}]".strip()
        if len(content) > _MAX_MESSAGE_CHARS:
            content = content[:_MAX_MESSAGE_CHARS] + " ..."
        lines.append(f"{message.get('role')}: {content}")
    text = "\n".join(lines)
    return text if len(text) <= _MAX_TRAJECTORY_CHARS else "... " + text[-_MAX_TRAJECTORY_CHARS:]
