"""A stand-in for a Corral E2 environment server, written from corral-facts §2.1 and §2.3.

Only the task routes exist (no POST /tasks/{id}/trials), with Corral's behaviour: `verbosity` must
be a lowercase level name (422 otherwise), `/tools` lists E2a argument lists only, tool failures
are HTTP 200, a submit or surrender answers with the *next* trial's id while `state.trial_id` is
the finished one, and a new trial starts implicitly after each submit. It also counts how many
trials of a task were open at once (POST /configure opens one, submit/surrender closes it), so a
test can check that a client keeps to one running trial per task.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from enum import Enum
from typing import Any

from fastapi import FastAPI, HTTPException
from pydantic import BaseModel


class ToolVerbosity(Enum):
    MINIMAL = "minimal"
    BRIEF = "brief"
    DETAILED = "detailed"
    PROCEDURAL = "procedural"
    CONTEXTUAL = "contextual"
    WORKFLOW = "workflow"
    SYNTACTICAL = "syntactical"
    COMPREHENSIVE = "comprehensive"
    FULL = "full"


class ToolRequest(BaseModel):
    tool_name: str
    arguments: dict[str, Any]


class TrialCompletionResponse(BaseModel):
    score: float
    state: dict[str, Any]
    trial_id: str
    surrendered: bool


ADD_TOOL = {"name": "add", "description": "Add two integers.",
            "arguments": [{"name": "a", "type": "int", "description": "The first addend.", "required": True,
                           "default": None, "choices": None},
                          {"name": "b", "type": "int", "description": "The second addend.", "required": True,
                           "default": None, "choices": None}]}


class TaskEnv:
    def __init__(self, task_id: str, prompt: str, answer: str) -> None:
        self.task_id, self.prompt, self.answer = task_id, prompt, answer
        self.trial_counter = -1
        self.trial_states: dict[str, dict[str, Any]] = {}
        self.open_trials = 0
        self.max_open_trials = 0
        self.reset_state()

    def reset_state(self) -> str:
        self.trial_counter += 1
        self.state: dict[str, Any] = {"task_id": self.task_id, "task_prompt": self.prompt,
                                      "trial_id": str(self.trial_counter), "tool_calls": [], "is_attempted": False,
                                      "score": None, "submitted_answer": None, "surrendered": False}
        return self.state["trial_id"]

    def statistics(self) -> dict[str, Any]:
        calls = self.state["tool_calls"]
        failed = [c for c in calls if c["status"] != "success"]
        kinds = ("invalid_tool", "invalid_args", "execution_error")
        return {"total_calls": len(calls), "successful_calls": len(calls) - len(failed), "failed_calls": len(failed),
                "tools_used": sorted({c["tool_name"] for c in calls}),
                "error_types": {k: sum(c["status"] == k for c in failed) for k in kinds}, "tool_calls": list(calls)}

    def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        started = time.perf_counter()
        call = {"tool_name": name, "arguments": arguments, "result": None, "status": "success",
                "error_message": None, "timestamp": datetime.now(UTC).isoformat()}
        if name != "add":
            call.update(status="invalid_tool", error_message=f"Tool {name} not found")
        elif not {"a", "b"} <= set(arguments):
            missing = "a" if "a" not in arguments else "b"
            call.update(status="invalid_args", error_message=f"Missing required argument: {missing}")
        else:
            call["result"] = str(int(arguments["a"]) + int(arguments["b"]))
        call["duration"] = time.perf_counter() - started
        self.state["tool_calls"].append(call)
        return call

    def finish(self, answer: str | None, surrendered: bool) -> TrialCompletionResponse:
        state = self.state
        state["is_attempted"] = True
        if surrendered:
            state["surrendered"] = True
            score = 0.0 if state["score"] is None else state["score"]
        else:
            state["submitted_answer"] = answer
            score = 1.0 if (answer or "").strip() == self.answer else 0.0
            state["score"] = score
        completed = {**state, "tool_statistics": self.statistics()}
        self.trial_states[state["trial_id"]] = completed
        self.open_trials -= 1
        finished_trial_id = self.reset_state()  # Corral's off-by-one: this is the NEW trial's id
        return TrialCompletionResponse(score=score, state=completed, trial_id=finished_trial_id,
                                       surrendered=surrendered)


def create_corral_e2_app(tasks: dict[str, tuple[str, str]]) -> FastAPI:
    """`tasks`: task id -> (prompt, expected answer)."""
    environments = {task_id: TaskEnv(task_id, prompt, answer) for task_id, (prompt, answer) in tasks.items()}
    lock = threading.Lock()
    app = FastAPI()
    app.state.environments = environments
    app.state.verbosities = []

    def env_of(task_id: str) -> TaskEnv:
        if task_id not in environments:
            raise HTTPException(status_code=404, detail="Task not found")
        return environments[task_id]

    def guide(verbosity: ToolVerbosity) -> str:
        app.state.verbosities.append(verbosity.value)
        return ("Available Tools:\nTool: add\nDescription: Add two integers.\nArguments:\n"
                "- a (int, required): The first addend.\n- b (int, required): The second addend.")

    @app.get("/tasks")
    def get_tasks() -> list[str]:
        return list(environments)

    @app.get("/dependency_chain")
    def dependency_chain() -> dict[str, bool]:
        return {"dependency_chain": False}

    @app.get("/tasks/{task_id}/prompt")
    def prompt(task_id: str) -> dict[str, Any]:
        return {"prompt": env_of(task_id).prompt}

    @app.get("/tasks/{task_id}/guide")
    def task_guide(task_id: str, verbosity: ToolVerbosity = ToolVerbosity.FULL) -> dict[str, Any]:
        return {"prompt": f"Task: {env_of(task_id).prompt}\n\n{guide(verbosity)}"}

    @app.get("/tasks/{task_id}/tools/guide")
    def tools_guide(task_id: str, verbosity: ToolVerbosity = ToolVerbosity.FULL) -> dict[str, Any]:
        env_of(task_id)
        return {"prompt": guide(verbosity)}

    @app.get("/tasks/{task_id}/tools")
    def tools(task_id: str, verbosity: ToolVerbosity = ToolVerbosity.FULL) -> dict[str, Any]:
        env_of(task_id)
        app.state.verbosities.append(verbosity.value)
        return {"tools": [ADD_TOOL]}

    @app.post("/tasks/{task_id}/tools/execute")
    def execute(task_id: str, request: ToolRequest) -> dict[str, Any]:
        env = env_of(task_id)
        with lock:
            return {"result": env.call_tool(request.tool_name, request.arguments)}

    @app.get("/tasks/{task_id}/state")
    def state(task_id: str) -> dict[str, Any]:
        return env_of(task_id).state

    @app.post("/tasks/{task_id}/submit")
    def submit(task_id: str, answer: dict) -> TrialCompletionResponse:
        env = env_of(task_id)
        with lock:
            return env.finish(answer["answer"], surrendered=False)

    @app.post("/tasks/{task_id}/surrender")
    def surrender(task_id: str) -> TrialCompletionResponse:
        env = env_of(task_id)
        with lock:
            return env.finish(None, surrendered=True)

    @app.get("/tasks/{task_id}/status")
    def status(task_id: str) -> dict[str, Any]:
        env = env_of(task_id)
        return {"is_attempted": env.state["is_attempted"], "score": env.state["score"],
                "submitted_answer": env.state["submitted_answer"], "tool_statistics": env.statistics()}

    @app.get("/tasks/{task_id}/trials")
    def trials(task_id: str) -> dict[str, Any]:
        return {"trials": env_of(task_id).trial_states}

    @app.get("/tasks/{task_id}/trials/{trial_id}")
    def trial(task_id: str, trial_id: str) -> dict[str, Any]:
        found = env_of(task_id).trial_states.get(trial_id)
        if found is None:
            raise HTTPException(status_code=404, detail="Trial not found")
        return {"trial_state": found}

    @app.post("/tasks/{task_id}/configure")
    def configure(task_id: str) -> dict[str, Any]:
        env = env_of(task_id)
        with lock:
            env.open_trials += 1
            env.max_open_trials = max(env.max_open_trials, env.open_trials)
        return {"status": "No external app/service configuration needed for this trial.", "task_id": task_id,
                "trial_id": env.state["trial_id"]}

    return app
