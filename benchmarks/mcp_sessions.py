"""What an external MCP server's healing costs: a session per trial, and a huge result.

    .venv/bin/python benchmarks/mcp_sessions.py                 # 5 fresh sessions, a 50 MB result
    .venv/bin/python benchmarks/mcp_sessions.py --result-mb 5   # a smaller result

Starts tests/compat/data/flaky_mcp_server.py (a stdio server on the official SDK) and prints: the
first start with the tools listed; the first call on a fresh session, which is what each trial pays
with `session: trial` (process start, initialize, call); what a huge result does (answered and capped,
or cancelled at the timeout and its session dropped); the next call after it; the driver's peak RSS.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

from corral_core.tools.errors import McpServerError
from corral_core.tools.mcp_client import McpConnection

SERVER = Path(__file__).resolve().parent.parent / "tests" / "compat" / "data" / "flaky_mcp_server.py"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=5, help="fresh sessions to time")
    parser.add_argument("--result-mb", type=float, default=50.0, help="size of the huge result")
    parser.add_argument("--timeout", type=float, default=30.0, help="the per-call timeout")
    args = parser.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    shared = McpConnection("flaky", command=[sys.executable, str(SERVER)], timeout=args.timeout)
    started = time.monotonic()
    shared.start()
    print(f"start and list tools: {time.monotonic() - started:.2f} s")
    firsts = []
    for _ in range(args.sessions):
        trial = shared.copy()
        started = time.monotonic()
        trial.call("echo", {"text": "x"})
        firsts.append(time.monotonic() - started)
        trial.close()
    print(f"first call on a fresh session (start + initialize + call): {', '.join(f'{x:.2f}' for x in firsts)} s")
    chars = int(args.result_mb * 1_000_000)
    started = time.monotonic()
    try:
        result = shared.call("huge", {"chars": chars})
        kept = sum(len(str(block.get("text", ""))) for block in getattr(result, "content", []))
        print(f"{args.result_mb:g} MB result: answered in {time.monotonic() - started:.2f} s, "
              f"{len(getattr(result, 'text', result))} characters of text and {kept} in blocks kept")
    except McpServerError as failure:
        print(f"{args.result_mb:g} MB result: {failure.reason} after {time.monotonic() - started:.2f} s")
    started = time.monotonic()
    shared.call("echo", {"text": "x"})
    print(f"next call: {time.monotonic() - started:.2f} s; sessions opened: {shared.sessions_opened}")
    shared.close()
    print(f"driver peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
