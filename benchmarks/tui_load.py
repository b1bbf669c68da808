"""The workbench under a flood of engine events: key-press latency and memory growth.

    python benchmarks/tui_load.py [--rate 1000] [--seconds 10] [--trials 20] [--selected-share 0.25]
                                  [--churn] [--profile N [--profile-out FILE]]

The real app runs headless (`run_test`, 120 x 40) with its embedded servers and store. One thread
pushes synthetic trial events into the app's event queue at `--rate` events per second (iterations,
messages, tool calls with JSON results, hook events, LLM responses, spread over `--trials` trials;
`--selected-share` of them belong to the trial whose live panes are on screen). Another thread
"types": every ~100 ms it posts a key press, like the terminal driver does; the key's handler notes
when it ran and repaints the status line, and the next frame the compositor renders notes when it
was drawn. Printed: p50 / p95 / max latency from key press to handler and from key press to frame,
the main thread's CPU share during the flood, events drawn and dropped, and resident memory growth.
Targets: key -> handler p95 < 50 ms, key -> frame p95 < 100 ms, growth < 50 MB. `--profile N`
prints the N costliest functions of the main thread (cProfile, cumulative) during the flood.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import io
import json
import os
import pstats
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

from corral_core.events import Event, EventKind, event_from  # noqa: E402
from corral_tui.app import WorkbenchApp  # noqa: E402
from corral_tui.widgets.status import StatusLine  # noqa: E402
from tests.tui.stable import test_config  # noqa: E402

KEY_INTERVAL = 0.1
P95_TARGET_MS = 50.0
FRAME_P95_TARGET_MS = 100.0
GROWTH_TARGET_MB = 50.0
RESULT = json.dumps({"rows": [{"material": f"m{i}", "density": i * 0.5} for i in range(8)]})


class LoadApp(WorkbenchApp):
    """The workbench plus one hidden binding whose handler records when it ran."""

    BINDINGS = [*WorkbenchApp.BINDINGS, Binding("f12", "ping", show=False, id="bench.ping")]

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.sent: deque[tuple[float, float]] = deque()  # (wall time, the UI thread's CPU time) of a press
        self.latencies: list[float] = []
        self.cpu_latencies: list[float] = []  # the UI thread's CPU seconds between a press and its handler
        self.awaiting_frame: deque[tuple[float, float]] = deque()
        self.frame_latencies: list[float] = []
        self.cpu_frame_latencies: list[float] = []
        self.trials_started = 0

    def action_ping(self) -> None:
        if self.sent:
            pressed, pressed_cpu = self.sent.popleft()
            self.latencies.append(time.perf_counter() - pressed)
            self.cpu_latencies.append(time.thread_time() - pressed_cpu)
            self.awaiting_frame.append((pressed, pressed_cpu))
            self.workbench_screen.query_one(StatusLine).refresh()

    def watch_frames(self) -> None:
        """Note when the workbench's next frame is composed after each handled key."""
        screen = self.workbench_screen
        compose_frame = screen._compositor_refresh

        def refreshed() -> None:
            compose_frame()
            now, cpu = time.perf_counter(), time.thread_time()
            while self.awaiting_frame:
                pressed, pressed_cpu = self.awaiting_frame.popleft()
                self.frame_latencies.append(now - pressed)
                self.cpu_frame_latencies.append(cpu - pressed_cpu)

        screen._compositor_refresh = refreshed  # type: ignore[method-assign]


def rss_mb() -> float:
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def load_average() -> str:
    with open("/proc/loadavg", encoding="ascii") as loadavg:
        return " ".join(loadavg.read().split()[:3])


def synthetic(trial_id: str, n: int) -> Event:
    """One event of a busy trial (the mix a ReAct agent produces)."""
    kind = n % 6
    if kind == 0:
        return event_from(EventKind.ITERATION_STARTED, trial_id, "add", {"iteration": n // 6})
    if kind == 1:
        return event_from(EventKind.LLM_RESPONSE, trial_id, "add", {"role": "agent", "turn": n // 6, "duration": 0.2,
                                                               "usage": {"total_tokens": 900}})
    if kind == 2:
        content = (f"<thought>Step {n}: the calculator is the right tool here.</thought>\n"
                   "<action>calculator</action>\n"
                   '<action_input>{"operation": "+", "a": 17, "b": 25}</action_input>')
        return event_from(EventKind.MESSAGE, trial_id, "add", {"role": "assistant", "content": content, "index": n})
    if kind == 3:
        return event_from(EventKind.TOOL_CALL, trial_id, "add", {
            "tool_name": "lookup", "arguments": {"material": "steel", "n": n}, "result": RESULT, "status": "success",
            "duration": 0.01, "risk": "safe", "render": "table", "iteration": n // 6})
    if kind == 4:
        return event_from(EventKind.MESSAGE, trial_id, "add", {"role": "user", "content": f"Observation: {RESULT}",
                                                          "index": n})
    return event_from(EventKind.HOOK_FIRED, trial_id, "add", {"point": "before_iteration", "hook": "trial_controller",
                                                         "iteration": n // 6, "should_continue": True})


class GcPauses:
    """Garbage-collector pauses (any thread's: a collection holds the GIL, so it stalls the UI too)."""

    def __init__(self) -> None:
        self.pauses: list[float] = []
        self.full: list[float] = []  # the pauses of oldest-generation collections
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
            return
        self.pauses.append(time.perf_counter() - self._started)
        if info.get("generation") == 2:
            self.full.append(self.pauses[-1])

    def __enter__(self) -> GcPauses:
        gc.callbacks.append(self)
        return self

    def __exit__(self, *exc_info: object) -> None:
        gc.callbacks.remove(self)


def p95(sorted_values: list[float]) -> float:
    return sorted_values[max(0, int(len(sorted_values) * 0.95) - 1)]


CHURN_EVENTS = 12  # --churn: events of a trial between its start and its end (14 with both, as a scripted trial)


def flood(app: LoadApp, trial_ids: list[str], args: argparse.Namespace, stop: threading.Event,
          sent: list[int]) -> None:
    """Push `--rate` events per second for `--seconds`, in 10 ms slices. With `--churn`, every trial
    but the selected one ends after CHURN_EVENTS events and a new trial takes its place, so
    `--trials` stay in flight and the table grows by a row per finished trial."""
    rng = random.Random(0)
    queue = app.services.lifecycle.queue
    per_slice = max(1, args.rate // 100)
    slots, steps = list(trial_ids), [0] * len(trial_ids)
    started = time.perf_counter()
    slice_no = 0
    while not stop.is_set():
        elapsed = time.perf_counter() - started
        if elapsed >= args.seconds:
            break
        for _ in range(per_slice):
            slot = 0 if rng.random() < args.selected_share else rng.randrange(1, len(slots))
            trial = slots[slot]
            if args.churn and slot and steps[slot] == CHURN_EVENTS:
                queue.emit(event_from(EventKind.TRIAL_FINISHED, trial, "add", {
                    "status": "completed", "score": 1.0, "trial_index": int(trial[7:]), "iterations": 2,
                    "total_tokens": 1800, "duration": 1.0}))
                slots[slot], steps[slot] = f"tr_load{app.trials_started:05d}", -1
                queue.emit(event_from(EventKind.TRIAL_STARTED, slots[slot], "add",
                                 {"arm": "full", "trial_index": app.trials_started}))
                app.trials_started += 1
                sent[0] += 1
            else:
                queue.emit(synthetic(trial, sent[0]))
            steps[slot] += 1
            sent[0] += 1
        slice_no += 1
        time.sleep(max(0.0, started + slice_no * 0.01 - time.perf_counter()))


def typist(app: LoadApp, ui_thread: int, stop: threading.Event) -> None:
    """Press F12 every ~100 ms through post_message, as the terminal driver delivers keys. Each press
    notes the wall clock and the UI thread's CPU clock: the CPU the UI thread spends before it serves
    the key is the latency it would have with a core to itself (a shared machine's wall clock also
    counts the time other processes held the cores)."""
    ui_clock = time.pthread_getcpuclockid(ui_thread)
    while not stop.wait(KEY_INTERVAL):
        app.sent.append((time.perf_counter(), time.clock_gettime(ui_clock)))
        app.post_message(events.Key("f12", None))


async def measure(args: argparse.Namespace) -> dict[str, float]:
    folder = Path(tempfile.mkdtemp(prefix="corral-tui-load-"))
    config = test_config([ROOT / "sample_tasks" / "samplemath.yaml"], db_url=str(folder / "load.db"),
                         work_dir=folder / "work")
    app = LoadApp(config)
    trial_ids = [f"tr_load{index:05d}" for index in range(args.trials)]
    app.trials_started = args.trials
    async with app.run_test(size=(120, 40)) as pilot:
        while not app.ready:
            await pilot.pause(0.05)
        for index, trial_id in enumerate(trial_ids):
            app.services.lifecycle.queue.emit(event_from(EventKind.TRIAL_STARTED, trial_id, "add",
                                           {"arm": "full", "trial_index": index}))
        while len(app.live.trials) < args.trials:
            await pilot.pause(0.05)
        app.workbench_screen.query_one("#trials").focus()
        # The litellm warm-up import (~80 MB) runs after start-up; it is not the flood's doing.
        while any(thread.name == "corral-tui-warmup" for thread in threading.enumerate()):
            await pilot.pause(0.1)
        await pilot.pause(0.5)
        app.watch_frames()
        rss_before = rss_mb()
        # the main thread's CPU time, not the wall clock: on a shared machine the wall clock counts other processes
        profile = cProfile.Profile(time.thread_time) if args.profile else None
        stop = threading.Event()
        sent = [0]
        threads = [threading.Thread(target=flood, args=(app, trial_ids, args, stop, sent), name="load-flood"),
                   threading.Thread(target=typist, args=(app, threading.get_ident(), stop), name="load-typist")]
        started, cpu_started = time.perf_counter(), time.thread_time()
        if profile is not None:
            profile.enable()
        with GcPauses() as gc_pauses:
            for thread in threads:
                thread.start()
            while threads[0].is_alive():
                await asyncio.sleep(0.1)
            stop.set()
            threads[1].join()
        flood_seconds = time.perf_counter() - started
        main_cpu = time.thread_time() - cpu_started
        if profile is not None:
            profile.disable()
        while len(app.services.lifecycle.queue) or app.sent:
            await pilot.pause(0.05)
        rss_after = rss_mb()
        seen = app.live.events_seen
    latencies_ms = sorted(x * 1000 for x in app.latencies)
    frames_ms = sorted(x * 1000 for x in app.frame_latencies) or [float("nan")]
    cpu_ms = sorted(x * 1000 for x in app.cpu_latencies) or [float("nan")]
    cpu_frames_ms = sorted(x * 1000 for x in app.cpu_frame_latencies) or [float("nan")]
    if profile is not None:
        report = io.StringIO()
        pstats.Stats(profile, stream=report).sort_stats("cumulative").print_stats(args.profile)
        print(f"main thread CPU during the flood ({main_cpu:.2f} s of {flood_seconds:.1f} s wall):")
        print(report.getvalue().split("\n\n", 1)[-1].rstrip())
        if args.profile_out:
            profile.dump_stats(args.profile_out)
    return {
        "events_sent": sent[0], "trials": len(app.live.trials), "events_per_second": sent[0] / flood_seconds,
        "events_applied": seen,
        "events_dropped": app.services.lifecycle.queue.dropped, "key_presses": len(latencies_ms),
        "latency_p50_ms": statistics.median(latencies_ms), "latency_p95_ms": p95(latencies_ms),
        "latency_max_ms": latencies_ms[-1], "frame_p50_ms": statistics.median(frames_ms),
        "frame_p95_ms": p95(frames_ms), "frame_max_ms": frames_ms[-1], "main_busy": main_cpu / flood_seconds,
        "cpu_p50_ms": statistics.median(cpu_ms), "cpu_p95_ms": p95(cpu_ms), "cpu_frame_p50_ms": statistics.median(
            cpu_frames_ms), "cpu_frame_p95_ms": p95(cpu_frames_ms),
        "main_cpu_ms_per_kevent": main_cpu * 1000 / max(1, sent[0]) * 1000,
        "gc_total_s": sum(gc_pauses.pauses), "gc_max_ms": max(gc_pauses.pauses, default=0.0) * 1000,
        "gc_count": len(gc_pauses.pauses), "gc_full": len(gc_pauses.full), "gc_full_s": sum(gc_pauses.full),
        "rss_before_mb": rss_before, "rss_after_mb": rss_after, "rss_growth_mb": rss_after - rss_before,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=int, default=1000, help="events per second (default 1000)")
    parser.add_argument("--seconds", type=float, default=10.0, help="flood duration (default 10)")
    parser.add_argument("--trials", type=int, default=20, help="trials the events belong to (default 20)")
    parser.add_argument("--selected-share", type=float, default=0.25,
                        help="share of events for the trial shown in the panes (default 0.25)")
    parser.add_argument("--churn", action="store_true",
                        help="trials end after 14 events and new ones start (--trials stay in flight)")
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="print the N costliest functions of the main thread during the flood (cProfile)")
    parser.add_argument("--profile-out", metavar="FILE", help="with --profile: also save the pstats to FILE")
    args = parser.parse_args()
    load_before = load_average()
    result = asyncio.run(measure(args))
    print(f"flood: {result['events_sent']} events in {args.seconds:g} s ({result['events_per_second']:.0f}/s) over "
          f"{args.trials} trials{' in flight' if args.churn else ''} ({result['trials']} in all), "
          f"{args.selected_share:.0%} on the selected trial; applied "
          f"{result['events_applied']}, dropped {result['events_dropped']}")
    print(f"key press -> handler: p50 {result['latency_p50_ms']:.1f} ms, p95 {result['latency_p95_ms']:.1f} ms, "
          f"max {result['latency_max_ms']:.1f} ms over {result['key_presses']} presses "
          f"(target p95 < {P95_TARGET_MS:g} ms)")
    print(f"key press -> frame: p50 {result['frame_p50_ms']:.1f} ms, p95 {result['frame_p95_ms']:.1f} ms, "
          f"max {result['frame_max_ms']:.1f} ms (target p95 < {FRAME_P95_TARGET_MS:g} ms)")
    print(f"the same in the UI thread's CPU time (its latency with a core to itself): key -> handler p50 "
          f"{result['cpu_p50_ms']:.1f} ms, p95 {result['cpu_p95_ms']:.1f} ms; key -> frame p50 "
          f"{result['cpu_frame_p50_ms']:.1f} ms, p95 {result['cpu_frame_p95_ms']:.1f} ms")
    print(f"main thread CPU: {result['main_busy']:.0%} of the flood's wall time, "
          f"{result['main_cpu_ms_per_kevent']:.0f} ms per 1,000 events; load average before/after: "
          f"{load_before} / {load_average()}")
    print(f"garbage collections: {result['gc_count']}, {result['gc_total_s']:.2f} s in all, longest "
          f"{result['gc_max_ms']:.0f} ms; full collections {result['gc_full']}, {result['gc_full_s']:.2f} s")
    print(f"memory: RSS {result['rss_before_mb']:.1f} MB -> {result['rss_after_mb']:.1f} MB, growth "
          f"{result['rss_growth_mb']:+.1f} MB (target < {GROWTH_TARGET_MB:g} MB)")
    ok = (result["latency_p95_ms"] < P95_TARGET_MS and result["frame_p95_ms"] < FRAME_P95_TARGET_MS
          and result["rss_growth_mb"] < GROWTH_TARGET_MB)
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
