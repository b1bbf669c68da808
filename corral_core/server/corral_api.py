"""Corral's Python entry point: `create_benchmark_server(environments)` and `run_server(app, port)`.

```python
environments = {"task_1": MyEnvironment("task_1", ...), "task_2": MyEnvironment("task_2", ...)}
app = create_benchmark_server(environments)
if __name__ == "__main__":
    run_server(app, port=8000)
```

The app is our full server (task routes, trial routes, MCP, approvals, auth). Unlike Corral,
`run_server` binds 127.0.0.1 unless told otherwise (CORRAL_HOST / host=), and refuses any other
address without a bearer token, because tools can read and write files on this machine.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from corral_core.env import Environment
from corral_core.env.approval import ApprovalGate
from corral_core.env.prebuilt import EnvironmentSuite
from corral_core.errors import UserError
from corral_core.server.app import create_app
from corral_core.server.auth import is_loopback_host
from corral_core.server.serve import DEFAULT_GRADER_TIMEOUT, DEFAULT_TOOL_TIMEOUT, TOKEN_ENV

__all__ = ["create_benchmark_server", "run_server"]


def create_benchmark_server(
    environments: Mapping[str, Environment],
    *,
    name: str = "environments",
    gate: ApprovalGate | None = None,
    token: str | None = None,
    base_work_dir: Path | None = None,
    tool_timeout: float | None = DEFAULT_TOOL_TIMEOUT,
    grader_timeout: float | None = DEFAULT_GRADER_TIMEOUT,
) -> Any:
    """The environment server (a FastAPI app) for `{task_id: Environment}`, as Corral builds it.

    `gate` decides `confirm`-level tools (default: reject); `token` requires a bearer token.
    """
    return create_app(EnvironmentSuite(environments, name=name), gate=gate, token=token,
                      base_work_dir=base_work_dir, tool_timeout=tool_timeout, grader_timeout=grader_timeout)


def run_server(app: Any, host: str | None = None, port: int | None = None, *, token: str | None = None) -> None:
    """Serve `app` (or a `{task_id: Environment}` dict) until Ctrl-C.

    host: CORRAL_HOST or 127.0.0.1; port: CORRAL_PORT or 8000. `token` (or CORRAL_TUI_TOKEN) is
    only used when `app` is an environments dict; an app carries the token it was created with.
    """
    from corral_core.server.embedded import bind_socket
    from corral_core.server.serve import run_app

    token = token or os.environ.get(TOKEN_ENV)
    if isinstance(app, Mapping):
        app = create_benchmark_server(app, token=token)
    if getattr(getattr(app, "state", None), "runtime", None) is None:
        raise TypeError("run_server needs the app of create_benchmark_server(...) or an environments dict")
    host = host or os.environ.get("CORRAL_HOST") or "127.0.0.1"
    port = int(port if port is not None else os.environ.get("CORRAL_PORT", "8000"))
    if not is_loopback_host(host) and not app.state.token:
        raise UserError(f"binding to {host} would expose the tools to the network without authentication.",
                        where="run_server(host=...)",
                        fix="create the server with create_benchmark_server(environments, token=SECRET), or bind "
                            "127.0.0.1.")
    suite = app.state.runtime.suite
    run_app(app, bind_socket(host, port), f"{len(suite.task_ids)} environments", f"{suite.name}")
