"""A fake OpenAI-compatible chat provider on 127.0.0.1 that answers every request after a fixed delay.

    python benchmarks/fake_provider.py [--delay 0.5] [--port 0]     # prints "port N" once it listens

Made for `benchmarks/vs_inspect.py --latency`: it stands in for a remote model whose latency, not
our CPU, bounds a run. One asyncio loop, HTTP/1.1 keep-alive, no framework, so hundreds of requests
can wait at once for almost no CPU. It plays the calculator workload: a conversation without a tool
result gets one `calculator` call for the question "What is A <op> B?" in its user message; once the
tool has answered, the reply is "Final Answer: <the tool's result>". Loopback only.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import re
import sys
from typing import Any

QUESTION = re.compile(r"What is (-?[\d.]+) (\*\*|[-+*/]) (-?[\d.]+)\?")
_ids = itertools.count()


def reply(request: dict[str, Any]) -> dict[str, Any]:
    """The chat completion for one request body (tool call first, then the answer)."""
    messages = request.get("messages") or []
    tool_results = [m for m in messages if m.get("role") == "tool"]
    number = next(_ids)
    if tool_results:
        message: dict[str, Any] = {"role": "assistant", "content": f"Final Answer: {tool_results[-1].get('content')}"}
        finish = "stop"
    else:
        text = " ".join(str(m.get("content")) for m in messages if m.get("role") == "user")
        found = QUESTION.search(text)
        if found is None:
            message, finish = {"role": "assistant", "content": "GIVE UP"}, "stop"
        else:
            a, operation, b = found.groups()
            arguments = json.dumps({"operation": operation, "a": float(a), "b": float(b)})
            call = {"id": f"call_{number}", "type": "function",
                    "function": {"name": "calculator", "arguments": arguments}}
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
            finish = "tool_calls"
    return {"id": f"chatcmpl-{number}", "object": "chat.completion", "created": 0,
            "model": request.get("model", "fake-model"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}}


async def _serve_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float) -> None:
    try:
        while True:
            request_line = await reader.readline()
            if not request_line:
                return
            length = 0
            while True:
                header = await reader.readline()
                if header in (b"\r\n", b"\n", b""):
                    break
                name, _, value = header.decode("latin-1").partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value.strip())
            body = await reader.readexactly(length) if length else b"{}"
            await asyncio.sleep(delay)
            payload = json.dumps(reply(json.loads(body))).encode()
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                         + str(len(payload)).encode() + b"\r\n\r\n" + payload)
            await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError):
        return
    finally:
        writer.close()


async def serve(delay: float, port: int) -> None:
    server = await asyncio.start_server(lambda r, w: _serve_connection(r, w, delay), "127.0.0.1", port, backlog=1024)
    print(f"port {server.sockets[0].getsockname()[1]}", flush=True)
    async with server:
        await server.serve_forever()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay", type=float, default=0.5, help="seconds before each answer")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args.delay, args.port))
    return 0


if __name__ == "__main__":
    sys.exit(main())
