"""A Corral-shaped server for our own environments: Corral E2's task routes and E2a `/tools` shape.

Its documentation is rendered by the code below, written from corral-facts §3 (Corral E2's
`filter_tool_description` and `filter_argument_description`, the argument sections joined with a
space), never by calling our renderer; where corral-tui deliberately differs (README, "Coming from
Corral") the rule is marked FIX. Tools run through the environment (`Environment.call_tool`), so a
test compares what agents are *shown*, with everything else equal.
"""

from __future__ import annotations

import re
import threading
from typing import Any

from fastapi import FastAPI, HTTPException
from pydantic import BaseModel

from corral_core.env import Environment

LEVELS = ("minimal", "brief", "detailed", "procedural", "contextual", "workflow", "syntactical", "comprehensive",
          "full")
_STEPS = ["BASIC", "BRIEF", "DETAILED", "PROCEDURAL", "CONTEXTUAL", "WORKFLOW_INTEGRATION", "SYNTACTICAL"]
SECTIONS = {"minimal": {"BASIC"}, **{level: set(_STEPS[: i + 2]) for i, level in enumerate(LEVELS[1:7])},
            "comprehensive": {*_STEPS, "RAISES", "LIMITATIONS", "EXAMPLES"}}
KEYWORDS = ["BRIEF", "DETAILED", "PROCEDURAL", "WORKFLOW_INTEGRATION", "CONTEXTUAL", "SYNTACTICAL", "RAISES",
            "LIMITATIONS", "EXAMPLES", "ARGS_BRIEF", "ARGS_DETAILED", "ARGS_SYNTACTICAL", "ARGS_EXAMPLES"]
TAGGED = re.compile(r"\[(" + "|".join(KEYWORDS) + r")\](.*?)\[/\1\]", re.DOTALL | re.IGNORECASE)
NESTED = re.compile(r"\[([A-Z_]+)\](.*?)\[/\1\]", re.DOTALL)
PREFIX = {"PROCEDURAL": "When to use: ", "WORKFLOW_INTEGRATION": "Workflow: ", "RAISES": "Exceptions: ",
          "LIMITATIONS": "Limitations: "}


def extract(text: str) -> dict[str, str]:
    sections: dict[str, str] = {}
    for name, content in TAGGED.findall(text):
        content = content.strip()
        while NESTED.search(content):
            content = NESTED.sub(r"\2", content)
        if content.strip():
            sections[name.upper()] = content.strip()
    rest = TAGGED.sub("", text)
    args = re.search(r"Args:(.*?)(?=Returns:|$)", rest, re.DOTALL | re.IGNORECASE)
    if args:
        rest = re.sub(r"Args:(.*?)(?=Returns:|$)", "", rest, flags=re.DOTALL | re.IGNORECASE)
    returns = re.search(r"Returns:(.*?)$", rest, re.DOTALL | re.IGNORECASE)
    if returns:
        rest = re.sub(r"Returns:(.*?)$", "", rest, flags=re.DOTALL | re.IGNORECASE)
    if rest.strip():
        sections["BASIC"] = rest.strip()
    return sections


def basic(text: str) -> str:
    sections = extract(text)
    if sections.get("BRIEF"):
        return sections["BRIEF"]
    if sections.get("BASIC"):
        lines: list[str] = []
        for line in sections["BASIC"].split("\n"):
            if not line.strip() and lines:
                break
            if line.strip():
                lines.append(line.strip())
        return " ".join(lines)
    return "No description available"  # FIX: Corral showed the first line as written, tags included


def tool_description(text: str, level: str) -> str:
    if not text:
        return "No description available"
    if level == "full":
        return text
    if level == "minimal":
        return basic(text)
    sections = extract(text)
    parts: list[str] = []
    for name in ("BRIEF", "BASIC", "DETAILED", "PROCEDURAL", "CONTEXTUAL", "WORKFLOW_INTEGRATION", "SYNTACTICAL",
                 "EXAMPLES", "RAISES", "LIMITATIONS"):
        if name in SECTIONS[level] and name in sections and not (name == "BASIC" and "BRIEF" in sections):
            parts.append(PREFIX.get(name, "") + sections[name])
    return "\n\n".join(parts) if parts else basic(text)


def argument_description(text: str, level: str) -> str:
    if not text:
        return text
    if level == "minimal":
        return text.split("[")[0].split("(choices:")[0].strip()
    if level == "full":
        return text.strip()  # FIX: the text as written (Corral: the untagged text only, less than comprehensive)
    choices = ""
    if "(choices:" in text:
        start = text.find("(choices:")
        end = text.find(")", start)
        choices = text[start:end + 1]
        text = text[:start] + text[end + 1:]  # FIX: the fragment is shown once (Corral could repeat it)
    # Corral's later filter (since PR #191): no BRIEF branch of its own (E2's, the text before the
    # first "[", showed nothing for an argument tagged only [ARGS_BRIEF])
    sections = {name.removeprefix("ARGS_"): content for name, content in extract(text).items()}
    parts = [sections["BASIC"]] if "BASIC" in sections and "BRIEF" not in sections else []
    parts += [sections[n] for n in ("BRIEF", "DETAILED", "SYNTACTICAL", "EXAMPLES")
              if n in SECTIONS[level] and n in sections]
    parts.append(choices)
    return " ".join(part for part in parts if part)  # FIX: nothing to show is "" (Corral: the raw text)


def e2_tool(tool: Any, level: str) -> dict[str, Any]:
    """E2a's `/tools` entry of one tool: {name, description, arguments}."""
    arguments = []
    for argument in tool.arguments:
        entry: dict[str, Any] = {"name": argument.name, "type": argument.type, "required": argument.required}
        if level != "minimal":
            entry.update(description=argument_description(argument.description, level), default=argument.default,
                         choices=argument.choices)
        arguments.append(entry)
    return {"name": tool.name, "description": tool_description(tool.description, level), "arguments": arguments}


class ToolRequest(BaseModel):
    tool_name: str
    arguments: dict[str, Any]


def create_corral_docs_app(environments: dict[str, Environment]) -> FastAPI:
    """Corral E2's task routes over `environments` (one current trial per task, no trial routes)."""
    lock = threading.Lock()
    app = FastAPI()

    def env_of(task_id: str) -> Environment:
        if task_id not in environments:
            raise HTTPException(status_code=404, detail="Task not found")
        return environments[task_id]

    def finish(env: Environment, answer: str | None) -> dict[str, Any]:
        score = env.surrender() if answer is None else env.submit_answer(answer)
        state = env.snapshot()
        env.reset_state()
        return {"score": score, "state": state, "trial_id": env.state.trial_id, "surrendered": answer is None}

    @app.get("/tasks")
    def tasks() -> list[str]:
        return list(environments)

    @app.get("/dependency_chain")
    def dependency_chain() -> dict[str, bool]:
        return {"dependency_chain": False}

    @app.get("/tasks/{task_id}/prompt")
    def prompt(task_id: str) -> dict[str, Any]:
        return {"prompt": env_of(task_id).get_task_prompt()}

    @app.get("/tasks/{task_id}/tools")
    def tools(task_id: str, verbosity: str = "full") -> dict[str, Any]:
        if verbosity not in LEVELS:
            raise HTTPException(status_code=422, detail=[{"loc": ["query", "verbosity"], "msg": "bad level"}])
        return {"tools": [e2_tool(tool, verbosity) for tool in env_of(task_id).tools.values()]}

    @app.post("/tasks/{task_id}/tools/execute")
    def execute(task_id: str, request: ToolRequest) -> dict[str, Any]:
        env = env_of(task_id)
        with lock:
            return {"result": env.call_tool(request.tool_name, request.arguments).to_dict()}

    @app.get("/tasks/{task_id}/state")
    def state(task_id: str) -> dict[str, Any]:
        return env_of(task_id).snapshot()

    @app.post("/tasks/{task_id}/submit")
    def submit(task_id: str, body: dict) -> dict[str, Any]:  # type: ignore[type-arg]
        with lock:
            return finish(env_of(task_id), str(body["answer"]))

    @app.post("/tasks/{task_id}/surrender")
    def surrender(task_id: str) -> dict[str, Any]:
        with lock:
            return finish(env_of(task_id), None)

    @app.post("/tasks/{task_id}/configure")
    def configure(task_id: str) -> dict[str, Any]:
        env = env_of(task_id)
        return {"status": env.configure_additional_apps(), "task_id": task_id, "trial_id": env.state.trial_id}

    @app.get("/tasks/{task_id}/status")
    def status(task_id: str) -> dict[str, Any]:
        env = env_of(task_id)
        return {"is_attempted": env.state.is_attempted, "score": env.state.score,
                "submitted_answer": env.state.submitted_answer, "tool_statistics": env.tool_statistics()}

    return app
