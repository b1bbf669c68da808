"""Secrets that reached the agent or the spans before: a provider key in the stack trace of a chained
exception, a tool's own `${ENV}` header echoed by its backend, `api_base` userinfo sent as Basic auth,
and a `password=` query value. Each is planted, echoed back by a server on 127.0.0.1, and looked for
in the tool answers, the events and every attribute of every span event.

Before the fix: the `exception.stacktrace` of the agent's span held `Bearer sk-…`, the tool answers and
`execute_tool` spans held the tool's key, and the Basic form of the userinfo was in the trial error.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from corral_core import tracing
from corral_core.env import Suite, TaskSpec
from corral_core.events import EventKind, ListSink
from corral_core.runner import BenchmarkRunner
from corral_core.safetext import clean, redact, register_url_secrets
from corral_core.server import EmbeddedServer, create_app
from corral_core.spec import spec_from_dict
from corral_core.tools.builtin import http_tool
from tests.fakes.fake_openai import FakeOpenAI, FakeReply
from tests.timeouts import HTTP_TIMEOUT

pytest.importorskip("opentelemetry.sdk")

ROOT = Path(__file__).resolve().parents[2]
SAMPLEMATH = ROOT / "sample_tasks" / "samplemath.yaml"


@pytest.fixture
def exporter() -> Iterator[Any]:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracing.use_provider(provider)
    yield memory
    tracing.use_provider(None)
    provider.shutdown()


def span_text(spans: Any) -> str:
    """Every name, attribute, status and event attribute of `spans`, as one text to grep."""
    parts: list[str] = []
    for span in spans:
        parts += [span.name, repr(dict(span.attributes or {})), str(span.status.description)]
        for event in span.events:
            parts += [event.name, repr(dict(event.attributes or {}))]
    return "\n".join(parts)


def test_a_provider_key_echoed_in_a_chained_exception_is_not_in_any_span(
        exporter: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    key = "sk-span-7c6b5a4938271605f4e3d2c1"
    monkeypatch.setenv("CORRAL_TEST_SPAN_KEY", key)
    with FakeOpenAI([FakeReply.unauthorized()], repeat_last=True) as server:
        spec = spec_from_dict({"name": "spans", "suite": str(SAMPLEMATH), "tasks": ["add"], "trials_per_task": 2,
                               "agent": {"type": "tool_calling"},
                               "model": {"id": "openai/fake-model", "api_base": server.base_url, "max_retries": 0,
                                         "timeout": 30, "api_key_env": "CORRAL_TEST_SPAN_KEY"}}, ROOT)
        sink = ListSink()
        BenchmarkRunner(spec, sink=sink).run()
        assert any(key in r.headers.get("authorization", "") for r in server.received)
    spans = exporter.get_finished_spans()
    assert any(event.name == "exception" for span in spans for event in span.events)  # still recorded
    text = span_text(spans)
    assert "Incorrect API key provided" in text  # what went wrong is still said
    assert key not in text
    assert key not in json.dumps([e.data for e in sink.events], default=str)


class _EchoingBackend(BaseHTTPRequestHandler):
    """Answers 500 with every request header in the body, as a careless backend's debug page does."""

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        body = f"internal error; request was {dict(self.headers.items())!r}".encode()
        self.send_response(500)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def echoing_backend() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _EchoingBackend)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_port}"
    httpd.shutdown()
    httpd.server_close()
    thread.join(5)


def test_a_tools_own_secret_header_echoed_by_its_backend_reaches_neither_the_agent_nor_the_spans(
        exporter: Any, echoing_backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    key = "sk-tool-0f1e2d3c4b5a69788796a5b4"
    monkeypatch.setenv("CORRAL_TEST_TOOL_KEY", key)
    lookup = http_tool("lookup", f"{echoing_backend}/items", description="Look an item up.",
                       headers={"Authorization": "Bearer ${CORRAL_TEST_TOOL_KEY}"})
    suite = Suite("keyed", [TaskSpec(id="t", prompt="Look it up.", answer="x", scoring={"type": "exact"})], [lookup])
    sink = ListSink()
    with EmbeddedServer(create_app(suite, sink=sink)) as served, \
            httpx.Client(base_url=served.url, timeout=HTTP_TIMEOUT) as http:
        answers = [http.post("/tasks/t/tools/execute", json={"tool_name": "lookup", "arguments": {}})
                   for _ in range(3)]
    for answer in answers:
        assert answer.status_code == 200, answer.text
        result = answer.json()["result"]
        assert result["status"] != "success" and "500" in result["error_message"]  # the failure is still said
        assert "'Authorization': '***'" in result["error_message"] and key not in answer.text
    tool_spans = [s for s in exporter.get_finished_spans() if s.name == "execute_tool lookup"]
    assert len(tool_spans) == 3
    assert key not in span_text(exporter.get_finished_spans())
    assert key not in json.dumps([e.data for e in sink.events], default=str)


def test_userinfo_in_its_basic_auth_form_and_password_query_values_are_masked() -> None:
    password = "pw-basic-5e4d3c2b1a09f8e7"
    register_url_secrets(f"http://corral:{password}@127.0.0.1:9/v1")
    basic = base64.b64encode(f"corral:{password}".encode()).decode()
    assert redact(f"proxy said: Authorization: Basic {basic}") == "proxy said: Authorization: Basic ***"
    store_error = ("opening the store postgresql+psycopg://u@127.0.0.1:9/x?password=PgQueryPw-1234abcd&sslmode=off "
                   "failed")
    assert redact(store_error) == \
        "opening the store postgresql+psycopg://***@127.0.0.1:9/x?password=***&sslmode=off failed"
    assert clean({"dsn": "host=db user=u password=Pw-dsn-98765432 dbname=x"}) == \
        {"dsn": "host=db user=u password=*** dbname=x"}


def test_api_base_userinfo_sent_as_basic_auth_is_not_in_the_trial_error_or_spans(
        exporter: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    password = "pw-echoed-6a5b4c3d2e1f0a9b"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-unused-by-basic-auth-0000")  # the client wants one; userinfo wins
    with FakeOpenAI([FakeReply.unauthorized()], repeat_last=True) as server:
        base = server.base_url.replace("http://", f"http://corral:{password}@")
        spec = spec_from_dict({"name": "basic", "suite": str(SAMPLEMATH), "tasks": ["add"], "trials_per_task": 1,
                               "agent": {"type": "tool_calling"},
                               "model": {"id": "openai/fake-model", "api_base": base, "max_retries": 0,
                                         "timeout": 30}}, ROOT)
        sink = ListSink()
        BenchmarkRunner(spec, sink=sink).run()
        sent = [r.headers.get("authorization", "") for r in server.received]
    basic = base64.b64encode(f"corral:{password}".encode()).decode()
    assert any(basic in header for header in sent), sent  # it really went out in that form
    [finished] = sink.of_kind(EventKind.TRIAL_FINISHED)
    assert "Incorrect API key provided" in str(finished.data.get("error"))
    everything = json.dumps([e.data for e in sink.events], default=str) + span_text(exporter.get_finished_spans())
    assert basic not in everything and password not in everything
