"""The workbench under a flood of engine events: key-press latency and memory growth.

    python benchmarks/tui_load.py [--rate 1000] [--seconds 10] [--trials 20] [--selected-share 0.25]

The real app runs headless (`run_test`, 120 x 40) with its embedded servers and store. One thread
pushes synthetic trial events into the app's event queue at `--rate` events per second (iterations,
messages, tool calls with JSON results, hook events, LLM responses, spread over `--trials` trials;
`--selected-share` of them belong to the trial whose live panes are on screen). Another thread
"types": every ~100 ms it posts a key press, like the terminal driver does, and the key's handler
notes when it ran. Printed: p50 / p95 / max latency from key press to handler, events drawn and
dropped, and resident memory growth over the flood. Targets: p95 < 100 ms, growth < 50 MB.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from collections import deque
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_LOG", "ERROR")
os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")

from textual import events  # noqa: E402
from textual.binding import Binding  # noqa: E402

from corral_core.events import Event, EventKind  # noqa: E402
from corral_tui.app import WorkbenchApp  # noqa: E402
from tests.tui.stable import test_config  # noqa: E402

KEY_INTERVAL = 0.1
P95_TARGET_MS = 100.0
GROWTH_TARGET_MB = 50.0
RESULT = json.dumps({"rows": [{"material": f"m{i}", "density": i * 0.5} for i in range(8)]})


class LoadApp(WorkbenchApp):
    """The workbench plus one hidden binding whose handler records when it ran."""

    BINDINGS = [*WorkbenchApp.BINDINGS, Binding("f12", "ping", show=False, id="bench.ping")]

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.sent: deque[float] = deque()
        self.latencies: list[float] = []

    def action_ping(self) -> None:
        if self.sent:
            self.latencies.append(time.perf_counter() - self.sent.popleft())


def rss_mb() -> float:
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def synthetic(trial_id: str, n: int) -> Event:
    """One event of a busy trial (the mix a ReAct agent produces)."""
    kind = n % 6
    if kind == 0:
        return Event(EventKind.ITERATION_STARTED, trial_id, "add", {"iteration": n // 6})
    if kind == 1:
        return Event(EventKind.LLM_RESPONSE, trial_id, "add", {"role": "agent", "turn": n // 6, "duration": 0.2,
                                                               "usage": {"total_tokens": 900}})
    if kind == 2:
        content = (f"<thought>Step {n}: the calculator is the right tool here.</thought>\n"
                   "<action>calculator</action>\n"
                   '<action_input>{"operation": "+", "a": 17, "b": 25}</action_input>')
        return Event(EventKind.MESSAGE, trial_id, "add", {"role": "assistant", "content": content, "index": n})
    if kind == 3:
        return Event(EventKind.TOOL_CALL, trial_id, "add", {
            "tool_name": "lookup", "arguments": {"material": "steel", "n": n}, "result": RESULT, "status": "success",
            "duration": 0.01, "risk": "safe", "render": "table", "iteration": n // 6})
    if kind == 4:
        return Event(EventKind.MESSAGE, trial_id, "add", {"role": "user", "content": f"Observation: {RESULT}",
                                                          "index": n})
    return Event(EventKind.HOOK_FIRED, trial_id, "add", {"point": "before_iteration", "hook": "trial_controller",
                                                         "iteration": n // 6, "should_continue": True})


def flood(app: LoadApp, trial_ids: list[str], rate: int, seconds: float, share: float, stop: threading.Event,
          sent: list[int]) -> None:
    """Push `rate` events per second for `seconds`, in 10 ms slices."""
    rng = random.Random(0)
    per_slice = max(1, rate // 100)
    started = time.perf_counter()
    slice_no = 0
    while not stop.is_set():
        elapsed = time.perf_counter() - started
        if elapsed >= seconds:
            break
        for _ in range(per_slice):
            trial = trial_ids[0] if rng.random() < share else rng.choice(trial_ids[1:])
            app.services.lifecycle.queue.emit(synthetic(trial, sent[0]))
            sent[0] += 1
        slice_no += 1
        time.sleep(max(0.0, started + slice_no * 0.01 - time.perf_counter()))


def typist(app: LoadApp, stop: threading.Event) -> None:
    """Press F12 every ~100 ms through post_message, as the terminal driver delivers keys."""
    while not stop.wait(KEY_INTERVAL):
        app.sent.append(time.perf_counter())
        app.post_message(events.Key("f12", None))


async def measure(args: argparse.Namespace) -> dict[str, float]:
    folder = Path(tempfile.mkdtemp(prefix="corral-tui-load-"))
    config = test_config([ROOT / "sample_tasks" / "samplemath.yaml"], db_url=str(folder / "load.db"),
                         work_dir=folder / "work")
    app = LoadApp(config)
    trial_ids = [f"tr_load{index:04d}" for index in range(args.trials)]
    async with app.run_test(size=(120, 40)) as pilot:
        while not app.ready:
            await pilot.pause(0.05)
        for index, trial_id in enumerate(trial_ids):
            app.services.lifecycle.queue.emit(Event(EventKind.TRIAL_STARTED, trial_id, "add",
                                           {"arm": "full", "trial_index": index}))
        while len(app.live.trials) < args.trials:
            await pilot.pause(0.05)
        app.workbench_screen.query_one("#trials").focus()
        # The litellm warm-up import (~80 MB) runs after start-up; it is not the flood's doing.
        while any(thread.name == "corral-tui-warmup" for thread in threading.enumerate()):
            await pilot.pause(0.1)
        await pilot.pause(0.5)
        rss_before = rss_mb()
        stop = threading.Event()
        sent = [0]
        threads = [threading.Thread(target=flood, args=(app, trial_ids, args.rate, args.seconds,
                                                        args.selected_share, stop, sent), name="load-flood"),
                   threading.Thread(target=typist, args=(app, stop), name="load-typist")]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        while threads[0].is_alive():
            await asyncio.sleep(0.1)
        stop.set()
        threads[1].join()
        flood_seconds = time.perf_counter() - started
        while len(app.services.lifecycle.queue) or app.sent:
            await pilot.pause(0.05)
        rss_after = rss_mb()
        seen = app.live.events_seen
    latencies_ms = sorted(x * 1000 for x in app.latencies)
    p95 = latencies_ms[max(0, int(len(latencies_ms) * 0.95) - 1)]
    return {
        "events_sent": sent[0], "events_per_second": sent[0] / flood_seconds, "events_applied": seen,
        "events_dropped": app.services.lifecycle.queue.dropped, "key_presses": len(latencies_ms),
        "latency_p50_ms": statistics.median(latencies_ms), "latency_p95_ms": p95, "latency_max_ms": latencies_ms[-1],
        "rss_before_mb": rss_before, "rss_after_mb": rss_after, "rss_growth_mb": rss_after - rss_before,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=int, default=1000, help="events per second (default 1000)")
    parser.add_argument("--seconds", type=float, default=10.0, help="flood duration (default 10)")
    parser.add_argument("--trials", type=int, default=20, help="trials the events belong to (default 20)")
    parser.add_argument("--selected-share", type=float, default=0.25,
                        help="share of events for the trial shown in the panes (default 0.25)")
    args = parser.parse_args()
    result = asyncio.run(measure(args))
    print(f"flood: {result['events_sent']} events in {args.seconds:g} s ({result['events_per_second']:.0f}/s) over "
          f"{args.trials} trials, {args.selected_share:.0%} on the selected trial; applied "
          f"{result['events_applied']}, dropped {result['events_dropped']}")
    print(f"key press -> handler: p50 {result['latency_p50_ms']:.1f} ms, p95 {result['latency_p95_ms']:.1f} ms, "
          f"max {result['latency_max_ms']:.1f} ms over {result['key_presses']} presses "
          f"(target p95 < {P95_TARGET_MS:g} ms)")
    print(f"memory: RSS {result['rss_before_mb']:.1f} MB -> {result['rss_after_mb']:.1f} MB, growth "
          f"{result['rss_growth_mb']:+.1f} MB (target < {GROWTH_TARGET_MB:g} MB)")
    ok = result["latency_p95_ms"] < P95_TARGET_MS and result["rss_growth_mb"] < GROWTH_TARGET_MB
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
