"""`CorralRouter`: the agent's side of the environment REST API (Corral's method names).

One pooled keep-alive `httpx.Client` per router, safe to share between threads. Every method but
`execute_tool` and `supports_dependency_chain` raises a typed `CorralHTTPError` on failure;
`execute_tool` never raises and reports tool-level failures (`invalid_args`, `blocked`, ...) as
`success=False`, unlike Corral, where they looked like successes.

`open_trial` gives a `TrialClient`: the same task methods, routed to an isolated trial runtime
(`/trials/{trial_id}/...`), which is what parallel runs use.
"""

from __future__ import annotations

import contextlib
import json
import socket
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx

__all__ = [
    "Conflict",
    "ConnectionFailed",
    "CorralHTTPError",
    "CorralRouter",
    "NotFound",
    "TaskTrialResult",
    "ToolResponse",
    "TrialClient",
    "Unauthorized",
    "ValidationFailed",
]


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


def nodelay_transport() -> httpx.HTTPTransport:
    """A pooled keep-alive transport with Nagle's algorithm off.

    httpcore writes a POST's headers and body separately; with Nagle on, the body waits for the
    server's delayed ACK, which costs ~40 ms per request on loopback instead of ~1 ms.
    """
    return httpx.HTTPTransport(
        limits=httpx.Limits(max_connections=64, max_keepalive_connections=32),
        socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
    )


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

    def _verbosity_params(self, verbosity: str | None) -> dict[str, str]:
        level = verbosity if verbosity is not None else self.default_verbosity
        return {} if level is None else {"verbosity": str(getattr(level, "value", level))}

    def set_verbosity(self, verbosity: str | None) -> None:
        """Verbosity used when a method is called without one (None: the server's, `full`)."""
        self.default_verbosity = None if verbosity is None else str(getattr(verbosity, "value", verbosity))

    def get_task_prompt(self, task_id: str) -> str | list[dict[str, Any]]:
        return self._get(task_id, "/prompt")["prompt"]

    def get_task_guide(self, task_id: str, verbosity: str | None = None) -> str:
        return self._get(task_id, "/guide", params=self._verbosity_params(verbosity))["prompt"]

    def get_tools_guide(self, task_id: str, verbosity: str | None = None) -> str:
        return self._get(task_id, "/tools/guide", params=self._verbosity_params(verbosity))["prompt"]

    def get_available_tools_for_task(self, task_id: str, verbosity: str | None = None) -> dict[str, Any]:
        """`{"tools": [OpenAI function definitions]}`."""
        return self._get(task_id, "/tools", params=self._verbosity_params(verbosity))

    def get_tools_mcp(self, task_id: str, verbosity: str | None = None) -> dict[str, Any]:
        """`{"tools": [MCP tool definitions], "mcp_schema_sha256": hex}`."""
        return self._get(task_id, "/tools/mcp", params=self._verbosity_params(verbosity))

    def execute_tool(self, task_id: str, tool_name: str, arguments: dict[str, Any] | None = None) -> ToolResponse:
        """Run one tool. Never raises: transport and HTTP errors come back as `success=False`."""
        try:
            body = self._post(task_id, "/tools/execute", json={"tool_name": tool_name, "arguments": arguments or {}})
            call = body["result"]
        except (CorralHTTPError, KeyError, TypeError) as exc:
            return ToolResponse(success=False, error=str(exc))
        ok = call.get("status") == "success"
        return ToolResponse(success=ok, result=call.get("result"), error=call.get("error_message"), tool_call=call)

    def submit_answer(self, task_id: str, answer: str) -> TaskTrialResult:
        return _completion(task_id, self._post(task_id, "/submit", json={"answer": answer}))

    def surrender_task(self, task_id: str) -> TaskTrialResult:
        return _completion(task_id, self._post(task_id, "/surrender"))

    def get_task_status(self, task_id: str) -> dict[str, Any]:
        return self._get(task_id, "/status")

    def get_task_state(self, task_id: str) -> dict[str, Any]:
        """The current trial's full snapshot."""
        return self._get(task_id, "/state")

    def configure_additional_apps(self, task_id: str, timeout: float | None = None) -> dict[str, Any]:
        """`{"status", "task_id", "trial_id"}`; `timeout` (seconds) bounds only this request."""
        kwargs: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
        return self._post(task_id, "/configure", **kwargs)


class CorralRouter(_TaskApi):
    """Client of a corral-tui (or Corral) environment server."""

    def __init__(
        self,
        base_url: str = "http://localhost:8000",
        default_verbosity: str | None = "brief",
        token: str | None = None,
        timeout: float = 30.0,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.default_verbosity = default_verbosity
        self._transport = _Transport(self.base_url, token, timeout)

    def _prefix(self, task_id: str) -> str:
        return f"/tasks/{_seg(task_id)}"

    # --- suite-level --------------------------------------------------------------------------

    def get_available_tasks(self) -> list[str]:
        return self._transport.request("GET", "/tasks")

    def supports_dependency_chain(self) -> bool:
        """Whether the suite chains tasks. Like Corral, any failure reads as False."""
        try:
            return bool(self._transport.request("GET", "/dependency_chain")["dependency_chain"])
        except (CorralHTTPError, KeyError, TypeError):
            return False

    def get_dependency_graph(self) -> dict[str, list[str]]:
        return self._transport.request("GET", "/dependency_graph")

    def get_last_score(self, task_id: str) -> dict[str, Any]:
        """`{"task_id", "trial_id", "score"}` of the task's most recently finished trial."""
        return self._get(task_id, "/last_score")

    def get_trial_state(self, task_id: str, trial_id: str) -> dict[str, Any]:
        return self._get(task_id, f"/trials/{_seg(trial_id)}")["trial_state"]

    def get_trials(self, task_id: str) -> dict[str, dict[str, Any]]:
        return self._get(task_id, "/trials")["trials"]

    def health(self) -> dict[str, Any]:
        return self._transport.request("GET", "/health")

    # --- trial runtimes, episodes, approvals ----------------------------------------------------

    def open_trial(self, task_id: str, episode_id: str | None = None, **meta: Any) -> TrialClient:
        """Open an isolated trial of `task_id` (meta: benchmark_id, arm, trial_index)."""
        body = {k: v for k, v in {"episode_id": episode_id, **meta}.items() if v is not None}
        created = self._transport.request("POST", f"/tasks/{_seg(task_id)}/trials", json=body)
        return TrialClient(self, created["trial_id"], created["task_id"], created.get("workspace"))

    def close_trial(self, trial_id: str) -> dict[str, Any]:
        return self._transport.request("DELETE", f"/trials/{_seg(trial_id)}")

    def close_episode(self, episode_id: str) -> dict[str, Any]:
        return self._transport.request("DELETE", f"/episodes/{_seg(episode_id)}")

    def list_approvals(self) -> list[dict[str, Any]]:
        """Tool calls waiting for a decision on the server."""
        return self._transport.request("GET", "/approvals")["approvals"]

    def decide_approval(self, approval_id: str, approved: bool, reason: str = "") -> dict[str, Any]:
        body = {"approved": bool(approved), "reason": reason}
        return self._transport.request("POST", f"/approvals/{_seg(approval_id)}", json=body)

    def close(self) -> None:
        self._transport.close()

    def __enter__(self) -> CorralRouter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class TrialClient(_TaskApi):
    """One open trial runtime. Same task methods as `CorralRouter`, same `task_id` arguments
    (checked against the trial's task), routed to `/trials/{trial_id}/...`."""

    def __init__(self, router: CorralRouter, trial_id: str, task_id: str, workspace: str | None = None) -> None:
        self.router = router
        self.trial_id = trial_id
        self.task_id = task_id
        self.workspace = workspace
        self.default_verbosity = router.default_verbosity
        self._transport = router._transport
        self.closed = False

    def _prefix(self, task_id: str) -> str:
        if task_id != self.task_id:
            raise ValueError(f"trial {self.trial_id} belongs to task {self.task_id!r}, not {task_id!r}")
        return f"/trials/{_seg(self.trial_id)}"

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


def _completion(task_id: str, body: dict[str, Any]) -> TaskTrialResult:
    state = body.get("state") or {}
    return TaskTrialResult(
        task_id=task_id,
        trial_id=str(body.get("trial_id")),
        score=float(body.get("score") or 0.0),
        state=state,
        surrendered=bool(body.get("surrendered", False)),
        explanation=body.get("explanation"),
        tool_statistics=state.get("tool_statistics") or {},
    )
