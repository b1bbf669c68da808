"""An MCP server (official SDK; stdio, or Streamable HTTP with `--http PORT`) that misbehaves on
request: it hangs until cancelled, freezes its own event loop, dies mid-call or answers with a huge
result. `marker` paths let a test see what happened inside it (a call started, a call was cancelled)
without waiting on the clock."""

import os
import threading
from pathlib import Path

import anyio
from mcp.server.mcpserver import MCPServer

server = MCPServer("flaky")
COUNT = {"calls": 0}


@server.tool()
def echo(text: str) -> str:
    """Say the text back."""
    return text


@server.tool()
def pid() -> int:
    """This server process's id."""
    return os.getpid()


@server.tool()
def bump() -> int:
    """Count the calls of bump this process answered (the server's state)."""
    COUNT["calls"] += 1
    return COUNT["calls"]


@server.tool()
async def hang(marker: str) -> str:
    """Wait until cancelled; the marker file then says so."""
    Path(marker + ".started").write_text(str(os.getpid()))
    try:
        await anyio.sleep_forever()
    except anyio.get_cancelled_exc_class():
        Path(marker).write_text("cancelled")
        raise
    return "never"


@server.tool()
async def freeze(marker: str) -> str:
    """Block the server's event loop for good: it reads nothing more, a cancel included."""
    Path(marker + ".started").write_text(str(os.getpid()))
    threading.Event().wait()
    return "never"


@server.tool()
def huge(chars: int) -> str:
    """A result of `chars` characters."""
    return "x" * chars


@server.tool()
def die() -> str:
    """End this process in the middle of the call."""
    os._exit(3)


if __name__ == "__main__":
    import sys

    if len(sys.argv) == 3 and sys.argv[1] == "--http":  # Streamable HTTP on 127.0.0.1:PORT
        server.run(transport="streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
