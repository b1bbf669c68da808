"""`corral-tui serve SUITE.yaml`: a standalone environment server.

Binds 127.0.0.1 by default; any other address needs `--token` (or CORRAL_TUI_TOKEN), because
tools may read and write files on this machine. Mistakes in flags or in the suite end with one
readable message on stderr and exit code 2, never a traceback. Ctrl-C or SIGTERM stop it cleanly:
pending approvals are rejected, requests in flight get a few seconds to finish, every environment
is closed and the temporary workspaces removed, then it says so and exits 0.
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import socket
import sys
import threading
from collections.abc import Sequence
from typing import Any

from corral_core.env.approval import APPROVAL_POLICIES
from corral_core.errors import UserError
from corral_core.server.limits import DEFAULT_MAX_BODY_BYTES, DEFAULT_REQUEST_TIMEOUT, KEEP_ALIVE_TIMEOUT

__all__ = ["build_parser", "run_app", "serve_main"]

TOKEN_ENV = "CORRAL_TUI_TOKEN"


DEFAULT_TOOL_TIMEOUT = 120.0  # a hung tool must not hold its task's lock forever
DEFAULT_GRADER_TIMEOUT = 60.0


def seconds(text: str) -> float:
    """An argparse type: a finite, positive number of seconds."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be a positive, finite number of seconds")
    return value


def byte_count(text: str) -> int:
    """An argparse type: a positive whole number of bytes."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of bytes") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be a positive number of bytes")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="corral-tui serve",
        description="Serve a task suite over Corral's REST API (plus isolated trial routes).",
    )
    parser.add_argument("suite", metavar="SUITE.yaml",
                        help="the task suite to serve, or a Corral-style environment module (.py) that "
                             "defines `environments = {task_id: Environment}`")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port to bind (default 8000; 0 picks one)")
    parser.add_argument("--token", default=os.environ.get(TOKEN_ENV),
                        help=f"require 'Authorization: Bearer TOKEN' (default: ${TOKEN_ENV})")
    parser.add_argument("--approve", type=_policy, choices=APPROVAL_POLICIES, default="reject", metavar="POLICY",
                        help="confirm-level tools, in a spec's `approval` words: reject (default), approve "
                             "(run them all), or ask remote clients through GET /approvals and POST "
                             "/approvals/{id}; the old word `auto` still means approve")
    parser.add_argument("--approval-timeout", type=seconds, default=120.0, metavar="SECONDS",
                        help="with --approve ask: reject a tool call after this long (default 120)")
    parser.add_argument("--tool-timeout", type=seconds, default=DEFAULT_TOOL_TIMEOUT, metavar="SECONDS",
                        help="stop waiting for a tool after this long: status 'timeout' "
                             f"(default {DEFAULT_TOOL_TIMEOUT:g})")
    parser.add_argument("--grader-timeout", type=seconds, default=DEFAULT_GRADER_TIMEOUT, metavar="SECONDS",
                        help="stop waiting for a scorer after this long: the trial ends as 'timeout' "
                             f"with no score (default {DEFAULT_GRADER_TIMEOUT:g})")
    parser.add_argument("--max-body-bytes", type=byte_count, default=DEFAULT_MAX_BODY_BYTES, metavar="BYTES",
                        help=f"refuse larger request bodies with 413 (default {DEFAULT_MAX_BODY_BYTES})")
    parser.add_argument("--allowed-host", action="append", default=[], metavar="NAME[:PORT]",
                        help="also answer requests whose Host (and browser Origin) is NAME, e.g. the name of a "
                             "reverse proxy in front of this server (repeatable); by default only the bound "
                             "address, loopback names and, when bound wider than loopback, this machine's "
                             "names are answered (421 otherwise)")
    parser.add_argument("--request-timeout", type=seconds, default=DEFAULT_REQUEST_TIMEOUT, metavar="SECONDS",
                        help="close a connection that has not delivered a complete request this long after "
                             f"it opened or after its last response (default {DEFAULT_REQUEST_TIMEOUT:g}); "
                             f"idle keep-alive connections close after {KEEP_ALIVE_TIMEOUT} s")
    return parser


def serve_main(argv: Sequence[str] | None = None) -> int:
    """Run the server until interrupted. Returns the process exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse already printed usage and the problem
        return int(exc.code or 0)
    try:
        return _serve(args)
    except UserError as exc:
        print(f"corral-tui serve: {exc}", file=sys.stderr)
        return exc.exit_code


def _serve(args: argparse.Namespace) -> int:
    from corral_core.server.auth import is_loopback_host

    if not is_loopback_host(args.host) and not args.token:
        raise UserError(
            f"binding to {args.host} would expose the tools to the network without authentication.",
            where="--host",
            fix=f"pass --token SECRET (or set {TOKEN_ENV}), or bind 127.0.0.1.",
        )
    if not 0 <= args.port <= 65535:
        raise UserError(f"port {args.port} is out of range.", where="--port", fix="use 0-65535.")
    from corral_core.tracing import check

    check()  # OTEL_* variables without the [otel] extra: said now, not at the first tool call

    from corral_core.env import load_suite

    try:
        suite = load_suite(args.suite)  # a .py file: a Corral-style module defining `environments`
    except UserError:
        raise
    except OSError as exc:
        raise UserError(f"cannot read the suite: {exc.strerror or exc}.", file=args.suite) from None
    from corral_core.server.hosts import HostPolicy

    try:
        HostPolicy(args.allowed_host)  # checked here: a bad entry is a user mistake, not a traceback
    except ValueError as exc:
        raise UserError(f"{exc}.", where="--allowed-host", fix="give a host name, optionally with :PORT.") from None
    gate = _gate(args)
    sock = _bind(args.host, args.port)

    from corral_core.server.app import create_app

    app = create_app(suite, gate=gate, token=args.token, tool_timeout=args.tool_timeout,
                     grader_timeout=args.grader_timeout, max_body_bytes=args.max_body_bytes,
                     allowed_hosts=args.allowed_host)
    run_app(app, sock, f"suite {suite.name!r} ({len(suite.task_ids)} tasks)", f"approve: {args.approve}",
            request_timeout=args.request_timeout)
    return 0


def run_app(app: Any, sock: socket.socket, what: str, note: str, *,
            request_timeout: float = DEFAULT_REQUEST_TIMEOUT) -> None:
    """Serve `app` on the bound `sock` until Ctrl-C, saying where on stderr."""
    import uvicorn

    from corral_core.server.embedded import uvicorn_config

    runtime = app.state.runtime

    class _Server(uvicorn.Server):
        stopped_by: str | None = None

        def handle_exit(self, sig: int, frame: Any) -> None:
            self.stopped_by = self.stopped_by or signal.Signals(sig).name
            runtime.begin_shutdown()  # nobody waits on an approval while we stop
            super().handle_exit(sig, frame)

    host, port = sock.getsockname()[:2]
    app.state.hosts.bind(host, port)  # the Host and Origin checks answer for the address we bound
    shown = f"[{host}]" if ":" in host else host
    mcp = f"MCP at http://{shown}:{port}/tasks/{{task_id}}/mcp and /trials/{{trial_id}}/mcp"
    print(f"corral-tui serve: {what} on http://{shown}:{port} ({note}; Ctrl-C stops); {mcp}",  # one line: scripts
          file=sys.stderr, flush=True)                                                         # read the first
    server = _Server(uvicorn_config(app, request_timeout=request_timeout, timeout_graceful_shutdown=5))
    # uvicorn shuts down gracefully on SIGINT and SIGTERM, then raises the signal again: SIGINT
    # becomes KeyboardInterrupt, and so does SIGTERM with this handler (by default it killed us
    # without a word).
    previous = signal.signal(signal.SIGTERM, _interrupt) if _on_main_thread() else None
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        sock.close()
    by = f" ({server.stopped_by})" if server.stopped_by else ""
    print(f"corral-tui serve: stopped{by}.", file=sys.stderr, flush=True)


def _on_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _policy(text: str) -> str:
    """A policy word as specs and the run form write it (`auto`, this flag's first word, means approve)."""
    word = text.strip().lower()
    return "approve" if word == "auto" else word


def _gate(args: argparse.Namespace) -> Any:
    from corral_core.server.approvals import PolicyGate, QueueGate

    if args.approve == "ask":
        return QueueGate(timeout=args.approval_timeout, on_request=_announce)
    return PolicyGate(approve=args.approve == "approve")


def _announce(request: Any) -> None:
    """Tell the operator a tool call waits, and how to decide it."""
    print(f"corral-tui serve: approval {request.id} waits: {request.tool_name}({request.arguments}) "
          f"for task {request.task_id} (POST /approvals/{request.id} within {request.timeout:g} s)",
          file=sys.stderr, flush=True)


def _bind(host: str, port: int) -> socket.socket:
    from corral_core.server.embedded import bind_socket

    try:
        return bind_socket(host, port)
    except OSError as exc:
        raise UserError(f"cannot bind {host}:{port}: {exc.strerror or exc}.", where="--host/--port",
                        fix="choose a free port with --port, or 0 to pick one.") from None
