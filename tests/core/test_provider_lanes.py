"""Provider calls go through one shared httpx client whose requests each get a connection of their own,
kept alive and reused by later calls (corral_core/http_lanes.py)."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import httpcore
import httpx
import pytest

from corral_core import http_lanes as lanes
from corral_core.llm import client
from corral_core.llm.types import ModelSettings
from tests.fakes.fake_openai import FakeOpenAI, FakeReply
from tests.timeouts import HANG

KEY_ENV = "CORRAL_T_LANES_KEY"


def _counting_lanes(handler: httpx.MockTransport) -> tuple[lanes.LaneTransport, list[httpx.MockTransport]]:
    made: list[httpx.MockTransport] = []

    def make() -> httpx.MockTransport:
        made.append(handler)
        return handler

    return lanes.LaneTransport(make), made


def test_sequential_requests_share_one_lane_and_a_closed_response_gives_it_back() -> None:
    transport, made = _counting_lanes(httpx.MockTransport(lambda request: httpx.Response(200, json={"ok": True})))
    with httpx.Client(transport=transport) as session:
        for _ in range(5):
            assert session.get("http://127.0.0.1:9/x").json() == {"ok": True}
        assert len(made) == 1 and transport.lanes == 1
    assert transport.lanes == 0  # closing the client closed its lanes


def test_a_response_still_open_keeps_its_lane_and_the_next_request_gets_another() -> None:
    transport, made = _counting_lanes(httpx.MockTransport(lambda request: httpx.Response(200, text="body")))
    with httpx.Client(transport=transport) as session:
        with session.stream("GET", "http://127.0.0.1:9/a") as first:
            session.get("http://127.0.0.1:9/b")
            assert len(made) == 2
            first.read()
        session.get("http://127.0.0.1:9/c")
    assert len(made) == 2


def test_a_failed_request_gives_its_lane_back() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    transport, made = _counting_lanes(httpx.MockTransport(refuse))
    with httpx.Client(transport=transport) as session:
        for _ in range(3):
            with pytest.raises(httpx.ConnectError):
                session.get("http://127.0.0.1:9/x")
    assert len(made) == 1


@pytest.fixture
def keep_alive(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    monkeypatch.setenv(KEY_ENV, "sk-test")
    with FakeOpenAI([FakeReply.text("Final Answer: 4")], repeat_last=True, keep_alive=True) as server:
        yield server


def _settings(server: FakeOpenAI) -> ModelSettings:
    return ModelSettings("openai/fake-model", api_base=server.base_url, api_key_env=KEY_ENV, max_retries=0)


def test_consecutive_provider_calls_reuse_one_connection_of_the_shared_client(keep_alive: FakeOpenAI) -> None:
    litellm = client._litellm()
    session = litellm.client_session
    assert isinstance(session._transport, lanes.LaneTransport)  # the transport litellm's OpenAI client is given
    for _ in range(4):
        assert client.completion(_settings(keep_alive), [{"role": "user", "content": "2 + 2?"}]).content == \
            "Final Answer: 4"
    assert litellm.client_session is session
    assert keep_alive.connections == 1 and len(keep_alive.received) == 4


def test_calls_in_flight_each_get_a_connection_and_later_calls_reuse_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test")
    client._litellm()
    with FakeOpenAI([FakeReply.text("Final Answer: 4")], repeat_last=True, hold=True, keep_alive=True) as server:
        results: list[str | None] = []
        threads = [threading.Thread(target=lambda: results.append(
            client.completion(_settings(server), [{"role": "user", "content": "2 + 2?"}]).content)) for _ in range(3)]
        for thread in threads:
            thread.start()
        assert server.wait_until(lambda fake: fake.in_flight == 3, HANG)
        server.release(6)
        for thread in threads:
            thread.join(HANG)
        assert results == ["Final Answer: 4"] * 3
        for _ in range(3):
            client.completion(_settings(server), [{"role": "user", "content": "2 + 2?"}])
        assert server.connections == 3  # three at once, then the same three again


class _RecordingStream(httpcore.NetworkStream):
    def __init__(self, answer: bytes = b"HTTP/1.1 200 OK\r\n", fail_write: bool = False) -> None:
        self.sent: list[bytes] = []
        self.answer, self.fail_write, self.closed = answer, fail_write, False

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if self.fail_write:
            raise httpcore.WriteError("the server closed its side")
        self.sent.append(buffer)

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self.answer

    def close(self) -> None:
        self.closed = True


def test_a_connection_sends_a_requests_headers_and_body_together_when_it_reads_the_answer() -> None:
    raw = _RecordingStream()
    stream = lanes._HeldWrites(raw)
    stream.write(b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 2\r\n\r\n")
    stream.write(b"{}")
    stream.write(b"")
    assert raw.sent == []
    assert stream.read(65536) == b"HTTP/1.1 200 OK\r\n"
    assert raw.sent == [b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}"]
    stream.read(65536)
    assert len(raw.sent) == 1


def test_a_large_streamed_body_is_sent_as_it_comes_and_a_failed_write_still_reads_the_answer() -> None:
    raw = _RecordingStream()
    stream = lanes._HeldWrites(raw)
    stream.write(b"x" * lanes.MAX_HELD_BYTES)
    assert raw.sent == []
    stream.write(b"y")
    assert [len(chunk) for chunk in raw.sent] == [lanes.MAX_HELD_BYTES + 1]
    refused = _RecordingStream(answer=b"HTTP/1.1 413 Payload Too Large\r\n", fail_write=True)
    stream = lanes._HeldWrites(refused)
    stream.write(b"POST / HTTP/1.1\r\n\r\n")
    assert stream.read(65536) == b"HTTP/1.1 413 Payload Too Large\r\n"  # as httpcore does after a WriteError


def test_every_lane_holds_its_writes_and_requests_arrive_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    transport = lanes.lane_transport()
    lane = transport._make_lane()
    # httpx 0.28 / httpcore 1.0 keep the pool and its backend there: a version that moved them fails here
    assert isinstance(lane._pool._network_backend, lanes._HeldWritesBackend)  # type: ignore[attr-defined]
    monkeypatch.setenv(KEY_ENV, "sk-test")
    with FakeOpenAI([FakeReply.text("Final Answer: 4")], repeat_last=True, model="gpt-4o-mini") as server:
        settings = ModelSettings("openai/gpt-4o-mini", api_base=server.base_url, api_key_env=KEY_ENV, max_retries=0)
        for question in ("What is 2 + 2?", "What is 1 + 3?"):
            assert client.completion(settings, [{"role": "user", "content": question}]).content == "Final Answer: 4"
        assert [r["messages"][0]["content"] for r in server.requests] == ["What is 2 + 2?", "What is 1 + 3?"]


def test_the_cookie_jar_reads_only_responses_that_set_a_cookie(monkeypatch: pytest.MonkeyPatch) -> None:
    import http.cookiejar

    parsed: list[object] = []
    original = http.cookiejar.CookieJar.extract_cookies
    monkeypatch.setattr(http.cookiejar.CookieJar, "extract_cookies",
                        lambda self, *a: parsed.append(a) or original(self, *a))
    answers = iter([httpx.Response(200, json={}), httpx.Response(200, json={}, headers={"Set-Cookie": "lb=7; Path=/"}),
                    httpx.Response(200, json={})])
    seen: list[str | None] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("cookie"))
        return next(answers)

    session = lanes.lane_client()
    session._transport = httpx.MockTransport(handler)
    assert isinstance(session._cookies, lanes._Cookies)  # httpx 0.28 keeps the jar there
    for _ in range(3):
        session.get("http://127.0.0.1:9/x")
    assert len(parsed) == 1 and session.cookies.get("lb") == "7"
    assert seen == [None, None, "lb=7"]  # the cookie set is sent back, as before
