"""`create_app`: the Corral-compatible environment server as a FastAPI application.

The same app serves the TUI (embedded, in a thread), batch runs and `corral-tui serve`. See
`routes.py` for the task and trial routes; this module adds health, approvals, auth, request
accounting, error handling and the lifespan that closes every environment on shutdown.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated

import anyio.to_thread
from fastapi import FastAPI, Request
from fastapi import Path as PathParam
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

import corral_core
from corral_core.domain import Decider
from corral_core.env import ServedSuite
from corral_core.env.approval import ApprovalGate
from corral_core.events import EventSink
from corral_core.server.approvals import PolicyGate, QueueGate
from corral_core.server.auth import BearerAuthMiddleware
from corral_core.server.hosts import HostGuardMiddleware, HostPolicy
from corral_core.server.hot_routes import HotRoutes
from corral_core.server.limits import DEFAULT_MAX_BODY_BYTES, BodyLimitMiddleware
from corral_core.server.mcp_endpoint import DEFAULT_MAX_STREAMS, DEFAULT_STREAM_IDLE, McpEndpoint
from corral_core.server.middleware import RequestStatsMiddleware
from corral_core.server.routes import build_router
from corral_core.server.runtime import ConflictError, NotFoundError, ServerRuntime
from corral_core.server.schemas import ApprovalDecisionRequest, ErrorResponse, SafeJSONResponse

log = logging.getLogger(__name__)

THREADPOOL_SIZE = 100  # tool calls waiting for approval each hold a worker thread

__all__ = ["create_app"]


def create_app(
    suite: ServedSuite,
    *,
    gate: ApprovalGate | None = None,
    sink: EventSink | None = None,
    token: str | None = None,
    base_work_dir: Path | None = None,
    tool_timeout: float | None = None,
    grader_timeout: float | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    telemetry: bool = True,
    allowed_hosts: Sequence[str] = (),
    mcp_stream_idle: float = DEFAULT_STREAM_IDLE,
    mcp_max_streams: int = DEFAULT_MAX_STREAMS,
) -> FastAPI:
    """Build the server for `suite`.

    `gate` decides `confirm` tools (default: reject by policy); `sink` receives the server's events;
    `token` requires `Authorization: Bearer <token>` everywhere but /health; trial workspaces go
    under `base_work_dir` (default: a temporary directory removed at shutdown). A scorer running
    longer than `grader_timeout` seconds ends its trial as `timeout` with no score. A request body
    over `max_body_bytes` is refused with 413. `telemetry=False` keeps the server's own telemetry
    (events.TELEMETRY_KINDS: trials opened/closed, tool calls requested/executed, requests served) out
    of `sink`; approvals are always reported. Every route answers only the Host names and browser
    Origins of the address it is bound to, plus `allowed_hosts` (server/hosts.py: 421 and 403
    otherwise); whoever binds the app tells `app.state.hosts` where (`HostPolicy.bind`). At most
    `mcp_max_streams` MCP event streams (GET) are open at once, each closed after `mcp_stream_idle`
    seconds without a message.
    """
    gate = gate if gate is not None else PolicyGate(approve=False)
    runtime = ServerRuntime(suite, gate=gate, sink=sink, base_work_dir=base_work_dir,
                            tool_timeout=tool_timeout, grader_timeout=grader_timeout, telemetry=telemetry)
    hosts = HostPolicy(allowed_hosts)
    mcp = McpEndpoint(runtime, stream_idle=mcp_stream_idle, max_streams=mcp_max_streams)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        anyio.to_thread.current_default_thread_limiter().total_tokens = THREADPOOL_SIZE
        try:
            async with mcp.lifespan():
                yield
        finally:
            runtime.close()

    app = FastAPI(
        title=f"corral-tui environment server: {suite.name}",
        version=corral_core.__version__,
        description="Corral-compatible task routes plus isolated trial runtimes, and MCP (Streamable HTTP) "
                    "at /tasks/{task_id}/mcp and /trials/{trial_id}/mcp.",
        lifespan=lifespan,
        default_response_class=SafeJSONResponse,
    )
    app.state.runtime = runtime
    app.state.gate = gate
    app.state.requests_served = 0
    _install_error_handlers(app)
    app.include_router(build_router(runtime))
    app.router.routes.extend(mcp.routes())  # MCP Streamable HTTP: /tasks/{id}/mcp, /trials/{id}/mcp
    _add_service_routes(app, runtime, gate)
    app.state.token = token
    # innermost: a trial's own routes served without FastAPI's per-request machinery, the same answers
    app.add_middleware(HotRoutes, runtime=runtime, handlers=app.exception_handlers)
    app.add_middleware(BodyLimitMiddleware, max_body_bytes=max_body_bytes)  # inside auth: 401 reads no body
    if token:
        app.add_middleware(BearerAuthMiddleware, token=token)
    app.add_middleware(RequestStatsMiddleware, state=app.state, sink=runtime.sink if telemetry else None)
    app.state.hosts = hosts
    app.add_middleware(HostGuardMiddleware, policy=hosts)  # outermost: a rebinding page reaches nothing
    return app


def _add_service_routes(app: FastAPI, runtime: ServerRuntime, gate: ApprovalGate) -> None:
    @app.get("/health", tags=["service"])
    async def health() -> SafeJSONResponse:
        """Liveness and counters; the only route that needs no token."""
        return SafeJSONResponse({
            "status": "ok",
            "tasks": len(runtime.task_ids),
            "open_trials": len(runtime.trials),
            "requests_served": app.state.requests_served,
        })

    # Approval routes are async: they must run even when every worker thread waits on approvals.
    @app.get("/approvals", tags=["approvals"])
    async def approvals() -> SafeJSONResponse:
        """Tool calls waiting for a decision (empty unless the server runs with --approve ask), and the
        server's `policy` for confirm-level tools (reject, approve or ask)."""
        pending = gate.pending() if isinstance(gate, QueueGate) else []
        return SafeJSONResponse({"policy": runtime.approval_policy,
                                 "approvals": [request.to_dict() for request in pending]})

    @app.post("/approvals/{approval_id}", tags=["approvals"],
              responses={404: {"model": ErrorResponse}, 409: {"model": ErrorResponse}})
    async def decide(approval_id: Annotated[str, PathParam()], decision: ApprovalDecisionRequest
                     ) -> SafeJSONResponse:
        """Approve or reject a waiting tool call."""
        if not isinstance(gate, QueueGate):
            raise ConflictError(
                "This server decides approvals by policy; start it with --approve ask to decide "
                "them remotely."
            )
        if not gate.decide(approval_id, decision.approved, Decider.REMOTE, decision.reason):
            raise NotFoundError(
                f"Approval not found: {approval_id!r} (unknown, already decided, or timed out)."
            )
        return SafeJSONResponse({"approval_id": approval_id, "approved": decision.approved,
                                 "decided_by": Decider.REMOTE})


def _install_error_handlers(app: FastAPI) -> None:
    # The decorator registers exactly as add_exception_handler does; Starlette's annotation of the
    # latter rejects handlers that take a narrower exception type.
    @app.exception_handler(NotFoundError)
    async def not_found(request: Request, exc: NotFoundError) -> SafeJSONResponse:
        return SafeJSONResponse({"detail": str(exc)}, status_code=404)

    @app.exception_handler(ConflictError)
    async def conflict(request: Request, exc: ConflictError) -> SafeJSONResponse:
        return SafeJSONResponse({"detail": str(exc)}, status_code=409)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> SafeJSONResponse:
        return SafeJSONResponse({"detail": exc.detail}, status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> SafeJSONResponse:
        errors = [{k: v for k, v in error.items() if k != "ctx"} for error in exc.errors()]
        return SafeJSONResponse({"detail": jsonable_encoder(errors, custom_encoder={bytes: repr})},
                                status_code=422)

    @app.exception_handler(Exception)
    async def internal(request: Request, exc: Exception) -> SafeJSONResponse:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return SafeJSONResponse(
            {"detail": f"Internal server error ({type(exc).__name__}: {exc}). This is a bug in "
                       "corral-tui or in the environment module; the server keeps running."},
            status_code=500,
        )

