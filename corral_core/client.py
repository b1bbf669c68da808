"""`CorralRouter`: the agent's side of the environment REST API (Corral's method names).

One pooled keep-alive `httpx.Client` per router, safe to share between threads. Every method but
`execute_tool` and `supports_dependency_chain` raises a typed `CorralHTTPError` on failure;
`execute_tool` never raises and reports tool-level failures (`invalid_args`, `blocked`, ...) as
`success=False`, unlike Corral, where they looked like successes.

`open_trial` gives a `TrialClient`: the same task methods, routed to an isolated trial runtime
(`/trials/{trial_id}/...`), which is what parallel runs use. It works against any Corral server:

- a server with trial routes (ours, Corral E2c's `trial_runtime_id`) gets isolated runtimes;
- a server without them (Corral E2, only `/tasks/{id}/...`) gets a `TaskRouteTrial`: the task
  routes themselves, one running trial per task at a time (a lock per task), started with
  `POST /configure` and ended by submit or surrender (an abandoned trial is surrendered so the next
  one starts clean). `trial_routes()` says which, for the run's output.

Corral's quirks are handled here: a finished trial's id is read from its state (Corral's
completion answer names the *next* trial), and verbosity names are sent in lowercase (Corral's
servers answer 422 to "BRIEF").
"""

from __future__ import annotations

import contextlib
import copy
import json
import logging
import re
import secrets
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast
from urllib.parse import quote

import httpx

from corral_core import http_lanes
from corral_core.domain import Fault, ToolStatus
from corral_core.tracing import inject

__all__ = [
    "NO_TRIAL_ROUTES",
    "Conflict",
    "ConnectionFailed",
    "CorralHTTPError",
    "CorralRouter",
    "NotFound",
    "TaskRouteTrial",
    "TaskTrialResult",
    "ToolResponse",
    "TrialClient",
    "Unauthorized",
    "ValidationFailed",
]


log = logging.getLogger(__name__)

NO_TRIAL_ROUTES = ("the environment server at {url} has no trial routes (a Corral E2 server): running its tasks "
                   "over the task routes, one trial per task at a time")
KEEPALIVE_EXPIRY = 3.0  # seconds an idle connection is reused (corral's servers close them after 5 s)
_TRIALS_PATH = re.compile(r"^/tasks/\{[^}/]+\}/trials$")


class CorralHTTPError(Exception):
    """The server answered with an error status (or could not be reached: `status_code` None)."""

    def __init__(self, status_code: int | None, detail: Any, *, method: str = "", url: str = "") -> None:
        self.status_code = status_code
        self.detail = detail
        self.method = method
        self.url = url
        where = f"{method} {url}: " if method else ""
        code = f"HTTP {status_code}: " if status_code is not None else ""
        super().__init__(f"{where}{code}{_detail_text(detail)}")


class NotFound(CorralHTTPError):
    """404: unknown task, trial, episode or approval."""


class Conflict(CorralHTTPError):
    """409: e.g. submitting a trial that already ended."""


class Unauthorized(CorralHTTPError):
    """401: missing or wrong bearer token."""


class ValidationFailed(CorralHTTPError):
    """422: the request body or a parameter was invalid (e.g. an unknown verbosity level)."""


class ConnectionFailed(CorralHTTPError):
    """The server could not be reached or did not answer in time."""


_ERRORS_BY_STATUS: dict[int, type[CorralHTTPError]] = {
    401: Unauthorized,
    404: NotFound,
    409: Conflict,
    422: ValidationFailed,
}


def _detail_text(detail: Any) -> str:
    if isinstance(detail, list):  # FastAPI validation errors
        parts = []
        for item in detail:
            if isinstance(item, dict):
                loc = ".".join(str(p) for p in item.get("loc", ()))
                parts.append(f"{loc}: {item.get('msg', item)}" if loc else str(item.get("msg", item)))
            else:
                parts.append(str(item))
        return "; ".join(parts)
    return str(detail)


@dataclass
class ToolResponse:
    """One tool call as the agent sees it. `result` is the tool's output text."""

    success: bool
    result: Any = None
    error: str | None = None
    tool_call: dict[str, Any] | None = None
    # "environment" when the environment failed, not the tool: the server could not be reached (refused,
    # reset, no answer), or it says so of the call (its `fault`); a trial runner then faults the trial
    fault: str | None = None


@dataclass
class TaskTrialResult:
    """A finished trial (Corral's TaskTrialResult)."""

    task_id: str
    trial_id: str
    score: float
    state: dict[str, Any] = field(default_factory=dict)
    surrendered: bool = False
    explanation: str | None = None
    tool_statistics: dict[str, Any] = field(default_factory=dict)
    error_message: str | None = None

    @property
    def success(self) -> bool:
        return self.score > 0 and self.error_message is None and not self.surrendered

    @property
    def tool_execution_duration(self) -> float:
        calls = self.tool_statistics.get("tool_calls") or []
        return float(sum(c.get("duration") or 0.0 for c in calls if isinstance(c, dict)))


def nodelay_transport() -> httpx.BaseTransport:
    """Keep-alive connections with Nagle's algorithm off, one per request in flight (corral_core/http_lanes.py:
    a pool of hundreds of connections was scanned twice per request under one lock).

    httpcore writes a POST's headers and body separately; with Nagle on, the body waits for the
    server's delayed ACK, which costs ~40 ms per request on loopback instead of ~1 ms.
    """
    # Kept alive (a closed one costs a handshake per request), but idle for less than our server's 5 s
    # keep-alive: at equal limits, a connection the server was closing got reused and the request failed
    # with "connection reset by peer".
    return http_lanes.lane_transport(keepalive_expiry=KEEPALIVE_EXPIRY,
                                     socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)])


def _seg(value: str) -> str:
    """One URL path segment, escaped (task ids may hold '/', spaces, ...)."""
    return quote(str(value), safe="")


class _Transport:
    """The shared HTTP plumbing: one pooled client, JSON in and out, typed errors."""

    def __init__(self, base_url: str, token: str | None, timeout: float) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.base_url = base_url.rstrip("/")
        self.http = httpx.Client(
            base_url=self.base_url,
            headers=headers,
            timeout=timeout,
            transport=nodelay_transport(),
        )

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        if "json" in kwargs:  # ASCII JSON: a lone surrogate (an LLM can emit one) travels as "\\ud800"
            kwargs["content"] = json.dumps(kwargs.pop("json"), separators=(",", ":"), allow_nan=False).encode()
            kwargs["headers"] = {**kwargs.get("headers", {}), "Content-Type": "application/json"}
        trace = inject({})  # the agent's span, the parent of the server's execute_tool span
        if trace:
            kwargs["headers"] = {**kwargs.get("headers", {}), **trace}
        try:
            response = self.http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise ConnectionFailed(
                None, f"cannot reach the environment server at {self.base_url}: {exc}",
                method=method, url=path,
            ) from exc
        if response.status_code >= 400:
            try:
                detail = response.json().get("detail", response.text)
            except (ValueError, AttributeError):
                detail = response.text
            error_type = _ERRORS_BY_STATUS.get(response.status_code, CorralHTTPError)
            raise error_type(response.status_code, detail, method=method, url=path)
        try:
            return response.json()
        except ValueError as exc:
            raise CorralHTTPError(
                response.status_code, f"the server answered with non-JSON: {response.text[:200]!r}",
                method=method, url=path,
            ) from exc

    def close(self) -> None:
        self.http.close()


class _TaskApi:
    """The Corral task methods, over a path prefix chosen by the subclass."""

    _transport: _Transport
    default_verbosity: str | None

    def _prefix(self, task_id: str) -> str:
        raise NotImplementedError

    def _get(self, task_id: str, suffix: str, **kwargs: Any) -> Any:
        return self._transport.request("GET", self._prefix(task_id) + suffix, **kwargs)

    def _post(self, task_id: str, suffix: str, **kwargs: Any) -> Any:
        return self._transport.request("POST", self._prefix(task_id) + suffix, **kwargs)

    doc_style: str | None = None

    def _verbosity_params(self, verbosity: str | None) -> dict[str, str]:
        level = verbosity if verbosity is not None else self.default_verbosity
        params = {} if level is None else {"verbosity": str(getattr(level, "value", level)).strip().lower()}
        if self.doc_style is not None:  # our servers' opt-in rendering; other servers ignore the parameter
            params["style"] = self.doc_style
        return params

    def set_verbosity(self, verbosity: str | None) -> None:
        """Verbosity used when a method is called without one (None: the server's, `full`)."""
        self.default_verbosity = None if verbosity is None else str(getattr(verbosity, "value", verbosity))

    def get_task_prompt(self, task_id: str) -> str | list[dict[str, Any]]:
        return cast("str | list[dict[str, Any]]", self._get(task_id, "/prompt")["prompt"])

    def get_task_guide(self, task_id: str, verbosity: str | None = None) -> str:
        return cast("str", self._get(task_id, "/guide", params=self._verbosity_params(verbosity))["prompt"])

    def get_tools_guide(self, task_id: str, verbosity: str | None = None) -> str:
        return cast("str", self._get(task_id, "/tools/guide", params=self._verbosity_params(verbosity))["prompt"])

    def get_available_tools_for_task(self, task_id: str, verbosity: str | None = None) -> dict[str, Any]:
        """`{"tools": [OpenAI function definitions]}`."""
        return cast("dict[str, Any]", self._get(task_id, "/tools", params=self._verbosity_params(verbosity)))

    def mcp_endpoint(self, task_id: str) -> str:
        """The absolute URL of the MCP endpoint (Streamable HTTP) for this task or trial, for any MCP client."""
        return self._transport.base_url + self._prefix(task_id) + "/mcp"

    def get_tools_mcp(self, task_id: str, verbosity: str | None = None) -> dict[str, Any]:
        """`{"tools": [MCP tool definitions], "mcp_schema_sha256": hex}`."""
        return cast("dict[str, Any]", self._get(task_id, "/tools/mcp", params=self._verbosity_params(verbosity)))

    def execute_tool(self, task_id: str, tool_name: str, arguments: dict[str, Any] | None = None) -> ToolResponse:
        """Run one tool. Never raises: transport and HTTP errors come back as `success=False`."""
        try:
            body = self._post(task_id, "/tools/execute", json={"tool_name": tool_name, "arguments": arguments or {}})
            call = body["result"]
        except ConnectionFailed as exc:  # the server vanished: not the tool's error, nor the agent's
            return ToolResponse(success=False, error=str(exc), fault=Fault.ENVIRONMENT)
        except (CorralHTTPError, KeyError, TypeError) as exc:
            return ToolResponse(success=False, error=str(exc))
        ok = call.get("status") == ToolStatus.SUCCESS
        return ToolResponse(success=ok, result=call.get("result"), error=call.get("error_message"), tool_call=call,
                            fault=call.get("fault") if isinstance(call.get("fault"), str) else None)

    def submit_answer(self, task_id: str, answer: str) -> TaskTrialResult:
        return _completion(task_id, self._post(task_id, "/submit", json={"answer": answer}))

    def surrender_task(self, task_id: str) -> TaskTrialResult:
        return _completion(task_id, self._post(task_id, "/surrender"))

    def get_task_status(self, task_id: str) -> dict[str, Any]:
        return cast("dict[str, Any]", self._get(task_id, "/status"))

    def get_task_state(self, task_id: str) -> dict[str, Any]:
        """The current trial's full snapshot."""
        return cast("dict[str, Any]", self._get(task_id, "/state"))

    def configure_additional_apps(self, task_id: str, timeout: float | None = None) -> dict[str, Any]:
        """`{"status", "task_id", "trial_id"}`; `timeout` (seconds) bounds only this request."""
        kwargs: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
        return cast("dict[str, Any]", self._post(task_id, "/configure", **kwargs))


class CorralRouter(_TaskApi):
    """Client of a corral-tui (or Corral) environment server."""

    def __init__(
        self,
        base_url: str = "http://localhost:8000",
        default_verbosity: str | None = "brief",
        token: str | None = None,
        timeout: float = 30.0,
        doc_style: str | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.default_verbosity = default_verbosity
        self.doc_style = doc_style
        self._transport = _Transport(self.base_url, token, timeout)
        self._trial_routes: bool | None = None  # unknown until probed or first used
        self._task_locks: dict[str, threading.Lock] = {}
        self._trial_tools: dict[tuple[str, tuple[tuple[str, str], ...]], dict[str, Any]] = {}
        self._locks_guard = threading.Lock()

    def _prefix(self, task_id: str) -> str:
        return f"/tasks/{_seg(task_id)}"

    # --- suite-level --------------------------------------------------------------------------

    def get_available_tasks(self) -> list[str]:
        return cast("list[str]", self._transport.request("GET", "/tasks"))

    def supports_dependency_chain(self) -> bool:
        """Whether the suite chains tasks. Like Corral, any failure reads as False."""
        try:
            return bool(self._transport.request("GET", "/dependency_chain")["dependency_chain"])
        except (CorralHTTPError, KeyError, TypeError):
            return False

    def get_dependency_graph(self) -> dict[str, list[str]]:
        return cast("dict[str, list[str]]", self._transport.request("GET", "/dependency_graph"))

    def get_last_score(self, task_id: str) -> dict[str, Any]:
        """`{"task_id", "trial_id", "score"}` of the task's most recently finished trial."""
        return cast("dict[str, Any]", self._get(task_id, "/last_score"))

    def get_trial_state(self, task_id: str, trial_id: str) -> dict[str, Any]:
        return cast("dict[str, Any]", self._get(task_id, f"/trials/{_seg(trial_id)}")["trial_state"])

    def get_trials(self, task_id: str) -> dict[str, dict[str, Any]]:
        return cast("dict[str, dict[str, Any]]", self._get(task_id, "/trials")["trials"])

    def health(self) -> dict[str, Any]:
        return cast("dict[str, Any]", self._transport.request("GET", "/health"))

    # --- trial runtimes, episodes, approvals ----------------------------------------------------

    def trial_routes(self) -> bool:
        """Whether the server opens isolated trials (POST /tasks/{id}/trials), from its OpenAPI
        document; a server that has none is a Corral E2 server, driven over its task routes."""
        if self._trial_routes is None:
            try:
                paths = self._transport.request("GET", "/openapi.json").get("paths", {})
            except (CorralHTTPError, AttributeError):
                return True  # no document: try the trial routes, fall back when refused (open_trial)
            self._trial_routes = any(_TRIALS_PATH.match(path) and "post" in operations
                                     for path, operations in paths.items() if isinstance(operations, dict))
            if not self._trial_routes:
                log.warning(NO_TRIAL_ROUTES.format(url=self.base_url))
        return self._trial_routes

    def open_trial(self, task_id: str, episode_id: str | None = None, **meta: Any) -> TrialClient | TaskRouteTrial:
        """Open an isolated trial of `task_id` (meta: benchmark_id, arm, trial_index), or, on a
        server without trial routes, the task's next trial on the task routes (waiting for the
        task's running trial to end)."""
        documentation = {key: meta[key] for key in ("variant", "components") if meta.get(key) is not None}
        if self._trial_routes is False:
            return self._task_route_trial(task_id, documentation)
        body = {k: v for k, v in {"episode_id": episode_id, **meta}.items() if v is not None}
        try:
            created = self._transport.request("POST", f"/tasks/{_seg(task_id)}/trials", json=body)
        except CorralHTTPError as exc:
            if exc.status_code == 405 or (exc.status_code == 404 and exc.detail == "Not Found"):  # no such route
                if self._trial_routes is None:
                    log.warning(NO_TRIAL_ROUTES.format(url=self.base_url))
                self._trial_routes = False
                return self._task_route_trial(task_id, documentation)
            raise
        self._trial_routes = True
        trial_id = created.get("trial_id") or created.get("trial_runtime_id")  # ours | Corral E2c
        client = TrialClient(self, str(trial_id), created.get("task_id", task_id), created.get("workspace"),
                             created.get("mcp_url"), created.get("prompt"))
        client.documentation = documentation
        return client

    def _task_route_trial(self, task_id: str, documentation: dict[str, Any]) -> TaskRouteTrial:
        if documentation:  # the task routes show one documentation: an arm's variant would silently not apply
            raise RuntimeError(f"the server at {self.base_url} has no trial routes, so it cannot show a trial the "
                              f"documentation variant or components it asks for ({documentation})")
        return TaskRouteTrial(self, task_id)

    def trial_tools(self, task_id: str, params: dict[str, str], fetch: Callable[[], dict[str, Any]]
                    ) -> dict[str, Any]:
        """A task's tool listing for trials, fetched once per task and verbosity (and style): every
        trial of a task has the suite's tools, so later trials are spared a GET /tools. A copy each time."""
        key = (task_id, tuple(sorted(params.items())))
        with self._locks_guard:
            listing = self._trial_tools.get(key)
        if listing is None:
            listing = fetch()
            with self._locks_guard:
                self._trial_tools[key] = listing
        return copy.deepcopy(listing)

    def task_lock(self, task_id: str) -> threading.Lock:
        """The lock a `TaskRouteTrial` holds while it runs: one running trial per task."""
        with self._locks_guard:
            return self._task_locks.setdefault(task_id, threading.Lock())

    def close_trial(self, trial_id: str) -> dict[str, Any]:
        return cast("dict[str, Any]", self._transport.request("DELETE", f"/trials/{_seg(trial_id)}"))

    def close_episode(self, episode_id: str) -> dict[str, Any]:
        return cast("dict[str, Any]", self._transport.request("DELETE", f"/episodes/{_seg(episode_id)}"))

    def list_approvals(self) -> list[dict[str, Any]]:
        """Tool calls waiting for a decision on the server."""
        return cast("list[dict[str, Any]]", self._transport.request("GET", "/approvals")["approvals"])

    def approval_policy(self) -> str | None:
        """The server's policy for confirm-level tools (reject, approve, ask); None if it does not say."""
        answer = self._transport.request("GET", "/approvals")
        policy = answer.get("policy") if isinstance(answer, dict) else None
        return policy if isinstance(policy, str) else None

    def decide_approval(self, approval_id: str, approved: bool, reason: str = "") -> dict[str, Any]:
        body = {"approved": bool(approved), "reason": reason}
        return cast("dict[str, Any]", self._transport.request("POST", f"/approvals/{_seg(approval_id)}", json=body))

    def close(self) -> None:
        self._transport.close()

    def __enter__(self) -> CorralRouter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class TrialClient(_TaskApi):
    """One open trial runtime. Same task methods as `CorralRouter`, same `task_id` arguments
    (checked against the trial's task), routed to `/trials/{trial_id}/...`."""

    def __init__(self, router: CorralRouter, trial_id: str, task_id: str, workspace: str | None = None,
                 mcp_path: str | None = None, prompt: str | list[dict[str, Any]] | None = None) -> None:
        self.router = router
        self._opening_prompt = prompt  # the prompt the server sent with the trial, for the first ask
        self.trial_id = trial_id
        self.task_id = task_id
        self.workspace = workspace
        # the trial's MCP endpoint (Streamable HTTP), absolute: hand it to any MCP client
        path = mcp_path or f"/trials/{_seg(trial_id)}/mcp"
        self.mcp_url = path if path.startswith(("http://", "https://")) else router.base_url + path
        self.default_verbosity = router.default_verbosity
        self.doc_style = router.doc_style
        self.documentation: dict[str, Any] = {}  # the variant / components the trial was opened with
        self._transport = router._transport
        self.closed = False
        # set by a runner that closes the trial once it is finished: the submit (or surrender) asks the
        # server to close it too (`?close=true`), which spares the DELETE; a server that does not know
        # the parameter ignores it and close() sends the DELETE as before
        self.close_on_finish = False

    def _prefix(self, task_id: str) -> str:
        if task_id != self.task_id:
            raise ValueError(f"trial {self.trial_id} belongs to task {self.task_id!r}, not {task_id!r}")
        return f"/trials/{_seg(self.trial_id)}"

    def get_task_prompt(self, task_id: str) -> str | list[dict[str, Any]]:
        """The prompt; the first ask is answered from the trial's opening (one round trip fewer)."""
        self._prefix(task_id)
        prompt, self._opening_prompt = self._opening_prompt, None
        return prompt if prompt is not None else super().get_task_prompt(task_id)

    def get_available_tools_for_task(self, task_id: str, verbosity: str | None = None) -> dict[str, Any]:
        """`{"tools": [...]}`, fetched once per task and verbosity by the router (CorralRouter.trial_tools)."""
        self._prefix(task_id)
        fetch = super().get_available_tools_for_task
        key = {**self._verbosity_params(verbosity), "documentation": json.dumps(self.documentation, sort_keys=True)}
        return self.router.trial_tools(task_id, key, lambda: fetch(task_id, verbosity))

    def submit_answer(self, task_id: str, answer: str) -> TaskTrialResult:
        return _completion(task_id, self._finish(task_id, "/submit", json={"answer": answer}))

    def surrender_task(self, task_id: str) -> TaskTrialResult:
        return _completion(task_id, self._finish(task_id, "/surrender"))

    def _finish(self, task_id: str, suffix: str, **kwargs: Any) -> Any:
        if not self.close_on_finish:
            return self._post(task_id, suffix, **kwargs)
        body = self._post(task_id, suffix, params={"close": "true"}, **kwargs)
        if isinstance(body, dict) and body.get("closed") is True:
            self.closed = True
        return body

    def get_last_score(self, task_id: str) -> dict[str, Any]:
        self._prefix(task_id)
        return self.router.get_last_score(task_id)

    def get_trial_state(self, task_id: str, trial_id: str | None = None) -> dict[str, Any]:
        self._prefix(task_id)
        return self.router.get_trial_state(task_id, trial_id or self.trial_id)

    def get_available_tasks(self) -> list[str]:
        return self.router.get_available_tasks()

    def supports_dependency_chain(self) -> bool:
        return self.router.supports_dependency_chain()

    def close(self) -> None:
        """Free the trial runtime on the server (idempotent here; the server answers 404 twice)."""
        if self.closed:
            return
        self.closed = True
        with contextlib.suppress(NotFound):
            self.router.close_trial(self.trial_id)

    def __enter__(self) -> TrialClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class TaskRouteTrial(_TaskApi):
    """The next trial of a task on a server without trial routes (Corral E2): the task routes,
    held for this trial alone until it is submitted, surrendered or closed."""

    def __init__(self, router: CorralRouter, task_id: str) -> None:
        self.router = router
        self.task_id = task_id
        self.default_verbosity = router.default_verbosity
        self.doc_style = router.doc_style
        self._transport = router._transport
        self.workspace: str | None = None
        self.closed = False
        self.finished = False
        self._lock = router.task_lock(task_id)
        self._lock.acquire()
        try:
            configured = router.configure_additional_apps(task_id)  # Corral's runner starts every trial so
        except BaseException:
            self._lock.release()
            raise
        self.server_trial_id = str(configured.get("trial_id")) if isinstance(configured, dict) else None
        self.trial_id = "tk_" + secrets.token_hex(8)  # unique across tasks and runs; the server's ids are not

    def _prefix(self, task_id: str) -> str:
        if task_id != self.task_id:
            raise ValueError(f"trial {self.trial_id} belongs to task {self.task_id!r}, not {task_id!r}")
        return f"/tasks/{_seg(task_id)}"

    def submit_answer(self, task_id: str, answer: str) -> TaskTrialResult:
        result = super().submit_answer(task_id, answer)
        self.finished = True
        return result

    def surrender_task(self, task_id: str) -> TaskTrialResult:
        result = super().surrender_task(task_id)
        self.finished = True
        return result

    def get_last_score(self, task_id: str) -> dict[str, Any]:
        self._prefix(task_id)
        return self.router.get_last_score(task_id)

    def get_trial_state(self, task_id: str, trial_id: str | None = None) -> dict[str, Any]:
        self._prefix(task_id)
        return self.router.get_trial_state(task_id, trial_id or self.server_trial_id or "")

    def get_available_tasks(self) -> list[str]:
        return self.router.get_available_tasks()

    def supports_dependency_chain(self) -> bool:
        return self.router.supports_dependency_chain()

    def close(self) -> None:
        """End the trial: one never submitted is surrendered, so the task's next trial starts clean."""
        if self.closed:
            return
        self.closed = True
        try:
            if not self.finished:
                self.surrender_task(self.task_id)
        except CorralHTTPError as exc:
            log.warning("could not end abandoned trial %s of %s on %s: %s", self.server_trial_id, self.task_id,
                        self.router.base_url, exc)
        finally:
            self._lock.release()

    def __enter__(self) -> TaskRouteTrial:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _completion(task_id: str, body: dict[str, Any]) -> TaskTrialResult:
    state = body.get("state") or {}
    finished = state.get("trial_id") if isinstance(state, dict) else None
    return TaskTrialResult(
        task_id=task_id,
        trial_id=str(finished if finished is not None else body.get("trial_id")),  # Corral's names the next trial
        score=float(body.get("score") or 0.0),
        state=state,
        surrendered=bool(body.get("surrendered", False)),
        explanation=body.get("explanation"),
        tool_statistics=state.get("tool_statistics") or {},
    )
