"""EmbeddedServer: a real port from port 0, serving until stopped, quick and bounded stop."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from corral_core.server import EmbeddedServer, create_app
from tests.server.conftest import make_suite
from tests.timeouts import HTTP_TIMEOUT


def test_start_serves_on_a_real_port_and_stop_frees_it():
    app = create_app(make_suite())
    server = EmbeddedServer(app)
    with pytest.raises(RuntimeError, match="not started"):
        _ = server.url
    url = server.start()
    assert url == server.url and server.port > 0 and url.endswith(f":{server.port}")
    assert server.start() == url  # starting twice is harmless
    assert httpx.get(f"{url}/health").json()["status"] == "ok"
    server.stop()
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{url}/health", timeout=HTTP_TIMEOUT)
    server.stop()  # stopping twice is harmless


def test_context_manager_and_request_counter():
    app = create_app(make_suite())
    with EmbeddedServer(app) as server, httpx.Client(base_url=server.url, timeout=HTTP_TIMEOUT) as http:
        for _ in range(3):
            http.get("/tasks")
        assert http.get("/health").json()["requests_served"] == 3
        workspace = http.post("/tasks/add/trials").json()["workspace"]
    assert app.state.requests_served == 5
    assert not app.state.runtime.base_work_dir_if_created.exists()
    assert not Path(workspace).exists()


def test_a_busy_port_raises():
    app = create_app(make_suite())
    with EmbeddedServer(app) as first, pytest.raises(OSError):
        EmbeddedServer(create_app(make_suite()), port=first.port).start()
