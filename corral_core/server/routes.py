"""The REST routes: Corral's task routes, our trial routes, and the suite-level routes.

The read/act routes exist twice, under `/tasks/{task_id}` (Corral's one current trial per task)
and under `/trials/{trial_id}` (isolated trial runtimes); one factory registers both, with an
async resolver dependency (no thread hop) that finds the target or answers 404. Handlers are sync
and run in the threadpool, because tools and scorers may block.

No `from __future__ import annotations` here: FastAPI must see the local `Annotated` aliases.
"""


import contextlib
import hashlib
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, HTTPException, Path, Query, Request

from corral_core.server.runtime import (
    DocumentationViewError,
    NotFoundError,
    ServerRuntime,
    Target,
    TaskSlot,
    TrialRuntime,
)
from corral_core.server.schemas import (
    ERRORS_404,
    ERRORS_409,
    ERRORS_422,
    ConfigureResponse,
    McpToolsResponse,
    PromptResponse,
    SafeJSONResponse,
    StatusResponse,
    SubmitRequest,
    ToolExecuteResponse,
    ToolRequest,
    ToolsResponse,
    TrialCompletionResponse,
    TrialCreatedResponse,
    TrialCreateRequest,
)
from corral_core.tools import DocStyle, ToolVerbosity, parse_style, parse_verbosity
from corral_core.tracing import TRACE_HEADERS, span

_LEVELS = ", ".join(level.value for level in ToolVerbosity)
VerbosityParam = Annotated[
    str | None,
    Query(description=f"Tool description detail, case-insensitive: {_LEVELS}. Omitted means `full`."),
]
StyleParam = Annotated[
    str | None,
    Query(description="How tool documentation is rendered: `corral` (default; Corral's text, rule by rule) or "
                      "`tidy` (ours: the Returns section from brief up, `full` without tag markers, choices listed)."),
]


def query_error(name: str, value: Any, message: str) -> HTTPException:
    """A 422 whose `detail` is FastAPI's array of errors, as for any other invalid parameter."""
    return HTTPException(422, [{"type": "enum", "loc": ["query", name], "msg": message, "input": value}])


CloseParam = Annotated[
    bool,
    Query(description="On a trial runtime: close it once the trial is finished, as DELETE /trials/{trial_id} "
                      "does (the answer says `closed: true`). Ignored by the task routes."),
]


def _level(verbosity: str | None) -> ToolVerbosity:
    try:
        return parse_verbosity(verbosity)
    except ValueError as exc:
        raise query_error("verbosity", verbosity, str(exc)) from None


def _style(style: str | None) -> DocStyle:
    try:
        return parse_style(style)
    except ValueError as exc:
        raise query_error("style", style, str(exc)) from None


def _json(content: Any) -> SafeJSONResponse:
    return SafeJSONResponse(content)


# --- the work of the routes every trial takes (also served by server/hot_routes.py) -------------------

def tool_call(runtime: ServerRuntime, target: Target, request: ToolRequest, trace: dict[str, str] | None,
              route: str = "/trials/{trial_id}/tools/execute") -> SafeJSONResponse:
    """POST .../tools/execute, in a SERVER span for the request (continuing the caller's `trace`), the
    `execute_tool` span its child."""
    with _request_span("POST", route, trace):
        return _json({"result": runtime.execute(target, request.tool_name, request.arguments)})


def _request_span(method: str, route: str, trace: Mapping[str, str] | None) -> Any:
    """The span of a request the environment server serves (kind SERVER, the HTTP conventions' name and
    attributes), continuing the caller's trace context."""
    return span(f"{method} {route}", {"http.request.method": method, "http.route": route}, parent=trace,
                kind="server")


def finish(runtime: ServerRuntime, target: Target, answer: Any, *, surrender: bool, close: bool) -> SafeJSONResponse:
    """POST .../submit and .../surrender. `?close=true` on a trial runtime: closed with its answer, as
    DELETE /trials/{id} would (one round trip fewer per trial; the task routes ignore it)."""
    completion = runtime.finish(target, answer, surrender=surrender)
    if close and isinstance(target, TrialRuntime):
        with contextlib.suppress(NotFoundError):  # closed meanwhile by a DELETE: closed all the same
            runtime.close_trial(target.trial_id)
        completion["closed"] = True
    return _json(completion)


def open_trial_response(runtime: ServerRuntime, task_id: str, request: TrialCreateRequest | None, base_url: str,
                        trace: Mapping[str, str] | None = None) -> SafeJSONResponse:
    """POST /tasks/{task_id}/trials; `base_url` is the request's, for the trial's `mcp_url`; `trace` the
    caller's trace context (the trial's agent span), which the request's SERVER span continues."""
    with _request_span("POST", "/tasks/{task_id}/trials", trace):
        return _open_trial(runtime, task_id, request, base_url)


def _open_trial(runtime: ServerRuntime, task_id: str, request: TrialCreateRequest | None, base_url: str
                ) -> SafeJSONResponse:
    request = request or TrialCreateRequest()
    level = _level(request.verbosity).value if request.verbosity is not None else None
    meta: dict[str, Any] = {"benchmark_id": request.benchmark_id, "arm": request.arm,
                            "trial_index": request.trial_index}
    if request.variant is not None or request.components is not None:
        meta.update(variant=request.variant, components=request.components)
    try:
        runtime_ = runtime.open_trial(task_id, episode_id=request.episode_id,
                                      benchmark_id=request.benchmark_id, meta=meta, inputs=request.inputs,
                                      approval=request.approval, variant=request.variant,
                                      components=request.components)
    except DocumentationViewError as exc:
        raise HTTPException(422, [{"type": "value_error", "loc": ["body", exc.key], "msg": str(exc),
                                   "input": exc.value}]) from None
    trial_id = runtime_.trial_id
    runtime_.verbosity = level
    mcp_url = f"{base_url.rstrip('/')}/trials/{trial_id}/mcp" + (f"?verbosity={level}" if level else "")
    created: dict[str, Any] = {"trial_id": trial_id, "trial_runtime_id": trial_id, "task_id": task_id,
                               "workspace": runtime_.workspace, "mcp_url": mcp_url}
    # what an agent asks first: sent now, it spares a GET /prompt round trip (an environment that
    # cannot give it now leaves it out, and GET /prompt says why)
    with contextlib.suppress(Exception):
        created["prompt"] = runtime_.env.get_task_prompt()
    return _json(created)


def _trace_of(http: Request) -> dict[str, str] | None:
    """The request's W3C trace headers (the caller's span), if any."""
    return {key: http.headers[key] for key in TRACE_HEADERS if key in http.headers} or None


def add_target_routes(
    router: APIRouter,
    runtime: ServerRuntime,
    prefix: str,
    resolve: Callable[..., Awaitable[Target]],
    tag: str,
) -> None:
    """Register the read/act routes under `prefix` for targets found by `resolve`."""
    TargetDep = Annotated[Target, Depends(resolve)]
    get = router.get
    post = router.post

    @get(f"{prefix}/prompt", tags=[tag], response_model=PromptResponse, responses=ERRORS_404)
    def prompt(target: TargetDep) -> SafeJSONResponse:
        """The task prompt without tool descriptions (a list means multimodal parts)."""
        return _json({"prompt": target.env.get_task_prompt()})

    @get(f"{prefix}/guide", tags=[tag], response_model=PromptResponse, responses={**ERRORS_404, **ERRORS_422})
    def guide(target: TargetDep, verbosity: VerbosityParam = None, style: StyleParam = None) -> SafeJSONResponse:
        """"Task: <prompt>" followed by the tools guide at `verbosity`."""
        return _json({"prompt": target.env.task_guide(_level(verbosity), _style(style))})

    @get(f"{prefix}/tools/guide", tags=[tag], response_model=PromptResponse,
         responses={**ERRORS_404, **ERRORS_422})
    def tools_guide(target: TargetDep, verbosity: VerbosityParam = None, style: StyleParam = None
                    ) -> SafeJSONResponse:
        """The text guide of the task's tools only."""
        return _json({"prompt": target.env.tools_guide(_level(verbosity), _style(style))})

    @get(f"{prefix}/tools", tags=[tag], response_model=ToolsResponse, responses={**ERRORS_404, **ERRORS_422})
    def tools(target: TargetDep, verbosity: VerbosityParam = None, style: StyleParam = None) -> SafeJSONResponse:
        """The task's tools in OpenAI function format, each also carrying Corral E2's `name`,
        `description` and `arguments` (`{name, type, description, required, default, choices}`)."""
        return _json({"tools": target.env.tools_list(_level(verbosity), _style(style))})

    @get(f"{prefix}/tools/mcp", tags=[tag], response_model=McpToolsResponse,
         responses={**ERRORS_404, **ERRORS_422})
    def tools_mcp(target: TargetDep, verbosity: VerbosityParam = None, style: StyleParam = None
                  ) -> SafeJSONResponse:
        """The task's tools as MCP definitions, with the sha256 of their canonical JSON."""
        listed = target.env.tools_mcp(_level(verbosity), _style(style))
        digest = hashlib.sha256(json.dumps(listed, sort_keys=True).encode()).hexdigest()
        return _json({"tools": listed, "mcp_schema_sha256": digest})

    @get(f"{prefix}/status", tags=[tag], response_model=StatusResponse, responses=ERRORS_404)
    def status(target: TargetDep) -> SafeJSONResponse:
        """The current trial: attempted?, score, answer, tool statistics."""
        return _json(runtime.status(target))

    @get(f"{prefix}/state", tags=[tag], responses=ERRORS_404)
    def state(target: TargetDep) -> SafeJSONResponse:
        """The current trial's full snapshot."""
        return _json(target.env.snapshot())

    @post(f"{prefix}/tools/execute", tags=[tag], response_model=ToolExecuteResponse,
          responses={**ERRORS_404, **ERRORS_409, **ERRORS_422})
    def execute(target: TargetDep, request: ToolRequest, http: Request) -> SafeJSONResponse:
        """Run a tool. Tool failures are HTTP 200 with a non-success `status` (Corral's shape)."""
        return tool_call(runtime, target, request, _trace_of(http), f"{prefix}/tools/execute")

    @post(f"{prefix}/submit", tags=[tag], response_model=TrialCompletionResponse,
          responses={**ERRORS_404, **ERRORS_409, **ERRORS_422})
    def submit(target: TargetDep, request: SubmitRequest, close: CloseParam = False) -> SafeJSONResponse:
        """Score an answer; `trial_id` is the trial that just ended."""
        return finish(runtime, target, request.answer, surrender=False, close=close)

    @post(f"{prefix}/surrender", tags=[tag], response_model=TrialCompletionResponse,
          responses={**ERRORS_404, **ERRORS_409})
    def surrender(target: TargetDep, close: CloseParam = False) -> SafeJSONResponse:
        """Give up the trial (score 0, or the score already set)."""
        return finish(runtime, target, None, surrender=True, close=close)

    @post(f"{prefix}/configure", tags=[tag], response_model=ConfigureResponse, responses=ERRORS_404)
    def configure(target: TargetDep) -> SafeJSONResponse:
        """Set up external apps or services for the current trial."""
        return _json(runtime.configure(target))


def build_router(runtime: ServerRuntime) -> APIRouter:
    """Every task, trial, episode and suite route of the server."""
    router = APIRouter()
    examples = runtime.task_ids[:3]
    TaskId = Annotated[str, Path(description="A task id from GET /tasks", examples=examples)]
    TrialId = Annotated[str, Path(description="A trial id from POST /tasks/{task_id}/trials")]

    async def resolve_task(task_id: TaskId) -> TaskSlot:
        return runtime.slot(task_id)

    async def resolve_trial(trial_id: TrialId) -> TrialRuntime:
        return runtime.trial(trial_id)

    add_target_routes(router, runtime, "/tasks/{task_id}", resolve_task, "tasks")
    add_target_routes(router, runtime, "/trials/{trial_id}", resolve_trial, "trials")

    @router.get("/tasks", tags=["suite"], response_model=list[str])
    async def tasks() -> SafeJSONResponse:
        """The task ids, in the suite's order."""
        return _json(runtime.task_ids)

    @router.get("/dependency_chain", tags=["suite"])
    async def dependency_chain() -> SafeJSONResponse:
        """Whether any task depends on another's output."""
        return _json({"dependency_chain": bool(runtime.suite.chained)})

    @router.get("/dependency_graph", tags=["suite"], response_model=dict[str, list[str]])
    async def dependency_graph() -> SafeJSONResponse:
        """Each task's dependencies, sorted."""
        graph = runtime.suite.dependency_graph()
        return _json({task: sorted(deps) for task, deps in graph.items()})

    @router.get("/tasks/{task_id}/trials", tags=["tasks"], responses=ERRORS_404)
    async def trials(task_id: TaskId) -> SafeJSONResponse:
        """Snapshots of the task's finished trials (task routes and trial runtimes), oldest first."""
        return _json({"trials": runtime.finished_trials(task_id)})

    @router.get("/tasks/{task_id}/trials/{trial_id}", tags=["tasks"], responses=ERRORS_404)
    def trial_state(task_id: TaskId, trial_id: Annotated[str, Path()]) -> SafeJSONResponse:
        """One trial of the task: finished, current, or an open runtime."""
        return _json({"trial_state": runtime.trial_snapshot(task_id, trial_id)})

    @router.get("/tasks/{task_id}/last_score", tags=["tasks"], responses=ERRORS_404)
    async def last_score(task_id: TaskId) -> SafeJSONResponse:
        """The score of the task's most recently finished trial."""
        return _json(runtime.last_score(task_id))

    @router.post("/tasks/{task_id}/trials", tags=["trials"], response_model=TrialCreatedResponse,
                 responses={**ERRORS_404, **ERRORS_409, **ERRORS_422})
    def open_trial(task_id: TaskId, http: Request, request: Annotated[TrialCreateRequest | None, Body()] = None
                   ) -> SafeJSONResponse:
        """Open an isolated trial; trials given the same `episode_id` share upstream outputs. With
        `approval`, the trial applies that policy to confirm-level tools if it is stricter than the
        server's own; a looser one is refused (409)."""
        return open_trial_response(runtime, task_id, request, str(http.base_url), _trace_of(http))

    @router.delete("/trials/{trial_id}", tags=["trials"], responses=ERRORS_404)
    def close_trial(trial_id: TrialId) -> SafeJSONResponse:
        """Close a trial runtime and free its environment."""
        runtime.close_trial(trial_id)
        return _json({"status": "closed", "trial_id": trial_id, "trial_runtime_id": trial_id})

    @router.delete("/episodes/{episode_id}", tags=["trials"], responses=ERRORS_404)
    async def close_episode(episode_id: str) -> SafeJSONResponse:
        """Forget an episode's shared upstream outputs."""
        runtime.close_episode(episode_id)
        return _json({"status": "closed", "episode_id": episode_id})

    return router
