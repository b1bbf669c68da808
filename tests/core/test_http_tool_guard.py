"""The http tool cannot be turned against the host: declared headers stay with the declared origin,
every redirect hop to another host is checked, path values cannot climb the path, and the connection
goes to the address that was resolved (and checked), never to a second DNS answer.

Two real servers on loopback, 127.0.0.1 and 127.0.0.2 (two hosts as far as origins go). Before the
fix httpx followed redirects itself: an X-Api-Key went to the second host and no hop was checked.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from corral_core.tools.builtin import http_tool
from corral_core.tools.errors import ToolExecutionError
from corral_core.tools.factory import build_tool
from tests.fakes.network import LoopbackBackend


class Recorder(BaseHTTPRequestHandler):
    """/hop?to=URL redirects (302, or ?code=); anything else answers with what it received."""

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        seen = {"path": parts.path, "api_key": self.headers.get("X-Api-Key"),
                "authorization": self.headers.get("Authorization"), "host": self.headers.get("Host")}
        self.server.seen.append(seen)  # type: ignore[attr-defined]
        query = parse_qs(parts.query)
        if parts.path == "/hop":
            self.send_response(int(query.get("code", ["302"])[0]))
            self.send_header("Location", query["to"][0])
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = json.dumps(seen).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def serve(address: str) -> Iterator[ThreadingHTTPServer]:
    httpd = ThreadingHTTPServer((address, 0), Recorder)
    httpd.daemon_threads = True
    httpd.seen = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()
    thread.join(5)


@pytest.fixture
def first() -> Iterator[ThreadingHTTPServer]:
    yield from serve("127.0.0.1")


@pytest.fixture
def second() -> Iterator[ThreadingHTTPServer]:
    yield from serve("127.0.0.2")


def url_of(server: ThreadingHTTPServer, path: str = "") -> str:
    host, port = server.server_address[:2]
    return f"http://{host}:{port}{path}"


def keyed_tool(url: str, *, allow_private: bool):
    declaration = {"name": "api", "type": "http", "url": url, "headers": {"X-Api-Key": "k-123"},
                   "parameters": [{"name": "to", "type": "string"},
                                  {"name": "code", "type": "integer", "default": 302}]}
    return build_tool(declaration, allow_private=allow_private)


def test_a_redirect_to_another_host_drops_the_declared_headers(first, second) -> None:
    tool = keyed_tool(url_of(first, "/hop"), allow_private=True)  # the suite allows private URLs
    answer = json.loads(tool.execute(to=url_of(second, "/landing")))
    assert answer["path"] == "/landing"
    assert first.seen[0]["api_key"] == "k-123"
    assert second.seen == [answer] and answer["api_key"] is None
    assert answer["host"] == f"127.0.0.2:{second.server_address[1]}"


def test_a_redirect_within_the_declared_origin_keeps_them(first) -> None:
    tool = keyed_tool(url_of(first, "/hop"), allow_private=False)
    answer = json.loads(tool.execute(to="/landing"))
    assert answer["api_key"] == "k-123"


def test_a_redirect_to_a_private_host_is_refused_unless_the_suite_allows_it(first, second) -> None:
    tool = keyed_tool(url_of(first, "/hop"), allow_private=False)  # the declared loopback host is fine
    for code in (301, 302, 303, 307, 308):
        with pytest.raises(ToolExecutionError, match="private, loopback or link-local"):
            tool.execute(to=url_of(second, "/landing"), code=code)
    with pytest.raises(ToolExecutionError, match=r"link-local address \(169\.254\.169\.254\)"):
        tool.execute(to="http://169.254.169.254/latest/meta-data/")
    assert second.seen == []


def test_path_values_cannot_climb_the_path(first) -> None:
    tool = http_tool("item", url_of(first, "/api/items/{item_id}/detail"),
                     parameters=[{"name": "item_id", "type": "string"}])
    for value, sent in (("..", "%2E%2E"), (".", "%2E"), ("../../admin", "%2E%2E%2F%2E%2E%2Fadmin"),
                        ("v1.2", "v1%2E2")):
        assert json.loads(tool.execute(item_id=value))["path"] == f"/api/items/{sent}/detail"


def test_the_declared_host_is_resolved_once_and_a_second_answer_is_never_used(first) -> None:
    lookups: list[str] = []

    def rebinding(host: str, port: int) -> list[str]:
        lookups.append(host)
        return ["93.184.215.14"] if len(lookups) == 1 else ["127.0.0.1"]

    backend = LoopbackBackend()  # 93.184.215.14 is unreachable here, as the public host would be
    tool = http_tool("api", f"http://api.example:{first.server_address[1]}/hop", resolver=rebinding,
                     network_backend=backend, parameters=[{"name": "to", "type": "string"}])
    with pytest.raises(ToolExecutionError, match="Request failed"):
        tool.execute(to="/landing")
    assert backend.connected_to == ["93.184.215.14"] and lookups == ["api.example"]
    assert first.seen == []
