"""A fake OpenAI-compatible chat server on 127.0.0.1 for tests (no network, no provider).

    from tests.fakes.fake_openai import FakeOpenAI, FakeReply

    with FakeOpenAI([FakeReply.tool_call("calculator", {"operation": "+", "a": 1, "b": 2}),
                     FakeReply.text("Final Answer: 3", usage=(40, 6))]) as server:
        settings = ModelSettings("openai/fake-model", api_base=server.base_url, api_key_env="FAKE_KEY")
        ...                                  # (set FAKE_KEY in the env: the openai client wants a key)
        server.requests[0]["tools"]          # every JSON body received, in order

POST /v1/chat/completions (and /chat/completions) answers with the next queued `FakeReply`.
Replies can also simulate failures: `FakeReply.rate_limited()` (HTTP 429), `FakeReply.server_error()`
(HTTP 500) and `FakeReply.slow(seconds, ...)` (answers late, to trigger client timeouts). When the
queue is empty the server answers HTTP 500 "no scripted reply left" (or repeats the last reply with
`repeat_last=True`). Streaming is not supported.

It also speaks Anthropic's Messages API (POST /v1/messages), enough for litellm's `anthropic/`
models: the same queued replies come back as Anthropic content blocks. `retry_after` on an error
reply sets its Retry-After header. `in_flight`/`max_in_flight` count requests being answered;
`hold=True` keeps every request waiting until the test calls `release(n)`.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.timeouts import HANG

CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")
ANTHROPIC_PATHS = ("/v1/messages",)


@dataclass
class FakeReply:
    """One scripted answer: content and/or tool calls with chosen usage, or an HTTP error."""

    content: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # [{name, arguments: dict|str, id?}]
    usage: tuple[int, int] = (10, 5)  # (prompt_tokens, completion_tokens); total is their sum
    status: int = 200
    error_message: str = ""
    delay: float = 0.0  # seconds to wait before answering
    hold: threading.Event | None = None  # answer only once the test sets it (a call kept in flight)
    retry_after: str | None = None  # Retry-After header of an error reply (429 default: "0")

    @classmethod
    def text(cls, content: str, *, usage: tuple[int, int] = (10, 5)) -> FakeReply:
        return cls(content=content, usage=usage)

    @classmethod
    def tool_call(cls, name: str, arguments: dict[str, Any] | str, *, content: str | None = None,
                  usage: tuple[int, int] = (10, 5), call_id: str | None = None) -> FakeReply:
        call: dict[str, Any] = {"name": name, "arguments": arguments}
        if call_id:
            call["id"] = call_id
        return cls(content=content, tool_calls=[call], usage=usage)

    @classmethod
    def rate_limited(cls, message: str = "Rate limit reached for fake-model: slow down", *,
                     retry_after: str | None = "0") -> FakeReply:
        return cls(status=429, error_message=message, retry_after=retry_after)

    @classmethod
    def server_error(cls, message: str = "The fake server had an internal error", *, status: int = 500,
                     retry_after: str | None = None) -> FakeReply:
        return cls(status=status, error_message=message, retry_after=retry_after)

    @classmethod
    def unauthorized(cls) -> FakeReply:
        """HTTP 401 whose message echoes the Authorization header received, as some providers do."""
        return cls(status=401, error_message="Incorrect API key provided: {authorization}")

    @classmethod
    def slow(cls, seconds: float, content: str = "too late") -> FakeReply:
        return cls(content=content, delay=seconds)


@dataclass
class FakeRequest:
    """One request the server received."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]


class FakeOpenAI:
    """Fake OpenAI chat-completions server in a thread; `start()/stop()` or use as a context manager."""

    def __init__(self, replies: Iterable[FakeReply | str] = (), *, model: str = "fake-model",
                 repeat_last: bool = False, hold: bool = False, keep_alive: bool = False) -> None:
        self.model = model
        self.keep_alive = keep_alive  # HTTP/1.1 connections that stay open between requests
        self.connections = 0  # TCP connections accepted so far
        self.repeat_last = repeat_last
        self.hold = hold
        self.in_flight = 0
        self.max_in_flight = 0
        self._released = 0
        self._changed = threading.Condition()
        self.received: list[FakeRequest] = []
        self._replies: deque[FakeReply] = deque()
        self._last: FakeReply | None = None
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.push(*replies)

    # -- control ---------------------------------------------------------------------------------
    def push(self, *replies: FakeReply | str) -> None:
        """Queue more replies (a plain string means FakeReply.text(string))."""
        with self._lock:
            self._replies.extend(FakeReply.text(r) if isinstance(r, str) else r for r in replies)

    def start(self) -> FakeOpenAI:
        """Bind a free loopback port and serve in a daemon thread."""
        if self._server is not None:
            return self
        self._stopping.clear()
        server = _Server(("127.0.0.1", 0), _make_handler(self))
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="fake-openai", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving (wakes slow replies so nothing hangs) and free the port."""
        if self._server is None:
            return
        self._stopping.set()
        with self._changed:
            self._changed.notify_all()
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def release(self, n: int = 1) -> None:
        """With hold=True: let `n` more waiting (or future) requests be answered."""
        with self._changed:
            self._released += n
            self._changed.notify_all()

    def wait_until(self, predicate: Any, timeout: float = 30.0) -> bool:
        """Wait (woken by each request's arrival and departure) until predicate(self) is true."""
        with self._changed:
            return self._changed.wait_for(lambda: predicate(self), timeout=timeout)

    def _enter(self) -> None:
        with self._changed:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self._changed.notify_all()
            if self.hold:
                self._changed.wait_for(lambda: self._released > 0 or self._stopping.is_set(), timeout=HANG)
                self._released = max(0, self._released - 1)

    def _leave(self) -> None:
        with self._changed:
            self.in_flight -= 1
            self._changed.notify_all()

    # -- what tests read -------------------------------------------------------------------------
    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("FakeOpenAI is not started")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """The api_base to give the client, e.g. http://127.0.0.1:54321/v1."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        """JSON bodies of the chat requests received, in order."""
        with self._lock:
            return [r.body for r in self.received]

    def wait_requests(self, count: int, timeout: float = 10.0) -> bool:
        """Block until `count` requests have arrived (False after `timeout` seconds)."""
        with self._arrived:
            return self._arrived.wait_for(lambda: len(self.received) >= count, timeout)

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._replies)

    # -- serving ---------------------------------------------------------------------------------
    def _next_reply(self, request: FakeRequest) -> tuple[FakeReply | None, int]:
        with self._lock:
            self.received.append(request)
            self._arrived.notify_all()
            number = len(self.received)
            if self._replies:
                self._last = self._replies.popleft()
                return self._last, number
            return (self._last if self.repeat_last else None), number

    def _body_for(self, reply: FakeReply, number: int) -> dict[str, Any]:
        calls = [
            {"id": call.get("id") or f"call_fake_{number}_{index}", "type": "function",
             "function": {"name": call["name"], "arguments": call["arguments"] if isinstance(call["arguments"], str)
                          else json.dumps(call["arguments"])}}
            for index, call in enumerate(reply.tool_calls)
        ]
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if calls:
            message["tool_calls"] = calls
        prompt, completion = reply.usage
        return {
            "id": f"chatcmpl-fake-{number}", "object": "chat.completion", "created": 1700000000, "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
        }


    def _anthropic_body_for(self, reply: FakeReply, number: int) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        if reply.content:
            content.append({"type": "text", "text": reply.content})
        for index, call in enumerate(reply.tool_calls):
            arguments = call["arguments"]
            content.append({"type": "tool_use", "id": call.get("id") or f"toolu_fake_{number}_{index}",
                            "name": call["name"],
                            "input": json.loads(arguments) if isinstance(arguments, str) else arguments})
        prompt, completion = reply.usage
        return {"id": f"msg_fake_{number}", "type": "message", "role": "assistant", "model": self.model,
                "content": content, "stop_reason": "tool_use" if reply.tool_calls else "end_turn",
                "stop_sequence": None, "usage": {"input_tokens": prompt, "output_tokens": completion}}


def _anthropic_error_body(status: int, message: str) -> dict[str, Any]:
    kind = {429: "rate_limit_error", 500: "api_error", 529: "overloaded_error", 404: "not_found_error"}
    return {"type": "error", "error": {"type": kind.get(status, "api_error"), "message": message}}


def _error_body(status: int, message: str) -> dict[str, Any]:
    kind = {429: "rate_limit_exceeded", 500: "server_error", 404: "not_found", 400: "invalid_request_error"}
    return {"error": {"message": message, "type": kind.get(status, "api_error"), "param": None,
                      "code": kind.get(status, "api_error")}}


class _Server(ThreadingHTTPServer):
    request_queue_size = 1024  # hundreds of clients may connect at once (socketserver's default is 5)


def _make_handler(fake: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        # one request per connection unless asked (nothing lingers at stop())
        protocol_version = "HTTP/1.1" if fake.keep_alive else "HTTP/1.0"

        def setup(self) -> None:
            with fake._lock:
                fake.connections += 1
            super().setup()

        def log_message(self, fmt: str, *args: Any) -> None:  # keep test output quiet
            return

        def do_POST(self) -> None:
            path = self.path.split("?", 1)[0]
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            anthropic = path in ANTHROPIC_PATHS
            errors = _anthropic_error_body if anthropic else _error_body
            if path not in CHAT_PATHS and not anthropic:
                self._send(404, _error_body(404, f"FakeOpenAI serves only {CHAT_PATHS + ANTHROPIC_PATHS}, not {path}"))
                return
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError as exc:
                self._send(400, errors(400, f"request body is not JSON: {exc}"))
                return
            request = FakeRequest(path=path, headers={k.lower(): v for k, v in self.headers.items()}, body=body)
            fake._enter()
            self._answering = True
            try:
                self._answer(request, anthropic)
            finally:
                self._answered()

        def _answered(self) -> None:
            """The request stops counting as in flight once its answer starts to go out: a client may read
            the answer and send its next request before this thread runs on (in_flight would count both)."""
            if getattr(self, "_answering", False):
                self._answering = False
                fake._leave()

        def _answer(self, request: FakeRequest, anthropic: bool) -> None:
            errors = _anthropic_error_body if anthropic else _error_body
            reply, number = fake._next_reply(request)
            if reply is None:
                self._send(500, errors(500, f"FakeOpenAI: no scripted reply left (request #{number})"))
                return
            if reply.delay and fake._stopping.wait(reply.delay):
                return  # server stopping: drop the slow reply
            while reply.hold is not None and not reply.hold.wait(0.05):
                if fake._stopping.is_set():
                    return
            if reply.status != 200:
                message = reply.error_message.replace("{authorization}", request.headers.get("authorization", ""))
                self._send(reply.status, errors(reply.status, message or f"HTTP {reply.status}"),
                           retry_after=reply.retry_after)
                return
            self._send(200, fake._anthropic_body_for(reply, number) if anthropic else fake._body_for(reply, number))

        def _send(self, status: int, payload: dict[str, Any], retry_after: str | None = None) -> None:
            data = json.dumps(payload).encode("utf-8")
            self._answered()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if retry_after is not None:
                    self.send_header("Retry-After", retry_after)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):  # client gave up (timeout test)
                pass

    return Handler
