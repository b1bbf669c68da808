"""LazyApp: the workbench's servers build their FastAPI app on the first request (or on `build()`),
and answer exactly as an app built at once: same bytes, same Host checks, same shutdown."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx

from corral_core.server import EmbeddedServer, create_app
from corral_core.server.lazy import LazyApp
from tests.server.conftest import make_suite
from tests.timeouts import HTTP_TIMEOUT

ROOT = Path(__file__).resolve().parents[2]
REQUESTS = [
    ("GET", "/tasks"), ("GET", "/tasks/add/prompt"), ("GET", "/tasks/add/tools?verbosity=brief"),
    ("GET", "/tasks/add/tools/mcp"), ("GET", "/tasks/nope/prompt"), ("GET", "/tasks/add/tools?verbosity=zzz"),
    ("POST", "/tasks/add/tools/execute"), ("POST", "/trials/nope/surrender"), ("GET", "/dependency_graph"),
    ("GET", "/approvals"), ("GET", "/openapi.json"), ("GET", "/health"),
]


def _answers(url: str) -> list[tuple[int, str, bytes]]:
    with httpx.Client(base_url=url, timeout=HTTP_TIMEOUT) as http:
        answers = [http.request(method, path, json={"arguments": []} if method == "POST" else None)
                   for method, path in REQUESTS]
        answers.append(http.get("/tasks", headers={"Host": "attacker.example"}))  # DNS rebinding: 421
    return [(answer.status_code, answer.headers.get("content-type", ""), answer.content) for answer in answers]


def test_a_lazy_server_answers_byte_for_byte_as_one_built_at_once() -> None:
    lazy, eager = LazyApp(make_suite()), create_app(make_suite())
    with EmbeddedServer(eager) as eager_server, EmbeddedServer(lazy) as lazy_server:
        assert not lazy.built
        assert lazy.state.requests_served == 0
        expected = _answers(eager_server.url)
        assert _answers(lazy_server.url) == expected
        assert [status for status, _, _ in expected] == [200, 200, 200, 200, 404, 422, 422, 404, 200, 200, 200, 200,
                                                         421]
        assert lazy.built and lazy.state.requests_served == eager.state.requests_served == len(REQUESTS)
        with httpx.Client(base_url=lazy_server.url, timeout=HTTP_TIMEOUT) as http:
            workspace = http.post("/tasks/add/trials").json()["workspace"]
    assert not Path(workspace).exists()  # the real app's lifespan ended: its runtime closed
    assert not lazy.state.runtime.base_work_dir_if_created.exists()


def test_an_app_built_before_its_first_request_answers_for_the_bound_address() -> None:
    lazy = LazyApp(make_suite())
    with EmbeddedServer(lazy) as server:
        lazy.build()
        with httpx.Client(base_url=server.url, timeout=HTTP_TIMEOUT) as http:
            assert http.get("/tasks").json() == ["add", "echo", "first", "second"]
            assert http.get("/tasks", headers={"Host": "attacker.example"}).status_code == 421
            assert http.get("/health").json()["requests_served"] == 1  # the 421 is answered before counting


SERVE = """
import json, sys, httpx
from corral_core.server.embedded import EmbeddedServer
from corral_core.server.lazy import LazyApp
from corral_core.env import load_suite

with EmbeddedServer(LazyApp(load_suite("sample_tasks/samplemath.yaml"))) as server:
    before = "fastapi" in sys.modules
    httpx.get(f"{server.url}/tasks")
    print(json.dumps([before, "fastapi" in sys.modules]))
"""


def test_serving_a_lazy_app_imports_fastapi_only_with_the_first_request() -> None:
    out = subprocess.run([sys.executable, "-c", SERVE], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [False, True]
