"""The server's execute_tool span continues the caller's trace: from the `traceparent` header over REST and
from the request's `_meta` over MCP (the [otel] extra, an in-memory exporter)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import httpx2
import pytest

from corral_core import tracing

pytest.importorskip("opentelemetry.sdk")


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


def tool_spans(exporter: Any) -> list[Any]:
    return [s for s in exporter.get_finished_spans() if s.attributes.get("gen_ai.operation.name") == "execute_tool"]


def test_rest_tool_calls_continue_the_callers_trace(served_factory: Any, exporter: Any) -> None:
    served = served_factory()
    with tracing.span("invoke_agent test") as agent:
        added = served.client.execute_tool("add", "add", {"a": 2, "b": 3})
    assert added.success
    [call] = tool_spans(exporter)
    mine = agent._span.get_span_context()
    # the server's span of the request (SERVER, the HTTP conventions' name) continues the caller's span,
    # and execute_tool runs inside it
    [request] = [s for s in exporter.get_finished_spans() if s.kind.name == "SERVER"]
    assert request.name == "POST /tasks/{task_id}/tools/execute" and request.parent.span_id == mine.span_id
    assert call.parent.span_id == request.context.span_id and call.context.trace_id == mine.trace_id
    assert call.kind.name == "INTERNAL"
    assert call.attributes["gen_ai.tool.name"] == "add" and call.attributes["corral.risk"] == "safe"
    assert call.attributes["corral.tool.status"] == "success"
    # without a caller's span the server's request span starts its own trace
    exporter.clear()
    served.client.execute_tool("add", "add", {"a": 1})
    [alone] = tool_spans(exporter)
    [request] = [s for s in exporter.get_finished_spans() if s.kind.name == "SERVER"]
    assert request.parent is None and alone.parent.span_id == request.context.span_id
    assert alone.attributes["corral.tool.status"] == "invalid_args"
    assert alone.status.status_code.name == "ERROR" and alone.attributes["error.type"] == "invalid_args"


def test_mcp_tool_calls_continue_the_trace_in_their_meta(served_factory: Any, exporter: Any) -> None:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    served = served_factory()

    async def call() -> Any:
        async with httpx2.AsyncClient(timeout=httpx2.Timeout(60)) as http, \
                streamable_http_client(served.client.mcp_endpoint("add"), http_client=http) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            return await session.call_tool("add", {"a": 2, "b": 3})

    with tracing.span("invoke_agent mcp-client") as agent:
        result = anyio.run(call)  # the MCP client writes the current trace context into the request's _meta
    assert result.is_error is False
    [span] = tool_spans(exporter)
    mine = agent._span.get_span_context()
    assert span.context.trace_id == mine.trace_id and span.parent.span_id == mine.span_id
    assert span.attributes["gen_ai.tool.name"] == "add" and span.attributes["corral.tool.status"] == "success"
