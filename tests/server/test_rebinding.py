"""No web page can act on a local server: Host and Origin checks on every route (server/hosts.py).

A page rebound to 127.0.0.1 sends its own name as Host: 421 everywhere. A page under our Host but
from another origin (another local web server, an opaque `null`): 403. Our own clients (no Origin,
or our own origin) pass, on every loopback address we bind and through a proxy named with
`--allowed-host`. MCP event streams are closed when idle and capped per server.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from corral_core.events import EventKind
from corral_core.server import EmbeddedServer, QueueGate, create_app
from corral_core.server.hosts import HostPolicy, machine_names, split_host
from tests.server.conftest import make_suite
from tests.server.rebinding import attack, expected_refusals
from tests.timeouts import HANG, HTTP_TIMEOUT

REPO = Path(__file__).resolve().parents[2]
SAMPLE_SUITE = REPO / "sample_tasks" / "samplemath.yaml"


def test_a_rebinding_page_cannot_list_or_approve_a_pending_approval(served_factory: Any, tmp_path: Path) -> None:
    asked = threading.Event()
    gate = QueueGate(timeout=HANG, on_request=lambda request: asked.set())
    served = served_factory(gate=gate)
    target = tmp_path / "confirm.txt"
    result: dict[str, Any] = {}
    caller = threading.Thread(target=lambda: result.setdefault(
        "call", served.client.execute_tool("echo", "touch_confirm", {"path": str(target)})))
    caller.start()
    assert asked.wait(HANG)
    approval_id = gate.pending()[0].id
    port = served.server.port
    with httpx.Client(base_url=served.url, timeout=HTTP_TIMEOUT) as http:
        rebound = {"Host": f"attacker.example:{port}", "Origin": f"http://attacker.example:{port}"}
        assert http.get("/approvals", headers=rebound).status_code == 421
        approve = http.post(f"/approvals/{approval_id}", json={"approved": True}, headers=rebound)
        assert approve.status_code == 421 and "attacker.example" in approve.json()["detail"]
        cross = http.post(f"/approvals/{approval_id}", json={"approved": True},
                          headers={"Origin": "http://attacker.example"})
        assert cross.status_code == 403
        assert [request.id for request in gate.pending()] == [approval_id]  # still waiting, undecided
        assert not target.exists()
        # the operator's own client still decides it
        listed = http.get("/approvals").json()["approvals"]
        assert [entry["id"] for entry in listed] == [approval_id]
        assert http.post(f"/approvals/{approval_id}", json={"approved": False, "reason": "no"}).status_code == 200
    caller.join(HANG)
    assert result["call"].success is False and not target.exists()
    decided = served.sink.of_kind(EventKind.APPROVAL_DECIDED)
    assert [(e.data["approved"], e.data["decided_by"]) for e in decided] == [(False, "remote")]


def test_every_route_refuses_foreign_hosts_and_origins_and_nothing_runs(served_factory: Any, tmp_path: Path) -> None:
    served = served_factory(gate=QueueGate(timeout=HANG))
    seen = attack(served.url, "echo", "echo", {"text": "pwned"})
    assert seen == expected_refusals(seen)
    assert served.sink.of_kind(EventKind.TOOL_CALL_REQUESTED, EventKind.TOOL_CALL_EXECUTED) == []


def test_our_own_clients_pass_with_every_loopback_name(served_factory: Any) -> None:
    served = served_factory()
    port = served.server.port
    with httpx.Client(base_url=served.url, timeout=HTTP_TIMEOUT) as http:
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", "localhost", f"[::1]:{port}", "LOCALHOST."):
            assert http.get("/health", headers={"Host": host}).status_code == 200, host
        same_origin = {"Origin": f"http://127.0.0.1:{port}"}
        answer = http.post("/tasks/echo/tools/execute", json={"tool_name": "echo", "arguments": {"text": "hi"}},
                           headers=same_origin)
        assert answer.status_code == 200 and answer.json()["result"]["result"] == "hi"
        assert http.get("/approvals", headers={"Origin": f"http://localhost:{port}"}).status_code == 200


def test_an_allowed_host_names_a_proxy() -> None:
    app = create_app(make_suite(), allowed_hosts=["proxy.example", "other.example:8443"])
    with EmbeddedServer(app) as server, httpx.Client(base_url=server.url, timeout=HTTP_TIMEOUT) as http:
        assert http.get("/health", headers={"Host": "proxy.example"}).status_code == 200
        assert http.get("/health", headers={"Host": "proxy.example", "Origin": "https://proxy.example"}
                        ).status_code == 200
        assert http.get("/health", headers={"Host": "other.example:8443",
                                            "Origin": "https://other.example:8443"}).status_code == 200
        assert http.get("/health", headers={"Host": "other.example:8443",
                                            "Origin": "https://other.example"}).status_code == 403
        assert http.get("/health", headers={"Host": "attacker.example"}).status_code == 421


def test_the_policy_answers_for_the_address_it_is_bound_to() -> None:
    loopback = HostPolicy()
    loopback.bind("127.0.0.2", 8000)
    assert loopback.host_allowed("127.0.0.2", "127.0.0.2") and loopback.host_allowed("localhost", "127.0.0.2")
    assert not any(loopback.host_allowed(name, "127.0.0.2") for name in machine_names() if name != "localhost")
    assert loopback.origin_allowed("http://127.0.0.2:8000", "127.0.0.2", 8000)
    assert not loopback.origin_allowed("http://127.0.0.2:8001", "127.0.0.2", 8000)
    wide = HostPolicy()
    wide.bind("0.0.0.0", 8000)
    assert all(wide.host_allowed(name, "192.0.2.7") for name in machine_names())
    assert wide.host_allowed("192.0.2.7", "192.0.2.7") and not wide.host_allowed("192.0.2.8", "192.0.2.7")
    assert not wide.host_allowed("attacker.example", "192.0.2.7")
    assert split_host("[::1]:80") == ("::1", 80) and split_host("Example.COM.") == ("example.com", None)
    with pytest.raises(ValueError):
        split_host("host:99999")
    with pytest.raises(ValueError):
        HostPolicy([":80"])


def test_serve_on_another_loopback_address_answers_its_printed_mcp_url(tmp_path: Path) -> None:
    probe = socket.socket()
    try:
        probe.bind(("127.0.0.2", 0))
    except OSError:
        pytest.skip("this machine cannot bind 127.0.0.2")
    finally:
        probe.close()
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys; from corral_core.server.serve import serve_main; "
                               f"sys.exit(serve_main([{str(SAMPLE_SUITE)!r}, '--host', '127.0.0.2', '--port', '0']))"],
        stderr=subprocess.PIPE, text=True, cwd=REPO, env=env)
    try:
        line = proc.stderr.readline() if proc.stderr else ""
        mcp_url = line.split("MCP at ", 1)[1].split(" ", 1)[0].replace("{task_id}", "add")
        assert mcp_url.startswith("http://127.0.0.2:"), line

        async def listed() -> list[str]:
            async with httpx2.AsyncClient(timeout=httpx2.Timeout(HTTP_TIMEOUT)) as http, \
                    streamable_http_client(mcp_url, http_client=http) as (read, write), \
                    ClientSession(read, write) as session:
                await session.initialize()
                return [tool.name for tool in (await session.list_tools()).tools]

        assert "calculator" in anyio.run(listed)
        with httpx.Client(timeout=HTTP_TIMEOUT) as http:
            assert http.post(mcp_url, json={}, headers={"Host": "attacker.example"}).status_code == 421
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=HANG) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_an_idle_mcp_event_stream_is_closed_by_the_server() -> None:
    app = create_app(make_suite(), mcp_stream_idle=0.2)
    with EmbeddedServer(app) as server, httpx.Client(base_url=server.url, timeout=HTTP_TIMEOUT) as http:
        with http.stream("GET", "/tasks/add/mcp", headers={"Accept": "text/event-stream"}) as stream:
            assert stream.status_code == 200
            assert stream.headers["content-type"].startswith("text/event-stream")
            for _ in stream.iter_bytes():  # returns when the server ends the stream (HTTP_TIMEOUT if never)
                pass
        assert http.get("/health").status_code == 200  # the server serves on


def test_mcp_event_streams_are_capped_per_server() -> None:
    app = create_app(make_suite(), mcp_max_streams=2)
    headers = {"Accept": "text/event-stream"}
    with EmbeddedServer(app) as server, httpx.Client(base_url=server.url, timeout=HTTP_TIMEOUT) as http, \
            http.stream("GET", "/tasks/add/mcp", headers=headers) as first, \
            http.stream("GET", "/tasks/echo/mcp", headers=headers) as second:
        assert first.status_code == second.status_code == 200
        refused = http.get("/tasks/add/mcp", headers=headers)
        assert refused.status_code == 503 and "at most 2" in refused.json()["detail"]
        assert http.post("/tasks/add/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                         headers={"Accept": "application/json, text/event-stream"}).status_code == 200
