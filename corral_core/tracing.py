"""OpenTelemetry spans of runs, in the GenAI semantic conventions: `invoke_agent` per trial, `chat` per
LLM call, `execute_tool` per tool call on the environment server (its parent is the agent's span,
carried over REST in the `traceparent` header and over MCP in the request's `_meta`).

Off unless asked, and then nearly free when off: tracing is on when a tracer provider is installed
(`use_provider`, or an SDK provider set globally, e.g. by `opentelemetry-instrument`), or when the
standard variables ask for an exporter (`OTEL_EXPORTER_OTLP_ENDPOINT`,
`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_TRACES_EXPORTER`); the latter needs the `[otel]` extra.
`OTEL_SDK_DISABLED=true` turns it off. opentelemetry is imported only then.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from collections.abc import Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from typing import Any

from corral_core.errors import UserError
from corral_core.safetext import redact

INSTRUMENTATION = "corral-tui"
# litellm's provider prefix -> `gen_ai.provider.name` (GenAiProviderNameValues of the semantic conventions
# the [otel] extra pins, 0.66b2); any other prefix is the provider's own name, as the conventions say
GENAI_PROVIDERS = {"openai": "openai", "text-completion-openai": "openai", "azure": "azure.ai.openai",
                   "azure_ai": "azure.ai.inference", "anthropic": "anthropic", "bedrock": "aws.bedrock",
                   "vertex_ai": "gcp.vertex_ai", "gemini": "gcp.gemini", "cohere": "cohere", "cohere_chat": "cohere",
                   "watsonx": "ibm.watsonx.ai", "perplexity": "perplexity", "xai": "x_ai", "deepseek": "deepseek",
                   "groq": "groq", "mistral": "mistral_ai"}
# a model id without a prefix, by how litellm recognises it
BARE_MODEL_PROVIDERS = (("gpt-", "openai"), ("o1", "openai"), ("o3", "openai"), ("o4", "openai"),
                        ("chatgpt", "openai"), ("claude", "anthropic"), ("gemini", "gcp.gemini"))
SPAN_KINDS = ("internal", "client", "server")
TRACE_HEADERS = ("traceparent", "tracestate", "baggage")  # W3C trace context, as the default propagator writes it
_UNSET: Any = object()
_lock = threading.Lock()
_tracer: Any = _UNSET  # the Tracer in use, None when tracing is off, _UNSET before the first look


class Span:
    """What a `span` block may add to its span; every method does nothing when tracing is off."""

    def __init__(self, span: Any = None) -> None:
        self._span = span

    @property
    def recording(self) -> bool:
        return self._span is not None

    def set(self, attributes: Mapping[str, Any]) -> None:
        """Set attributes; a None value is left out."""
        if self._span is not None:
            for key, value in attributes.items():
                if value is not None:
                    self._span.set_attribute(key, redact(value) if isinstance(value, str) else value)

    def fail(self, error_type: str, message: str | None = None) -> None:
        """Mark the span as failed (`error.type` and an error status)."""
        if self._span is not None:
            from opentelemetry.trace import Status, StatusCode

            self._span.set_attribute("error.type", redact(error_type))
            self._span.set_status(Status(StatusCode.ERROR, None if message is None else redact(message)))

    def record(self, exc: BaseException) -> None:
        """Record `exc` as the span's exception event and error status, its message and whole stack
        trace (chained exceptions included: a provider's echo of the key is often in one) redacted."""
        if self._span is not None:
            import traceback

            from opentelemetry.trace import Status, StatusCode

            message = redact(str(exc))
            stack = redact("".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
            self._span.record_exception(exc, {"exception.message": message, "exception.stacktrace": stack})
            self._span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {message}"))


def genai_provider(model: str) -> str:
    """`gen_ai.provider.name` of a litellm model id: `openai/gpt-4o-mini` -> openai, `bedrock/...` ->
    aws.bedrock, `scripted/x` -> scripted (our offline providers are named as themselves)."""
    prefix, slash, _ = model.partition("/")
    if slash:
        return GENAI_PROVIDERS.get(prefix, prefix)
    return next((provider for start, provider in BARE_MODEL_PROVIDERS if model.startswith(start)), "openai")


def _wanted_by_environment() -> bool:
    exporter = os.environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter == "none":
        return False
    return bool(exporter or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
                or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))


def _disabled() -> bool:
    return os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true"


def _global_sdk_provider() -> Any:
    """The globally set tracer provider when it is a real one (not the API's proxy or no-op)."""
    if "opentelemetry.trace" not in sys.modules and "OTEL_PYTHON_TRACER_PROVIDER" not in os.environ:
        return None  # nothing set one (it is set through that module or named by that variable): ~50 ms not spent
    try:
        from opentelemetry import trace
    except ImportError:
        return None
    provider = trace.get_tracer_provider()
    return None if type(provider).__name__ in ("ProxyTracerProvider", "NoOpTracerProvider") else provider


def _provider_from_environment() -> Any:
    """A tracer provider exporting as the OTEL_* variables say (OTLP over HTTP/protobuf, or console)."""
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter
    except ImportError:
        raise UserError("the OTEL_* variables ask for traces, but the OpenTelemetry SDK is not installed.",
                        fix="pip install 'corral-tui[otel]', or unset OTEL_EXPORTER_OTLP_ENDPOINT / "
                            "OTEL_TRACES_EXPORTER.") from None
    resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME") or INSTRUMENTATION})
    provider = TracerProvider(resource=resource)
    for name in (os.environ.get("OTEL_TRACES_EXPORTER") or "otlp").split(","):
        name = name.strip().lower()
        if name == "console":
            provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter()))
        elif name in ("otlp", ""):
            protocol = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or \
                os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "http/protobuf"
            if protocol != "http/protobuf":
                raise UserError(f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol} is not supported.",
                                fix="use http/protobuf (the [otel] extra's OTLP exporter).")
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        else:
            raise UserError(f"OTEL_TRACES_EXPORTER={name} is not supported.", fix="use otlp, console or none.")
    trace.set_tracer_provider(provider)  # litellm's and the MCP SDK's spans join the same traces
    atexit.register(provider.shutdown)  # flushes what is batched
    return provider


def tracer() -> Any:
    """The Tracer to use, or None when tracing is off (decided once; `use_provider` changes it)."""
    global _tracer
    if _tracer is _UNSET:
        with _lock:
            if _tracer is _UNSET:
                provider = None
                if not _disabled():
                    provider = _global_sdk_provider()
                    if provider is None and _wanted_by_environment():
                        provider = _provider_from_environment()
                _tracer = provider.get_tracer(INSTRUMENTATION) if provider is not None else None
    return _tracer


def check() -> None:
    """Decide now whether tracing is on: OTEL_* variables without the [otel] extra are a UserError at
    start-up (exit 2), not a failure at the first span."""
    tracer()


def use_provider(provider: Any) -> None:
    """Trace with `provider` from now on (None: decide again from the environment). For tests and hosts."""
    global _tracer
    with _lock:
        _tracer = provider.get_tracer(INSTRUMENTATION) if provider is not None else _UNSET


def flush() -> None:
    """Export what is batched now (before a process ends without running atexit handlers)."""
    if tracer() is None:
        return
    from opentelemetry import trace

    provider = trace.get_tracer_provider()
    force_flush = getattr(provider, "force_flush", None)
    if force_flush is not None:
        force_flush()


@contextmanager
def span(name: str, attributes: Mapping[str, Any] | None = None, *, parent: Mapping[str, Any] | None = None,
         kind: str = "internal") -> Iterator[Span]:
    """A span around the block, current in this thread (None attributes left out). `parent`: a carrier
    (HTTP headers, an MCP `_meta`) whose trace context the span continues, unless the current span already
    continues it (a server's request span: then the span is its child); else the current span's. `kind`:
    internal, client (a call to a remote service, such as `chat`) or server (a request served; none is
    started when the current span already serves it, as FastAPI's own request span does)."""
    active = tracer()
    if active is None:
        yield Span()
        return
    from opentelemetry.propagate import extract
    from opentelemetry.trace import SpanKind, get_current_span

    context = None
    if parent:
        candidate = extract(parent)
        wanted = get_current_span(candidate).get_span_context()
        if wanted.is_valid and get_current_span().get_span_context().trace_id != wanted.trace_id:
            context = candidate
        elif wanted.is_valid and kind == "server":  # the web framework's own span serves this request already
            yield Span()
            return
    # the SDK would record an escaping exception itself, with its unredacted text: `record` does it instead
    with active.start_as_current_span(name, context=context, kind=SpanKind[kind.upper()], record_exception=False,
                                      set_status_on_exception=False) as current:
        handle = Span(current)
        handle.set(attributes or {})
        try:
            yield handle
        except BaseException as exc:
            if not isinstance(exc, GeneratorExit):
                handle.record(exc)
            raise


def inject(carrier: MutableMapping[str, str]) -> MutableMapping[str, str]:
    """Add the current trace context (`traceparent`, `tracestate`) to `carrier`, when tracing is on."""
    if tracer() is not None:
        from opentelemetry.propagate import inject as otel_inject

        otel_inject(carrier)
    return carrier
