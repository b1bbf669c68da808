"""LLMPlanner: a planner model writes plans; a ReAct executor carries each one out with the tools."""

from __future__ import annotations

import dataclasses
from typing import Any

from corral_core.domain import AgentStatus

from .base import BaseAgent
from .hooks import AgentHooks
from .options import positive_int
from .outcome import StepResult
from .prompts import (
    EXECUTOR_TASK,
    PLANNER_PROMPT,
    PLANNER_SURRENDER,
    clean_guide,
    format_examples,
    render,
)
from .react import ReActAgent


class LLMPlanner(BaseAgent):
    """Hierarchical agent (Corral's LLMPlanner, with the documented planner_model/executor_model).

    Each iteration the planner (role "planner") writes a plan, or ends the task with "Final Answer: X";
    with surrender enabled, "Final Answer: GIVE UP" gives the task up deliberately (as for the
    tool-calling agent). A plan is run by a ReActAgent executor with its own `executor_max_iterations`;
    the executor shares the trial's token accounting, events and iteration-level hooks, and its answer
    is reported back to the planner.
    """

    llm_role = "planner"

    def __init__(self, planner_model: str | None = None, executor_model: str | None = None, *,
                 executor_max_iterations: int | None = None, executor: BaseAgent | None = None,
                 **kwargs: Any) -> None:
        if planner_model is not None:
            kwargs["model"] = planner_model
            if kwargs.get("settings") is not None:
                kwargs["settings"] = dataclasses.replace(kwargs["settings"], model=planner_model)
        super().__init__(**kwargs)
        if executor_max_iterations is not None:
            executor_max_iterations = positive_int("executor_max_iterations", executor_max_iterations)
        self.planner_model = self.model
        if executor is None:
            settings = self.settings
            if executor_model is not None:
                settings = dataclasses.replace(settings, model=executor_model)
            executor = ReActAgent(max_iterations=executor_max_iterations or self.max_iterations,
                                  settings=settings, system_prompt=self.system_prompt, hooks=AgentHooks())
        self.executor = executor
        self.executor_model = executor.model
        self.executor.label = "executor"

    def _prepare(self, interface: Any, task_id: str, *, history: list[dict[str, Any]] | None,
                 task_prompt: str | None, examples: Any, **kwargs: Any) -> None:
        self._verbosity = kwargs.get("verbosity") or kwargs.get("tool_verbosity")
        if task_prompt is not None:
            guide = f"Task: {task_prompt}\n\n{interface.get_tools_guide(task_id, self._verbosity)}"
            self._task_text = task_prompt
        else:
            guide = interface.get_task_guide(task_id, self._verbosity)
            prompt = interface.get_task_prompt(task_id)
            self._task_text = prompt if isinstance(prompt, str) else "See the task guide."
            if not isinstance(guide, str):
                guide = interface.get_tools_guide(task_id, self._verbosity)
        surrender = (self.surrender_prompt or PLANNER_SURRENDER) if self.enable_surrender else ""
        text = render(self.user_prompt or PLANNER_PROMPT, task_guide=clean_guide(guide),
                      examples=format_examples(examples), iterations=self.max_iterations,
                      surrender_instructions=surrender)
        self.messages.extend([self.system_message(), *(history or []), {"role": "user", "content": text}])

    def _step(self, iteration: int) -> StepResult:
        result = self.get_llm_response()
        plan = (result.content or "").strip()
        self.add_message({"role": "assistant", "content": plan})
        data: dict[str, Any] = {"llm_response": plan, "plan": plan}
        concluded = self.conclude(plan, data)
        if concluded is not None:
            return concluded
        if not plan:
            self.add_message({"role": "user", "content": "Your reply was empty. Write a plan, or "
                                                         "\"Final Answer: <answer>\" when you know it."})
            return StepResult(data=data)
        executor = self.executor
        executor.sink = self.sink
        executor.run(self._interface, self._task_id,
                     task_prompt=render(EXECUTOR_TASK, task=self._task_text, plan=plan),
                     verbosity=self._verbosity, enable_surrender=False, trial_id=self.trial_id,
                     trial_index=self.trial_index, arm=self.arm, benchmark_id=self.benchmark_id,
                     _ledger=self._ledger, _parent_hooks=self._active_hooks)
        outcome = executor.outcome
        assert outcome is not None
        data["executor"] = outcome.to_dict()
        if outcome.status in (AgentStatus.STOPPED, AgentStatus.CANCELLED, AgentStatus.ERROR):
            return StepResult(status=outcome.status, error=outcome.error, data=data, fault=outcome.fault)
        if outcome.status == AgentStatus.ANSWERED:
            report = f"Answer submitted by the executor: {outcome.answer}"
        else:
            report = (f"The executor did not reach an answer ({outcome.status.replace('_', ' ')} after "
                      f"{outcome.iterations} iterations).")
        self.add_message({"role": "user", "content": report + "\nWrite the next plan, or reply "
                                                              "\"Final Answer: <answer>\" if the task is solved."})
        return StepResult(data=data)
