"""ToolCallingAgent: the model's native function calling, with tools in OpenAI format from the server."""

from __future__ import annotations

import json
from typing import Any

from corral_core.domain import AgentStatus
from corral_core.tools import ToolVerbosity
from corral_core.tools.arguments import type_name_schema
from corral_core.tools.documentation import ArgumentDoc, ToolDoc

from .base import BaseAgent
from .outcome import StepResult
from .prompts import TOOL_CALLING_SURRENDER, TOOL_CALLING_USER_PROMPT, format_examples, render

NUDGE = ("Your reply had neither a tool call nor a final answer. Call one of the tools, or reply "
         "\"Final Answer: <the answer>\" when you know it.")


class ToolCallingAgent(BaseAgent):
    """Agent using native tool calls; the final answer is a reply "Final Answer: X"."""

    llm_role = "agent"

    def _prepare(self, interface: Any, task_id: str, *, history: list[dict[str, Any]] | None,
                 task_prompt: str | None, examples: Any, **kwargs: Any) -> None:
        verbosity = kwargs.get("verbosity") or kwargs.get("tool_verbosity")
        listing = interface.get_available_tools_for_task(task_id, verbosity)
        raw = listing.get("tools", []) if isinstance(listing, dict) else listing
        self.tools: list[dict[str, Any]] = [as_openai_tool(t) for t in raw]
        names = {t.get("function", {}).get("name") for t in self.tools}
        self.surrender_tool: str | None = None
        if self.enable_surrender:
            self.surrender_tool = "surrender" if "surrender" not in names else "surrender_task"
            self.tools.append(_surrender_tool(self.surrender_tool))
        prompt = task_prompt if task_prompt is not None else interface.get_task_prompt(task_id)
        parts: list[Any] = []
        if not isinstance(prompt, str):
            parts, prompt = list(prompt), "See the attached content."
        surrender = ""
        if self.surrender_tool:
            surrender = render(self.surrender_prompt or TOOL_CALLING_SURRENDER, surrender_tool=self.surrender_tool)
        text = render(self.user_prompt or TOOL_CALLING_USER_PROMPT, task_prompt=prompt,
                      examples=format_examples(examples), surrender_instructions=surrender)
        content: Any = [{"type": "text", "text": text}, *parts] if parts else text
        self.messages.extend([self.system_message(), *(history or []), {"role": "user", "content": content}])

    def _step(self, iteration: int) -> StepResult:
        result = self.get_llm_response(self.tools)
        content = result.content or ""
        data: dict[str, Any] = {"llm_response": content,
                                "tool_calls": [c.to_dict() for c in result.tool_calls]}
        if result.tool_calls:
            self.add_message({"role": "assistant", "content": result.content,
                              "tool_calls": [c.to_message() for c in result.tool_calls]})
            surrender = next((c for c in result.tool_calls if c.name == self.surrender_tool), None)
            if surrender is not None:
                data["surrender_reason"] = _reason(surrender.arguments)
                return StepResult(status=AgentStatus.SURRENDERED, data=data)
            data["tool_results"] = []
            for call in result.tool_calls:
                try:
                    arguments = parse_arguments(call.arguments)
                except ValueError as exc:
                    text = (f"Error: the arguments for {call.name} were not a valid JSON object ({exc}); "
                            "send a JSON object.")
                else:
                    outcome = self.execute_tool(call.name, arguments)
                    data["tool_results"].append(outcome.record)
                    text = outcome.text if outcome.ok else f"Error: {outcome.text}"
                self.add_message({"role": "tool", "tool_call_id": call.id, "content": text})
        else:
            self.add_message({"role": "assistant", "content": content})
        concluded = self.conclude(content, data)
        if concluded is not None:
            return concluded
        if not result.tool_calls:
            self.add_message({"role": "user", "content": NUDGE})
        return StepResult(data=data)


MAX_ARGUMENT_DEPTH = 64  # nesting levels a tool call's arguments may have (json.loads recurses per level)


def parse_arguments(text: str | None) -> dict[str, Any]:
    """A tool call's arguments as a dict; ValueError (said to the model) for anything else, including
    JSON nested deeper than MAX_ARGUMENT_DEPTH, which would otherwise exhaust Python's recursion."""
    text = text or "{}"
    depth = deepest = 0
    for char in text:  # brackets inside strings count too: cheap, and 64 levels is far beyond any real tool
        if char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    if deepest > MAX_ARGUMENT_DEPTH:
        raise ValueError(f"nested {deepest} levels deep; at most {MAX_ARGUMENT_DEPTH} are accepted")
    try:
        value = json.loads(text)
    except RecursionError:
        raise ValueError(f"nested too deeply; at most {MAX_ARGUMENT_DEPTH} levels are accepted") from None
    if not isinstance(value, dict):
        raise ValueError(f"expected a JSON object, got {type(value).__name__}")
    return value


def as_openai_tool(tool: dict[str, Any]) -> dict[str, Any]:
    """A tool in OpenAI function format; converts Corral's older argument-list shape (E2a servers).

    The conversion is the one our servers' `parameters` follow (corral_core/tools/documentation.py):
    the type name's schema, then `description`, `enum` and `default` when the entry carries them, so
    the model gets the same request from a Corral E2 server as from ours at every level. An entry in
    OpenAI format is passed on without the E2 keys, risk and render hint our `/tools` adds to it.
    """
    if isinstance(tool.get("function"), dict):  # only the function: our /tools entries carry E2 keys too
        return {"type": "function", "function": tool["function"]}
    if "arguments" not in tool:
        return tool
    arguments = [ArgumentDoc(name=str(argument["name"]), type=str(argument.get("type") or ""),
                             required=bool(argument.get("required", True)),
                             type_schema=type_name_schema(str(argument.get("type") or "")),
                             description=argument.get("description") or None, default=argument.get("default"),
                             choices=list(argument["choices"]) if argument.get("choices") else None)
                 for argument in tool.get("arguments") or [] if isinstance(argument, dict) and "name" in argument]
    doc = ToolDoc(str(tool["name"]), ToolVerbosity.FULL, str(tool.get("description", "")), tuple(arguments))
    return {"type": "function", "function": {"name": doc.name, "description": doc.description,
                                             "parameters": doc.parameters()}}


def _surrender_tool(name: str) -> dict[str, Any]:
    return {"type": "function", "function": {
        "name": name,
        "description": "Give up on this task deliberately, when it cannot be solved with the available tools. "
                       "This ends the attempt without an answer.",
        "parameters": {"type": "object", "properties": {
            "reason": {"type": "string", "description": "Why the task cannot be solved."}}, "required": []},
    }}


def _reason(arguments: str) -> str:
    try:
        value = parse_arguments(arguments)
    except ValueError:
        return arguments
    return str(value.get("reason", "")) if isinstance(value, dict) else str(value)
