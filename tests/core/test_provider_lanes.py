"""Provider calls go through one shared httpx client whose requests each get a connection of their own,
kept alive and reused by later calls (corral_core/http_lanes.py)."""

from __future__ import annotations

import threading
from collections.abc import Iterator

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
