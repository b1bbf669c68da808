"""How much does a tool call over REST cost, compared with the cheapest FastAPI route?

Measures, in one run on one embedded server (loopback, keep-alive client), the round trip of
`POST /trials/{id}/tools/execute` for a trivial tool against a bare echo route added to the same
app: warm-up, then N interleaved pairs, reporting median and p99. Target: tool-call median at most
1.5x the bare route's.

    /work/venv/bin/python benchmarks/rest_overhead.py [--n 2000] [--warmup 200]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx

from corral_core.client import nodelay_transport
from corral_core.env import Suite, TaskSpec
from corral_core.server import EmbeddedServer, create_app
from corral_core.tools import tool

TARGET_RATIO = 1.5


@tool
def echo(text: str) -> str:
    """Return the text unchanged.

    Args:
        text: Any text.
    """
    return text


def build_app() -> Any:
    suite = Suite("bench", [TaskSpec(id="echo", prompt="Echo.", answer="hi")], [echo])
    app = create_app(suite)

    @app.post("/bench/echo")
    async def bare_echo(payload: dict[str, Any]) -> dict[str, Any]:
        return payload

    return app


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def measure(n: int, warmup: int) -> dict[str, list[float]]:
    app = build_app()
    with EmbeddedServer(app) as server, httpx.Client(base_url=server.url, transport=nodelay_transport()) as http:
        trial_id = http.post("/tasks/echo/trials").json()["trial_id"]
        tool_path = f"/trials/{trial_id}/tools/execute"
        tool_body = {"tool_name": "echo", "arguments": {"text": "hi"}}
        echo_body = {"text": "hi"}
        samples: dict[str, list[float]] = {"bare echo route": [], "tool call (trial route)": []}
        for i in range(warmup + n):
            t0 = time.perf_counter()
            r1 = http.post("/bench/echo", json=echo_body)
            t1 = time.perf_counter()
            r2 = http.post(tool_path, json=tool_body)
            t2 = time.perf_counter()
            if r1.status_code != 200 or r2.json()["result"]["status"] != "success":
                raise SystemExit(f"unexpected answer: {r1.status_code} {r2.text[:200]}")
            if i >= warmup:
                samples["bare echo route"].append((t1 - t0) * 1000)
                samples["tool call (trial route)"].append((t2 - t1) * 1000)
        http.delete(f"/trials/{trial_id}")
    return samples


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=200)
    args = parser.parse_args(argv)
    samples = measure(args.n, args.warmup)
    print(f"{'route':<26}{'median ms':>11}{'p99 ms':>10}")
    for name, values in samples.items():
        print(f"{name:<26}{statistics.median(values):>11.3f}{percentile(values, 0.99):>10.3f}")
    bare = statistics.median(samples["bare echo route"])
    tool_median = statistics.median(samples["tool call (trial route)"])
    ratio = tool_median / bare
    verdict = "ok" if ratio <= TARGET_RATIO else "ABOVE TARGET"
    print(f"ratio of medians: {ratio:.2f}x (target <= {TARGET_RATIO}x: {verdict}), N={args.n} each, interleaved")
    return 0 if ratio <= TARGET_RATIO else 1


if __name__ == "__main__":
    raise SystemExit(main())
