"""http tools against a real echo server on 127.0.0.1: templates, query, JSON body, env headers, errors."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from corral_core.tools.builtin import ToolDeclarationError, http_tool
from corral_core.tools.errors import ToolExecutionError
from tests.timeouts import HANG


class EchoHandler(BaseHTTPRequestHandler):
    """Answers with what it received: method, raw path, query, selected headers and JSON body."""

    def log_message(self, *args: object) -> None:
        pass

    def _answer(self) -> None:
        parts = urlsplit(self.path)
        if parts.path == "/missing":
            return self._send(404, b'{"error": "no such item", "hint": "check the id"}')
        if parts.path == "/big":
            return self._send(200, b"y" * 10000)
        if parts.path == "/slow":
            self.server.release.wait(HANG)  # type: ignore[attr-defined]  # answers when the test ends
            return self._send(200, b"late")
        length = int(self.headers.get("Content-Length") or 0)
        raw_body = self.rfile.read(length) if length else b""
        echo = {
            "method": self.command,
            "path": parts.path,
            "query": parse_qs(parts.query),
            "authorization": self.headers.get("Authorization"),
            "x_key": self.headers.get("X-Key"),
            "content_type": self.headers.get("Content-Type"),
            "body": json.loads(raw_body) if raw_body else None,
        }
        self._send(200, json.dumps(echo).encode())

    def _send(self, status: int, body: bytes) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout tests)
            pass

    do_GET = do_POST = do_PUT = do_DELETE = _answer


@pytest.fixture(autouse=True)
def no_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def api() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), EchoHandler)
    httpd.daemon_threads = True
    httpd.release = threading.Event()  # type: ignore[attr-defined]  # lets /slow answer
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_port}"
    httpd.release.set()  # type: ignore[attr-defined]
    httpd.shutdown()
    httpd.server_close()
    thread.join(5)


ITEM_PARAMS = [
    {"name": "item_id", "type": "string", "description": "Item id"},
    {"name": "q", "type": "string", "description": "Search text", "required": False},
    {"name": "limit", "type": "integer", "default": 10},
    {"name": "tags", "type": "array", "items": "string", "required": False},
    {"name": "exact", "type": "boolean", "required": False},
]


def test_get_fills_the_url_template_and_sends_the_rest_as_query(api: str) -> None:
    items = http_tool("items", f"{api}/items/{{item_id}}?v=2", parameters=ITEM_PARAMS)
    assert items.parameters["required"] == ["item_id"]
    echo = json.loads(items.execute(item_id="a/b c", q="red shoes", tags=["x", "y"], exact=True))
    assert echo["method"] == "GET"
    assert echo["path"] == "/items/a%2Fb%20c"  # quoted: a value cannot climb the path
    assert echo["query"] == {"v": ["2"], "q": ["red shoes"], "limit": ["10"], "tags": ["x", "y"], "exact": ["true"]}
    assert echo["body"] is None


def test_post_sends_the_rest_as_a_json_body(api: str) -> None:
    order = http_tool(
        "order",
        f"{api}/users/{{user}}/orders",
        method="post",
        parameters=[
            {"name": "user", "type": "string"},
            {"name": "quantity", "type": "integer"},
            {"name": "note", "type": "string", "required": False},
            {"name": "gift", "type": "boolean", "default": False},
        ],
    )
    echo = json.loads(order.execute(user="ann", quantity=3, note="hi"))
    assert echo["method"] == "POST"
    assert echo["path"] == "/users/ann/orders"
    assert echo["query"] == {}
    assert echo["content_type"] == "application/json"
    assert echo["body"] == {"quantity": 3, "note": "hi", "gift": False}


def test_put_and_delete(api: str) -> None:
    put = http_tool("put", f"{api}/things/{{id}}", method="PUT",
                    parameters=[{"name": "id", "type": "integer"}, {"name": "name", "type": "string"}])
    assert json.loads(put.execute(id=7, name="x"))["body"] == {"name": "x"}
    delete = http_tool("delete", f"{api}/things/{{id}}", method="DELETE",
                       parameters=[{"name": "id", "type": "integer"},
                                   {"name": "force", "type": "boolean", "default": True}])
    echo = json.loads(delete.execute(id=7))
    assert (echo["method"], echo["path"], echo["query"]) == ("DELETE", "/things/7", {"force": ["true"]})


def test_headers_substitute_environment_variables(api: str) -> None:
    env = {"API_TOKEN": "s3cret", "KEY2": "k2"}
    tool = http_tool(
        "whoami", f"{api}/me", headers={"Authorization": "Bearer ${API_TOKEN}", "X-Key": "$KEY2-$$literal"}, environ=env
    )
    echo = json.loads(tool.execute())
    assert echo["authorization"] == "Bearer s3cret"
    assert echo["x_key"] == "k2-$literal"


def test_a_missing_environment_variable_is_a_clear_error(api: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CORRAL_TEST_UNSET_TOKEN", raising=False)
    tool = http_tool("whoami", f"{api}/me", headers={"Authorization": "Bearer $CORRAL_TEST_UNSET_TOKEN"})
    with pytest.raises(ToolExecutionError,
                       match=r"Header 'Authorization' of tool 'whoami' uses \$CORRAL_TEST_UNSET_TOKEN.*export"):
        tool.execute()
    monkeypatch.setenv("CORRAL_TEST_UNSET_TOKEN", "now-set")
    assert json.loads(tool.execute())["authorization"] == "Bearer now-set"


def test_http_errors_carry_status_and_a_snippet(api: str) -> None:
    tool = http_tool("missing", f"{api}/missing")
    with pytest.raises(ToolExecutionError, match=r'HTTP 404 Not Found from GET .*/missing: \{"error": "no such item"'):
        tool.execute()


def test_long_responses_are_truncated(api: str) -> None:
    text = http_tool("big", f"{api}/big", max_chars=100).execute()
    assert text == "y" * 100 + " …"


def test_slow_endpoints_time_out(api: str) -> None:
    with pytest.raises(ToolExecutionError, match="timed out after 0.5s"):  # /slow answers only when the test ends
        http_tool("slow", f"{api}/slow", timeout=0.5).execute()


def test_connection_refused_is_a_failure_in_words() -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(ToolExecutionError, match="Request failed: GET"):
        http_tool("down", f"http://127.0.0.1:{port}/x", timeout=2).execute()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"url": "http://h/{city}"}, r"placeholder\(s\) \{city\} have no declared parameter"),
        ({"url": "http://h/x", "method": "PATCH"}, "unsupported method 'PATCH'"),
        ({"url": "ftp://h/x"}, "must start with http"),
        ({"url": "http://h/x", "parameters": [{"name": "n", "type": "float"}]}, "unknown parameter type 'float'"),
        ({"url": "http://h/x", "parameters": [{"name": "n", "kind": "x"}]}, "unknown parameter key"),
        ({"url": "http://h/x", "headers": ["Authorization: x"]}, "headers must be a mapping"),
    ],
)
def test_bad_declarations_name_the_tool_and_key(kwargs: dict, message: str) -> None:
    with pytest.raises(ToolDeclarationError, match=message) as caught:
        http_tool("weather", **kwargs)
    assert "tool 'weather'" in str(caught.value)
    assert "Fix:" in str(caught.value)
