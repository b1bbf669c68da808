"""What one client may cost the server: bodies over the limit get 413, and a connection that does not
deliver a complete request in time is closed (even with --token); a complete request is never cut.

Before the fix a 100 MB body was accepted and a half-sent request held its connection forever.
The socket timeouts below only bound a failing test: each test waits for the server to act.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest

from corral_core.server import EmbeddedServer, create_app
from tests.server.conftest import make_suite

LIMIT = 4096
REQUEST_TIMEOUT = 0.5
FAIL_AFTER = 30.0  # a socket wait longer than this means the server never acted


@pytest.fixture(params=[None, "s3cret"], ids=["open", "token"])
def server(request) -> Iterator[tuple[str, dict[str, str]]]:
    token = request.param
    app = create_app(make_suite(), token=token, max_body_bytes=LIMIT)
    with EmbeddedServer(app, request_timeout=REQUEST_TIMEOUT) as served:
        yield served.url, ({"Authorization": f"Bearer {token}"} if token else {})


def connect(url: str) -> socket.socket:
    parts = urlsplit(url)
    sock = socket.create_connection((parts.hostname, parts.port), timeout=FAIL_AFTER)
    return sock


def read_until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (socket.timeout if it never does)."""
    received = b""
    while chunk := sock.recv(65536):
        received += chunk
    return received


def test_a_body_over_the_limit_is_refused_with_413(server) -> None:
    url, headers = server
    with httpx.Client(base_url=url, headers=headers, timeout=FAIL_AFTER) as http:
        too_big = {"answer": "x" * LIMIT}
        response = http.post("/tasks/echo/submit", json=too_big)
        assert response.status_code == 413
        assert f"at most {LIMIT} bytes" in response.json()["detail"]

        def chunks():  # no Content-Length: the server counts as the body streams in
            for _ in range(8):
                yield b'{"answer": "' + b"x" * 1024
            yield b'"}'

        streamed = http.post("/tasks/echo/submit", content=chunks(), headers={"content-type": "application/json"})
        assert streamed.status_code == 413
        assert http.get("/tasks/echo/status").json()["is_attempted"] is False  # nothing was submitted
        assert http.post("/tasks/echo/submit", json={"answer": "hi"}).json()["score"] == 1.0


def test_a_half_sent_request_head_is_answered_408_and_closed(server) -> None:
    url, _ = server
    with connect(url) as sock:
        sock.sendall(b"POST /tasks/echo/submit HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n")
        received = read_until_closed(sock)
    assert received.startswith(b"HTTP/1.1 408 ")


def test_a_half_sent_body_is_closed(server) -> None:
    url, headers = server
    auth = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    with connect(url) as sock:
        sock.sendall(f"POST /tasks/echo/submit HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                     f"{auth}Content-Length: 100\r\n\r\n".encode() + b'{"answer": ')
        read_until_closed(sock)
    with httpx.Client(base_url=url, headers=headers, timeout=FAIL_AFTER) as http:
        assert http.get("/tasks/echo/status").json()["is_attempted"] is False


def test_a_connection_that_sends_nothing_is_closed(server) -> None:
    url, _ = server
    with connect(url) as sock:
        assert read_until_closed(sock).startswith(b"HTTP/1.1 408 ")


def test_a_complete_request_is_never_cut_however_long_its_tool_runs(server) -> None:
    url, headers = server
    with httpx.Client(base_url=url, headers=headers, timeout=FAIL_AFTER) as http:
        body = {"tool_name": "slow", "arguments": {"seconds": REQUEST_TIMEOUT * 3}}
        response = http.post("/tasks/add/tools/execute", json=body)
        assert response.status_code == 200
        assert response.json()["result"]["result"] == "slept"
        # and the same keep-alive connection serves the next request
        assert http.get("/tasks/add/status").status_code == 200


@pytest.mark.parametrize("flags", [["--max-body-bytes", "0"], ["--max-body-bytes", "lots"],
                                   ["--request-timeout", "0"], ["--request-timeout", "nan"]])
def test_serve_refuses_unusable_limits(flags: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    from corral_core.server.serve import serve_main

    assert serve_main(["sample_tasks/samplemath.yaml", *flags]) == 2
    assert flags[0] in capsys.readouterr().err


def test_after_a_response_the_next_half_sent_request_is_answered_408(server) -> None:
    """The deadline moves on with every response (one timer per connection), and still cuts the next request."""
    url, headers = server
    auth = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    with connect(url) as sock:
        for _ in range(3):
            sock.sendall(f"GET /tasks/echo/status HTTP/1.1\r\nHost: localhost\r\n{auth}\r\n".encode())
            answer = b""
            while b'"trial_id"' not in answer:
                answer += sock.recv(65536)
            assert answer.startswith(b"HTTP/1.1 200 ")
        sock.sendall(b"POST /tasks/echo/submit HTTP/1.1\r\nHost: localhost\r\n")
        assert read_until_closed(sock).startswith(b"HTTP/1.1 408 ")


def test_the_server_parses_http_with_httptools() -> None:
    """uvicorn's C parser: its pure-Python h11 protocol cost the server a third more CPU per request."""
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    from corral_core.server.embedded import uvicorn_config
    from corral_core.server.limits import deadline_protocol

    assert issubclass(deadline_protocol(1.0), HttpToolsProtocol)
    assert issubclass(uvicorn_config(create_app(make_suite())).http, HttpToolsProtocol)  # type: ignore[arg-type]


@pytest.mark.parametrize("where", ["header", "url"])
def test_a_request_head_over_the_limit_is_answered_400_and_closed(server, where) -> None:
    """A head is held in memory until complete: it is bounded (16 KiB, as uvicorn's h11 protocol did)."""
    from corral_core.server.limits import MAX_HEAD_BYTES

    url, headers = server
    auth = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    big = "a" * (MAX_HEAD_BYTES + 1)
    line = f"GET /health?{big} HTTP/1.1\r\n" if where == "url" else "GET /health HTTP/1.1\r\n"
    extra = f"X-Big: {big}\r\n" if where == "header" else ""
    with connect(url) as sock:
        sock.sendall(f"{line}Host: localhost\r\n{auth}{extra}\r\n".encode())
        assert read_until_closed(sock).startswith(b"HTTP/1.1 400 ")
    with httpx.Client(base_url=url, headers={**headers, "X-Fits": "a" * (MAX_HEAD_BYTES // 2)},
                      timeout=FAIL_AFTER) as http:
        assert http.get("/health").status_code == 200


@pytest.mark.parametrize("hosts", ["", "Host: localhost\r\nHost: localhost\r\n"], ids=["none", "two"])
def test_an_http11_request_needs_exactly_one_host_header(server, hosts) -> None:
    """As h11 required: the Host check reads the one Host header there is."""
    url, headers = server
    auth = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    with connect(url) as sock:
        sock.sendall(f"GET /health HTTP/1.1\r\n{hosts}{auth}\r\n".encode())
        assert read_until_closed(sock).startswith(b"HTTP/1.1 400 ")
    with connect(url) as sock:  # HTTP/1.0 may leave it out
        sock.sendall(f"GET /health HTTP/1.0\r\n{auth}\r\n".encode())
        assert read_until_closed(sock).startswith(b"HTTP/1.1 200 ")


def test_another_uvicorn_series_is_refused_in_words_before_a_server_starts() -> None:
    from corral_core.server.limits import UVICORN_SERIES, check_uvicorn

    check_uvicorn(f"{UVICORN_SERIES}.0")
    check_uvicorn(f"{UVICORN_SERIES}.7")
    for other in ("0.55.0", "1.0.0", "0.5"):
        with pytest.raises(RuntimeError, match=rf"uvicorn=={UVICORN_SERIES}\.\*"):
            check_uvicorn(other)
