"""OpenTelemetry spans of a run (the [otel] extra): invoke_agent per trial, chat per LLM call, execute_tool per
tool call on the server, linked to the agent's span through the request's trace context."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from corral_core import tracing
from corral_core.errors import UserError
from corral_core.events import EventKind, ListSink
from corral_core.runner import BenchmarkRunner
from corral_core.spec import spec_from_dict

pytest.importorskip("opentelemetry.sdk")

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data"


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


def by_operation(spans: Any) -> dict[str, list[Any]]:
    found: dict[str, list[Any]] = {}
    for span in spans:
        found.setdefault(span.attributes.get("gen_ai.operation.name"), []).append(span)
    return found


def test_a_run_emits_agent_chat_and_tool_spans_linked_by_trace_context(exporter: Any) -> None:
    spec = spec_from_dict({"name": "traced", "suite": str(ROOT / "sample_tasks" / "samplemath.yaml"),
                           "tasks": ["add", "compound"], "model": "scripted/samplemath", "trials_per_task": 1,
                           "parallel": 2, "arms": [{"name": "terse", "verbosity": "minimal"},
                                                   {"name": "calling", "verbosity": "full",
                                                    "agent": {"type": "tool_calling"}}]}, ROOT)
    sink = ListSink()
    BenchmarkRunner(spec, sink=sink).run()
    spans = by_operation(exporter.get_finished_spans())
    agents = {span.attributes["corral.trial_id"]: span for span in spans["invoke_agent"]}
    finished = {e.trial_id: e.data for e in sink.of_kind(EventKind.TRIAL_FINISHED)}
    assert agents.keys() == finished.keys() and len(agents) == 4
    for trial_id, span in agents.items():
        assert span.name == f"invoke_agent {span.attributes['gen_ai.agent.name']}"
        assert span.attributes["corral.arm"] == finished[trial_id]["arm"]
        verbosity = "minimal" if span.attributes["corral.arm"] == "terse" else "full"
        assert span.attributes["corral.verbosity"] == verbosity
        assert span.attributes["corral.status"] == finished[trial_id]["status"] == "completed"
        assert span.attributes["corral.approval"] == "reject"
    by_span_id = {span.context.span_id: trial_id for trial_id, span in agents.items()}

    def trial_of(span: Any) -> str:
        assert span.parent is not None, span.name
        return by_span_id[span.parent.span_id]

    # one chat span per LLM call, a child of its trial's agent span
    responses = sink.of_kind(EventKind.LLM_RESPONSE)
    assert len(spans["chat"]) == len(responses) > 0
    assert sorted(trial_of(s) for s in spans["chat"]) == sorted(e.trial_id for e in responses)
    assert all(s.name == "chat scripted/samplemath" and s.attributes["gen_ai.request.model"] == "scripted/samplemath"
               for s in spans["chat"])
    assert all(s.kind.name == "CLIENT" and s.attributes["gen_ai.provider.name"] == "scripted" for s in spans["chat"])
    assert all(s.kind.name == "INTERNAL" and s.attributes["gen_ai.provider.name"] == "scripted"
               for s in spans["invoke_agent"])
    # the server's request spans (SERVER), children of the agent's span through the traceparent header:
    # the trial's creation, and each tools/execute, in which the execute_tool span runs
    requests = {s.context.span_id: s for s in exporter.get_finished_spans() if s.kind.name == "SERVER"}
    created = [s for s in requests.values() if s.name == "POST /tasks/{task_id}/trials"]
    assert sorted(trial_of(s) for s in created) == sorted(agents)  # one trace per trial, its creation in it
    assert len({s.context.trace_id for s in exporter.get_finished_spans()}) == len(agents)
    # one execute_tool span per tool call, made by the server inside the request's span
    calls = sink.of_kind(EventKind.TOOL_CALL)
    assert len(spans["execute_tool"]) == len(calls) > 0
    for span in spans["execute_tool"]:
        request = requests[span.parent.span_id]
        assert request.name == "POST /trials/{trial_id}/tools/execute" and span.kind.name == "INTERNAL"
        assert request.attributes["http.route"] == request.name.split(" ")[1]
        trial_id = trial_of(request)
        assert span.attributes["corral.trial_id"] == trial_id
        assert span.context.trace_id == agents[trial_id].context.trace_id
        assert span.attributes["gen_ai.tool.name"] == "calculator" and span.attributes["corral.risk"] == "safe"
        assert span.attributes["corral.tool.status"] == "success"
    assert sorted(trial_of(requests[s.parent.span_id]) for s in spans["execute_tool"]) == sorted(
        e.trial_id for e in calls)


def test_confirm_tools_carry_their_approval_and_a_failed_trial_its_fault(exporter: Any) -> None:
    spec = spec_from_dict({"name": "ops", "suite": str(DATA / "ops.yaml"), "tasks": ["danger"],
                           "model": f"scripted/{DATA / 'ops.script.yaml'}", "trials_per_task": 1,
                           "approval": "approve"}, DATA)
    BenchmarkRunner(spec, sink=ListSink()).run()
    spans = by_operation(exporter.get_finished_spans())
    launch = next(s for s in spans["execute_tool"] if s.attributes["gen_ai.tool.name"] == "launch")
    assert launch.attributes["corral.risk"] == "confirm" and launch.attributes["corral.approval"] == "approved"
    exporter.clear()
    broken = spec_from_dict({"name": "gone", "suite": str(ROOT / "sample_tasks" / "samplemath.yaml"),
                             "tasks": ["add"], "model": {"id": "openai/x", "api_base": "http://127.0.0.1:9/v1",
                                                         "max_retries": 0, "timeout": 5},
                             "trials_per_task": 1}, ROOT)
    BenchmarkRunner(broken, sink=ListSink()).run()
    spans = by_operation(exporter.get_finished_spans())
    [agent] = spans["invoke_agent"]
    assert agent.attributes["corral.status"] == "error" and agent.attributes["corral.fault"] == "provider"
    assert agent.attributes["error.type"] == "provider" and agent.status.status_code.name == "ERROR"
    [chat] = spans["chat"]
    assert chat.parent.span_id == agent.context.span_id and chat.status.status_code.name == "ERROR"


def test_tracing_is_off_without_a_provider_or_otel_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_EXPORTER"):
        monkeypatch.delenv(name, raising=False)
    tracing.use_provider(None)
    with tracing.span("x") as span:
        assert not span.recording
    assert tracing.inject({}) == {}


def test_otel_variables_without_the_sdk_say_which_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", None)  # as if the [otel] extra were missing
    monkeypatch.setattr(tracing, "_global_sdk_provider", lambda: None)
    tracing.use_provider(None)
    try:
        with pytest.raises(UserError, match=r"OpenTelemetry SDK is not installed.*pip install 'corral-tui\[otel\]'"):
            tracing.tracer()
    finally:
        tracing.use_provider(None)


def test_a_batch_run_with_otel_variables_but_no_sdk_exits_2_before_running(tmp_path: Path) -> None:
    spec = tmp_path / "t.bench.yaml"
    spec.write_text(f"name: nosdk\nsuite: {ROOT / 'sample_tasks' / 'samplemath.yaml'}\ntasks: [add]\n"
                    "model: scripted/samplemath\n", encoding="utf-8")
    hide_sdk = ("import sys; sys.modules['opentelemetry.sdk.trace'] = None; from corral_tui.cli import main; "
                f"sys.exit(main(['--batch', {str(spec)!r}, '--db', {str(tmp_path / 'x.db')!r}]))")
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_LOG": "ERROR",
           "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}
    run = subprocess.run([sys.executable, "-c", hide_sdk], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 2, run.stderr
    assert "OpenTelemetry SDK is not installed" in run.stderr and "corral-tui[otel]" in run.stderr
    assert "Traceback" not in run.stderr and not (tmp_path / "x.db").exists()  # nothing ran


class _Receiver(BaseHTTPRequestHandler):
    """A minimal OTLP/HTTP receiver: keeps every ExportTraceServiceRequest it is sent."""

    received: list[bytes]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        if self.path == "/v1/traces":
            self.received.append(body)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


def test_a_batch_run_exports_to_a_real_otlp_receiver(tmp_path: Path) -> None:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from opentelemetry.proto.trace.v1.trace_pb2 import Span

    handler = type("Receiver", (_Receiver,), {"received": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        spec = tmp_path / "t.bench.yaml"
        spec.write_text(f"name: otlp\nsuite: {ROOT / 'sample_tasks' / 'samplemath.yaml'}\ntasks: [add]\n"
                        "model: scripted/samplemath\ntrials_per_task: 2\n", encoding="utf-8")
        env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_LOG": "ERROR",
               "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{server.server_address[1]}",
               "OTEL_SERVICE_NAME": "corral-test"}
        env.pop("OTEL_SDK_DISABLED", None)
        run = subprocess.run([sys.executable, "-m", "corral_tui.cli", "--batch", str(spec), "--db",
                              str(tmp_path / "x.db"), "--quiet"], env=env, capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stderr
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    spans = []
    for body in handler.received:  # the process flushed its batch at exit, before the run returned
        request = ExportTraceServiceRequest.FromString(body)
        for resource in request.resource_spans:
            service = {a.key: a.value.string_value for a in resource.resource.attributes}["service.name"]
            assert service == "corral-test"
            spans += [span for scope in resource.scope_spans for span in scope.spans]
    names = sorted({span.name for span in spans})
    assert {"invoke_agent react", "chat scripted/samplemath", "execute_tool calculator"} <= set(names)
    agents = {span.span_id: span for span in spans if span.name == "invoke_agent react"}
    assert len(agents) == 2
    assert len({span.trace_id for span in spans}) == 2  # one trace per trial, its creation included
    by_id = {span.span_id: span for span in spans}
    kind = {value: name for name, value in Span.SpanKind.items()}
    for span in spans:
        if span.name == "chat scripted/samplemath":
            assert span.parent_span_id in agents and kind[span.kind] == "SPAN_KIND_CLIENT"
        if span.name.startswith("POST "):  # the server's requests: the creation and each tools/execute
            assert span.parent_span_id in agents and kind[span.kind] == "SPAN_KIND_SERVER", span.name
        if span.name == "execute_tool calculator":  # inside the request's span (FastAPI's, or ours)
            request = by_id[span.parent_span_id]
            while kind[request.kind] != "SPAN_KIND_SERVER":
                request = by_id[request.parent_span_id]
            assert request.name == "POST /trials/{trial_id}/tools/execute" and request.parent_span_id in agents
            assert kind[span.kind] == "SPAN_KIND_INTERNAL"
        if span.name.startswith(("chat", "invoke_agent")):
            provider = {a.key: a.value.string_value for a in span.attributes}["gen_ai.provider.name"]
            assert provider == "scripted"
        if span.parent_span_id:
            assert span.trace_id == by_id[span.parent_span_id].trace_id
    assert sum(span.name == "POST /tasks/{task_id}/trials" for span in spans) == 2
