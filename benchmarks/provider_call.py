"""CPU per provider call, direct path against litellm's, on the same fake provider (issues 32 and 38).

    python benchmarks/provider_call.py [--calls 2000] [--threads 64] [--delay 0.05]

Starts benchmarks/fake_provider.py (loopback, answers after --delay), then makes --calls chat requests
with a tool from --threads threads through `corral_core.llm.completion`, once on the direct path
(`openai/<model>` with an `api_base`) and once on litellm's (the same settings, the route forced to litellm
as for a model the direct path does not take; no callback, so litellm's success logging stays off), and
prints this process's CPU time per call for each. Warm-up calls are made and not counted. Printed with
the 1-minute load average before and after: a number is a result only when the machine is quiet.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TOOLS = [{"type": "function", "function": {"name": "calculator", "description": "Arithmetic on two numbers.",
                                           "parameters": {"type": "object", "properties": {
                                               "operation": {"type": "string"}, "a": {"type": "number"},
                                               "b": {"type": "number"}}, "required": ["operation", "a", "b"]}}}]
MESSAGES = [{"role": "system", "content": "You are a careful calculator agent."},
            {"role": "user", "content": "What is 17 + 25?"}]


def measure(settings: object, calls: int, threads: int) -> float:
    from corral_core.llm import completion

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(lambda _: completion(settings, MESSAGES, TOOLS), range(threads)))  # type: ignore[arg-type]
        before = time.process_time()
        list(pool.map(lambda _: completion(settings, MESSAGES, TOOLS), range(calls)))  # type: ignore[arg-type]
        return (time.process_time() - before) / calls * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=64)
    parser.add_argument("--delay", type=float, default=0.05)
    args = parser.parse_args()
    provider = subprocess.Popen([sys.executable, str(ROOT / "benchmarks" / "fake_provider.py"), "--delay",
                                 str(args.delay)], stdout=subprocess.PIPE, text=True)
    try:
        assert provider.stdout is not None
        port = int(provider.stdout.readline().split()[1])
        os.environ["CORRAL_BENCH_KEY"] = "sk-bench"
        from corral_core.llm import ModelSettings, client

        settings = ModelSettings("openai/bench-model", api_base=f"http://127.0.0.1:{port}/v1",
                                 api_key_env="CORRAL_BENCH_KEY", max_retries=0)
        load_before = os.getloadavg()[0]
        assert client._route_of(settings) == "openai"
        direct = measure(settings, args.calls, args.threads)
        client._route_of = lambda _settings: None  # type: ignore[assignment]
        through_litellm = measure(settings, args.calls, args.threads)
        load_after = os.getloadavg()[0]
    finally:
        provider.terminate()
    print(f"{args.calls} calls from {args.threads} threads, provider delay {args.delay:g} s: CPU per call "
          f"direct {direct:.2f} ms, litellm {through_litellm:.2f} ms ({through_litellm / direct:.1f}x); "
          f"1-minute load {load_before:.2f} before, {load_after:.2f} after")
    return 0


if __name__ == "__main__":
    sys.exit(main())
