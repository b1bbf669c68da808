"""ReActAgent: thought / action / observation in Corral's XML tags."""

from __future__ import annotations

from typing import Any

from corral_core.domain import AgentStatus

from .base import BaseAgent, ToolOutcome
from .outcome import StepResult
from .prompts import REACT_SURRENDER, REACT_USER_PROMPT, clean_guide, format_examples, render
from .react_parsing import ParsedAction, ParsedReply, parse_react

FORMAT_REMINDER = (
    "Reply with <thought>...</thought> then either <action>tool name</action>"
    "<action_input>{JSON arguments}</action_input>, or <final_answer>the answer</final_answer>. "
    "Remember the closing tags."
)


class ReActAgent(BaseAgent):
    """Reason-and-act agent: the model writes XML-tagged thoughts and actions; tools answer as observations."""

    llm_role = "agent"

    def _prepare(self, interface: Any, task_id: str, *, history: list[dict[str, Any]] | None,
                 task_prompt: str | None, examples: Any, **kwargs: Any) -> None:
        verbosity = kwargs.get("verbosity") or kwargs.get("tool_verbosity")
        parts: list[Any] = []
        if task_prompt is not None:
            guide = f"Task: {task_prompt}\n\n{interface.get_tools_guide(task_id, verbosity)}"
        else:
            guide = interface.get_task_guide(task_id, verbosity)
            if not isinstance(guide, str):  # multimodal prompt: text guide plus the content parts
                parts = list(guide)
                guide = f"Task: see the attached content.\n\n{interface.get_tools_guide(task_id, verbosity)}"
        surrender = (self.surrender_prompt or REACT_SURRENDER) if self.enable_surrender else ""
        text = render(self.user_prompt or REACT_USER_PROMPT, task_guide=clean_guide(guide),
                      examples=format_examples(examples), surrender_instructions=surrender)
        content: Any = [{"type": "text", "text": text}, *parts] if parts else text
        self.messages.extend([self.system_message(), *(history or []), {"role": "user", "content": content}])

    def _step(self, iteration: int) -> StepResult:
        result = self.get_llm_response()
        content = result.content or ""
        self.add_message({"role": "assistant", "content": content})
        reply = parse_react(content)
        data: dict[str, Any] = {"llm_response": content, "thoughts": reply.thoughts,
                                "parsed_actions": [{"name": a.name, "arguments": a.arguments, "error": a.error}
                                                   for a in reply.actions]}
        if reply.surrender is not None:
            if self.enable_surrender:
                data["surrender_reason"] = reply.surrender
                return StepResult(status=AgentStatus.SURRENDERED, data=data)
            reply.problems.append("surrender is not available in this run; keep working or give your best answer")
        outcomes = self.run_actions(reply.runnable)
        data["tool_results"] = [o.record for o in outcomes]
        if reply.final_answer is not None:
            data["final_answer"] = reply.final_answer
            return StepResult(status=AgentStatus.ANSWERED, answer=reply.final_answer, data=data)
        self._report_problems(reply)
        return StepResult(data=data)

    def run_actions(self, actions: list[ParsedAction]) -> list[ToolOutcome]:
        """Execute parsed actions in order, appending each observation as a user message."""
        outcomes = []
        for action in actions:
            outcome = self.execute_tool(action.name, action.arguments or {})
            self.add_message({"role": "user", "content": f"Observation: {outcome.text}"})
            outcomes.append(outcome)
        return outcomes

    def _report_problems(self, reply: ParsedReply) -> None:
        """Tell the model what was wrong with its reply, so the next turn can fix it."""
        problems = [*reply.problems, *(a.error for a in reply.actions if a.error)]
        if not problems and (reply.actions or reply.final_answer is not None):
            return
        if not problems:
            problems = ["your reply had no <action> and no <final_answer>"]
        listing = "\n".join(f"- {p}" for p in problems)
        text = f"Format problem in your last reply:\n{listing}\n{FORMAT_REMINDER}"
        self.add_message({"role": "user", "content": text})
