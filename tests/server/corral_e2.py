"""Corral E2's client side, rewritten from corral-facts §2.4, §3.4, §4.3 and §7 for the wire tests.

Nothing here is our code: it is what a Corral user's `CorralRouter`, `ToolCallingAgent` conversion
and runner report do with a server's answers, so a test can drive our server the way they do.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import httpx
from pydantic import BaseModel

# agents/utils.py: TYPE_MAPPING (list[str] is handled before the lookup)
TYPE_MAPPING = {"str": "string", "bool": "boolean", "int": "integer", "float": "number", "list[str]": "array",
                "none": "null", "dict": "object"}
LIST_SUFFIX = ' - Provide as an array of strings, e.g., ["item1", "item2"]'


class TrialCompletionResponse(BaseModel):
    """backend/schema.py, parsed from the submit/surrender answer."""

    score: float
    state: dict[str, Any]
    trial_id: str
    surrendered: bool = False


@dataclass
class ToolResponse:
    success: bool
    result: Any = None
    error: str | None = None


@dataclass
class TaskTrialResult:
    task_id: str
    trial_id: str
    score: float
    state: dict[str, Any] = field(default_factory=dict)
    tool_statistics: dict[str, Any] = field(default_factory=dict)
    duration: float | None = None
    error_message: str | None = None
    surrendered: bool = False

    @property
    def success(self) -> bool:
        return self.score > 0 and self.error_message is None and not self.surrendered

    @property
    def tool_execution_duration(self) -> float:
        return sum(call["duration"] for call in self.tool_statistics["tool_calls"])


class CorralRouterE2:
    """`CorralRouter(base_url, default_verbosity="brief")`: every method but execute_tool raises."""

    def __init__(self, base_url: str, default_verbosity: str = "brief") -> None:
        self.http = httpx.Client(base_url=base_url, timeout=30)
        self.default_verbosity = default_verbosity

    def close(self) -> None:
        self.http.close()

    def _get(self, path: str, **params: Any) -> Any:
        response = self.http.get(path, params=params or None)
        response.raise_for_status()
        return response.json()

    def _post(self, path: str, **kwargs: Any) -> Any:
        response = self.http.post(path, **kwargs)
        response.raise_for_status()
        return response.json()

    def set_verbosity(self, verbosity: str) -> None:
        self.default_verbosity = verbosity

    def get_available_tasks(self) -> list[str]:
        return self._get("/tasks")

    def supports_dependency_chain(self) -> bool:
        try:
            return self._get("/dependency_chain")["dependency_chain"]
        except Exception:
            return False

    def get_available_tools_for_task(self, task_id: str, verbosity: str | None = None) -> dict[str, Any]:
        return self._get(f"/tasks/{task_id}/tools", verbosity=verbosity or self.default_verbosity)

    def get_task_guide(self, task_id: str, verbosity: str | None = None) -> str:
        return self._get(f"/tasks/{task_id}/guide", verbosity=verbosity or self.default_verbosity)["prompt"]

    def get_tools_guide(self, task_id: str, verbosity: str | None = None) -> str:
        return self._get(f"/tasks/{task_id}/tools/guide", verbosity=verbosity or self.default_verbosity)["prompt"]

    def get_task_prompt(self, task_id: str) -> str | list[dict[str, Any]]:
        return self._get(f"/tasks/{task_id}/prompt")["prompt"]

    def execute_tool(self, task_id: str, tool_name: str, arguments: dict[str, Any]) -> ToolResponse:
        try:
            body = self._post(f"/tasks/{task_id}/tools/execute", json={"tool_name": tool_name, "arguments": arguments})
        except Exception as exc:
            return ToolResponse(success=False, error=str(exc))
        return ToolResponse(success=True, result=body["result"])  # the whole ToolCall dict

    def _result(self, task_id: str, body: dict[str, Any]) -> TaskTrialResult:
        parsed = TrialCompletionResponse(**body)
        return TaskTrialResult(task_id=task_id, trial_id=parsed.trial_id, score=parsed.score, state=parsed.state,
                               tool_statistics=parsed.state["tool_statistics"], surrendered=parsed.surrendered)

    def submit_answer(self, task_id: str, answer: str) -> TaskTrialResult:
        return self._result(task_id, self._post(f"/tasks/{task_id}/submit", json={"answer": answer}))

    def surrender_task(self, task_id: str) -> TaskTrialResult:
        return self._result(task_id, self._post(f"/tasks/{task_id}/surrender"))

    def get_task_status(self, task_id: str) -> dict[str, Any]:
        return self._get(f"/tasks/{task_id}/status")

    def get_last_score(self, task_id: str) -> dict[str, Any]:
        return self._get(f"/tasks/{task_id}/last_score")

    def get_trial_state(self, task_id: str, trial_id: str) -> dict[str, Any]:
        return self._get(f"/tasks/{task_id}/trials/{trial_id}")["trial_state"]

    def configure_additional_apps(self, task_id: str, timeout: float | None = None) -> dict[str, Any]:
        kwargs = {} if timeout is None else {"timeout": timeout}
        return self._post(f"/tasks/{task_id}/configure", **kwargs)


def _parse_argument_string(text: str) -> dict[str, Any] | None:
    pattern = re.compile(r"^(?P<name>\w+)\s+\((?P<type>[^,]+),\s*(?P<req_opt>required|optional"
                         r"(?:,\s*default:\s*(?P<default>.*?))?)\):\s*(?P<desc>.*)$", re.DOTALL)
    match = pattern.match(text)
    if not match:
        return None
    data = match.groupdict()
    parsed = {"name": data["name"], "type": data["type"], "required": data["req_opt"] == "required",
              "description": data["desc"]}
    if data["default"] is not None:
        parsed["default"] = data["default"]
    return parsed


def _convert_dict_arg(arg: dict[str, Any]) -> dict[str, Any]:
    arg_type = arg.get("type")
    if not arg_type:
        raise ValueError("Argument 'type' is missing")
    prop: dict[str, Any] = {"description": arg.get("description", "")}
    if arg_type == "list[str]":
        prop["type"] = "array"
        prop["items"] = {"type": "string"}
        prop["description"] += LIST_SUFFIX
    else:
        prop["type"] = TYPE_MAPPING.get(arg_type, "string")  # unknown types silently become string
    if arg.get("choices"):
        prop["enum"] = arg["choices"]
    if "default" in arg and arg["default"] is not None:
        prop["default"] = arg["default"]
    return prop


def convert_to_openai_tool_format(tools_dict: dict[str, Any], skipped: list[Any] | None = None) -> list[dict[str, Any]]:
    """agents/utils.py: tools lacking name/description/arguments are skipped as malformed."""
    if "tools" not in tools_dict or not isinstance(tools_dict["tools"], list):
        return []
    converted = []
    for tool in tools_dict["tools"]:
        if not all(key in tool for key in ("name", "description", "arguments")) or not isinstance(
                tool["arguments"], list):
            if skipped is not None:
                skipped.append(tool)
            continue
        spec: dict[str, Any] = {"name": tool["name"], "description": tool["description"],
                                "parameters": {"type": "object", "properties": {}, "required": []}}
        for arg_spec in tool["arguments"]:
            arg = _parse_argument_string(arg_spec) if isinstance(arg_spec, str) else arg_spec
            if not isinstance(arg, dict):
                continue
            try:
                spec["parameters"]["properties"][arg["name"]] = _convert_dict_arg(arg)
                if arg.get("required", True):
                    spec["parameters"]["required"].append(arg["name"])
            except (TypeError, ValueError, KeyError):
                continue
        if spec["name"] and spec["description"]:
            converted.append({"type": "function", "function": spec})
        elif skipped is not None:
            skipped.append(tool)
    return converted


def report_entry(result: TaskTrialResult) -> dict[str, Any]:
    """run.py's generate_report: one trial's entry, built from the result and its state."""
    stats = result.tool_statistics
    return {
        "trial_id": result.trial_id,
        "score": result.score,
        "submitted_answer": result.state["submitted_answer"],
        "success": result.success,
        "surrendered": result.surrendered,
        "tool_execution_duration": result.tool_execution_duration,
        "tool_calls": stats["tool_calls"],
        "total_calls": stats["total_calls"],
        "successful_calls": stats["successful_calls"],
        "failed_calls": stats["failed_calls"],
        "tools_used": stats["tools_used"],
        "error_types": stats["error_types"],
    }
