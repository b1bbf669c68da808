"""server/hot_routes.py: a trial's own routes skip FastAPI's routing, and answer exactly as FastAPI does.

Every case runs against two servers of the same suite, one as built (`fast`) and one without the
`HotRoutes` middleware (`plain`, FastAPI for everything); their answers must be the same (status,
header names, JSON body), trial ids, paths, ports and times aside.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator

import httpx
import pytest
from fastapi.routing import APIRoute

from corral_core.server import EmbeddedServer, create_app
from corral_core.server.hot_routes import HotRoutes
from tests.server.conftest import make_suite
from tests.timeouts import HTTP_TIMEOUT

JSON = {"Content-Type": "application/json"}


class Server:
    def __init__(self, *, hot: bool, **options: object) -> None:
        self.app = create_app(make_suite(), **options)  # type: ignore[arg-type]
        if not hot:  # before the first request builds the middleware stack
            self.app.user_middleware = [m for m in self.app.user_middleware if m.cls is not HotRoutes]
        self.server = EmbeddedServer(self.app)
        self.url = self.server.start()
        self.http = httpx.Client(base_url=self.url, timeout=HTTP_TIMEOUT)

    def close(self) -> None:
        self.http.close()
        self.server.stop()


@pytest.fixture
def servers() -> Iterator[Callable[..., tuple[Server, Server]]]:
    started: list[Server] = []

    def start(**options: object) -> tuple[Server, Server]:
        pair = Server(hot=True, **options), Server(hot=False, **options)
        started.extend(pair)
        return pair

    yield start
    for server in started:
        server.close()


def seen(server: Server, response: httpx.Response) -> tuple[int, list[str], str]:
    """The answer with what differs between two servers by nature replaced."""
    text = response.text.replace(server.url, "<url>")
    text = re.sub(r"tr_[0-9a-f]{16}", "<trial>", text)
    text = re.sub(r'"workspace":"[^"]*"', '"workspace":"<x>"', text)
    text = re.sub(r'"\d{4}-\d\d-\d\dT[^"]*"', '"<time>"', text)
    text = re.sub(r'"(duration|elapsed)":[-0-9.e]+', r'"\1":0', text)
    headers = sorted(name for name in response.headers if name not in ("date", "server"))
    return response.status_code, headers, text


def opened(http: httpx.Client, task: str = "add") -> str:
    response = http.post(f"/tasks/{task}/trials")
    assert response.status_code == 200, response.text
    return str(response.json()["trial_id"])


def chunks(body: bytes) -> Iterator[bytes]:  # no Content-Length: the body limit counts as it arrives
    yield body[:10]
    yield body[10:]


CASES: dict[str, Callable[[httpx.Client], list[httpx.Response]]] = {
    "open, no body": lambda h: [h.post("/tasks/add/trials")],
    "open, every field": lambda h: [h.post("/tasks/echo/trials", json={
        "episode_id": "e1", "benchmark_id": "b", "arm": "full", "trial_index": 3, "verbosity": "BRIEF",
        "approval": "reject", "inputs": {"first": "red"}, "unknown": 1})],
    "open, null body": lambda h: [h.post("/tasks/add/trials", content=b"null", headers=JSON)],
    "open, bad field": lambda h: [h.post("/tasks/add/trials", json={"episode_id": 5})],
    "open, bad verbosity": lambda h: [h.post("/tasks/add/trials", json={"verbosity": "loud"})],
    "open, looser approval": lambda h: [h.post("/tasks/add/trials", json={"approval": "auto"})],
    "open, not JSON": lambda h: [h.post("/tasks/add/trials", content=b"{", headers=JSON)],
    "open, text body": lambda h: [h.post("/tasks/add/trials", content=b"{}", headers={"Content-Type": "text/plain"})],
    "open, charset": lambda h: [h.post("/tasks/add/trials", content=b'{"arm": "a"}',
                                       headers={"Content-Type": "application/json; charset=utf-8"})],
    "open, unknown task": lambda h: [h.post("/tasks/nope/trials", json={})],
    "open, escaped task id": lambda h: [h.post("/tasks/a%2Fb/trials", json={})],
    "open, trailing slash": lambda h: [h.post("/tasks/add/trials/", json={})],
    "execute": lambda h: [h.post(f"/trials/{opened(h)}/tools/execute",
                                 json={"tool_name": "add", "arguments": {"a": 2, "b": 3}})],
    "execute, tool raises": lambda h: [h.post(f"/trials/{opened(h)}/tools/execute",
                                              json={"tool_name": "explode", "arguments": {"message": "boom"}})],
    "execute, unknown tool": lambda h: [h.post(f"/trials/{opened(h)}/tools/execute",
                                               json={"tool_name": "nope", "arguments": {}})],
    "execute, bad arguments": lambda h: [h.post(f"/trials/{opened(h)}/tools/execute",
                                                json={"tool_name": "add", "arguments": {"a": "x"}})],
    "execute, lone surrogate": lambda h: [h.post(f"/trials/{opened(h, 'echo')}/tools/execute",
                                                 content=b'{"tool_name":"echo","arguments":{"text":"a\\ud800b"}}',
                                                 headers=JSON)],
    "execute, no arguments": lambda h: [h.post(f"/trials/{opened(h)}/tools/execute", json={"tool_name": "add"})],
    "execute, a list": lambda h: [h.post(f"/trials/{opened(h)}/tools/execute", json=[1])],
    "execute, not JSON": lambda h: [h.post(f"/trials/{opened(h)}/tools/execute", content=b"{x", headers=JSON)],
    "execute, no body": lambda h: [h.post(f"/trials/{opened(h)}/tools/execute")],
    "execute, trace headers": lambda h: [h.post(
        f"/trials/{opened(h)}/tools/execute", json={"tool_name": "add", "arguments": {"a": 1, "b": 1}},
        headers={"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"})],
    "execute, unknown trial": lambda h: [h.post("/trials/tr_0000000000000000/tools/execute",
                                                json={"tool_name": "add", "arguments": {}})],
    "execute, unknown trial, bad body": lambda h: [h.post("/trials/tr_0000000000000000/tools/execute", json={})],
    "execute, confirm tool rejected": lambda h: [h.post(f"/trials/{opened(h)}/tools/execute",
                                                        json={"tool_name": "touch_confirm",
                                                              "arguments": {"path": "/nonexistent/x"}})],
    "submit": lambda h: [h.post(f"/trials/{opened(h)}/submit", json={"answer": "5"})],
    "submit, close": lambda h: [h.post(f"/trials/{(t := opened(h))}/submit?close=true", json={"answer": 5}),
                                h.get(f"/trials/{t}/status")],
    "submit, close=false": lambda h: [h.post(f"/trials/{(t := opened(h))}/submit?close=false",
                                             json={"answer": 4.5, "other": 1}),
                                      h.get(f"/trials/{t}/status")],
    "submit, close=1": lambda h: [h.post(f"/trials/{opened(h)}/submit?close=1", json={"answer": None})],
    "submit, close=maybe": lambda h: [h.post(f"/trials/{opened(h)}/submit?close=maybe", json={"answer": "5"})],
    "submit, a list": lambda h: [h.post(f"/trials/{opened(h)}/submit", json={"answer": [5]})],
    "submit, no answer": lambda h: [h.post(f"/trials/{opened(h)}/submit", json={})],
    "submit, no body": lambda h: [h.post(f"/trials/{opened(h)}/submit")],
    "submit twice": lambda h: [h.post(f"/trials/{(t := opened(h))}/submit", json={"answer": "5"}),
                               h.post(f"/trials/{t}/submit", json={"answer": "5"})],
    "submit, unknown trial": lambda h: [h.post("/trials/tr_0000000000000000/submit?close=true", json={"answer": 1})],
    "surrender": lambda h: [h.post(f"/trials/{opened(h)}/surrender")],
    "surrender, close, body": lambda h: [h.post(f"/trials/{(t := opened(h))}/surrender?close=true", json=[1]),
                                         h.get(f"/trials/{t}/status")],
    "surrender, unknown trial": lambda h: [h.post("/trials/tr_0000000000000000/surrender")],
    "a GET on a hot path": lambda h: [h.get(f"/trials/{opened(h)}/submit")],
}


@pytest.mark.parametrize("case", CASES)
def test_the_hot_routes_answer_as_fastapi_does(servers, case):
    fast, plain = servers()
    assert ([seen(fast, r) for r in CASES[case](fast.http)]
            == [seen(plain, r) for r in CASES[case](plain.http)])


def test_a_streamed_body_over_the_limit_is_413_as_on_fastapi(servers):
    fast, plain = servers(max_body_bytes=64)
    body = json.dumps({"tool_name": "echo", "arguments": {"text": "x" * 200}}).encode()

    def send(server: Server) -> tuple[int, list[str], str]:
        return seen(server, server.http.post(f"/trials/{opened(server.http, 'echo')}/tools/execute",
                                             content=chunks(body), headers=JSON))

    answer = send(fast)
    assert answer[0] == 413 and answer == send(plain)


def test_a_trials_own_requests_skip_fastapis_routing(servers, monkeypatch):
    """Open, tool call, submit with close: no FastAPI route handles them; any other route still goes there."""
    routed: list[str] = []
    handle = APIRoute.handle

    async def counting(self, scope, receive, send):  # type: ignore[no-untyped-def]
        routed.append(f"{scope['method']} {self.path}")
        await handle(self, scope, receive, send)

    monkeypatch.setattr(APIRoute, "handle", counting)
    fast, _ = servers()
    trial = opened(fast.http)
    call = fast.http.post(f"/trials/{trial}/tools/execute", json={"tool_name": "add", "arguments": {"a": 2, "b": 3}})
    assert call.json()["result"]["result"] == "5"
    other = opened(fast.http)
    assert fast.http.post(f"/trials/{trial}/submit?close=true", json={"answer": 5}).json()["closed"] is True
    assert fast.http.post(f"/trials/{other}/surrender").json()["surrendered"] is True
    assert routed == []
    assert fast.http.get(f"/trials/{other}/status").status_code == 200
    assert routed == ["GET /trials/{trial_id}/status"]
