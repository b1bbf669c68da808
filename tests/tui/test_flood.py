"""A flood of engine events ends with every trial's row and the selected trial's panes in their final
state (the live view coalesces batches, redraws only changed cells and draws only the selected trial;
none of that may lose the end of the story). Nothing here is timed: the test waits on the events."""

from __future__ import annotations

import random
import threading
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import RichLog, TabbedContent

from corral_core.events import Event, EventKind, event_from
from corral_tui.widgets.trial_panes import TrialPanes
from corral_tui.widgets.trials_table import TrialsTable
from tests.timeouts import HANG
from tests.tui.helpers import SIZE, make_app, wait_for, wait_ready

pytestmark = pytest.mark.anyio

TRIALS = 50
ROUNDS = 39  # finished trials: start + 39 rounds of 5 + agent finished + trial finished = 198 events
PAUSED_ROUNDS = 40  # the others: start + 40 rounds + paused = 202 events; 25 x 198 + 25 x 202 = 10,000


def trial_id(index: int) -> str:
    return f"tr_flood{index:04d}"


def finishes(index: int) -> bool:
    return index % 2 == 0


def story(index: int) -> list[Event]:
    """One trial's events, in order: rounds of iteration, LLM reply, thought, tool call, hook."""
    tid = trial_id(index)
    events = [event_from(EventKind.TRIAL_STARTED, tid, "add", {"arm": "full", "trial_index": index})]
    rounds = ROUNDS if finishes(index) else PAUSED_ROUNDS
    for turn in range(rounds):
        events += [
            event_from(EventKind.ITERATION_STARTED, tid, "add", {"iteration": turn}),
            event_from(EventKind.LLM_RESPONSE, tid, "add",
                       {"role": "agent", "turn": turn, "usage": {"total_tokens": 100}}),
            event_from(EventKind.MESSAGE, tid, "add", {"role": "assistant", "index": turn,
                                                  "content": f"<thought>step {turn} of {tid}</thought>"}),
            event_from(EventKind.TOOL_CALL, tid, "add", {"tool_name": "lookup", "arguments": {"n": turn, "of": tid},
                                                    "result": "ok", "status": "success", "risk": "safe"}),
            event_from(EventKind.HOOK_FIRED, tid, "add", {"point": "before_iteration", "hook": f"h{index}",
                                                     "iteration": turn}),
        ]
    if finishes(index):
        score = 1.0 if index % 4 == 0 else 0.0
        finished = {"status": "completed", "score": score, "trial_index": index, "iterations": rounds,
                    "total_tokens": rounds * 100}
        events += [event_from(EventKind.AGENT_FINISHED, tid, "add", {"status": "answered", "answer": "42"}),
                   event_from(EventKind.TRIAL_FINISHED, tid, "add", finished)]
    else:
        events.append(event_from(EventKind.CONTROL_STATE, tid, "add", {"state": "paused", "iteration": rounds}))
    return events


def expected_row(index: int) -> list[str]:
    """What the row says at the end: status, iteration, score, tokens, last action."""
    if finishes(index):
        return ["completed", str(ROUNDS), "1.00" if index % 4 == 0 else "0.00", f"{ROUNDS * 100 / 1000:.1f}k",
                "answered"]
    return ["paused", str(PAUSED_ROUNDS), "-", f"{PAUSED_ROUNDS * 100 / 1000:.1f}k", "lookup ✓"]


def flood(emit, pending, stop: threading.Event) -> int:  # type: ignore[no-untyped-def]
    """Emit every trial's story interleaved at random (seeded), never more than 2,000 events ahead of
    the UI (the queue drops the oldest when full, and this test is about the end state, not drops)."""
    rng = random.Random(15)
    stories = [story(index) for index in range(TRIALS)]
    cursors = [0] * TRIALS
    live = list(range(TRIALS))
    sent = 0
    while live and not stop.is_set():
        index = rng.choice(live)
        emit(stories[index][cursors[index]])
        sent += 1
        cursors[index] += 1
        if cursors[index] == len(stories[index]):
            live.remove(index)
        while pending() > 2_000 and not stop.wait(0.005):
            pass
    return sent


def drawn_row(table: TrialsTable, tid: str) -> list[str]:
    """The row as drawn (the table's rendered line, not its data): status, it, score, tokens, last action."""
    y = table.get_row_index(tid) + table.header_height
    words = table._render_line(y, 0, table.size.width, table.rich_style).text.split()
    # number, task, arm, status, it, score, time ("0.1 s"), tokens, cost, last action (words)
    return [words[3], words[4], words[5], words[8], " ".join(words[10:])]


async def test_a_flood_of_events_ends_with_every_row_and_the_selected_panes_final(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        queue = app.services.lifecycle.queue
        total = sum(len(story(index)) for index in range(TRIALS))
        assert total == 10_000
        seen_before = app.live.events_seen
        stop = threading.Event()
        result: list[int] = []
        emitter = threading.Thread(target=lambda: result.append(flood(queue.emit, lambda: len(queue), stop)))
        emitter.start()
        try:
            await wait_for(pilot, lambda: app.live.events_seen - seen_before == total, "every event applied",
                           timeout=HANG)
        finally:
            stop.set()
            emitter.join(HANG)
        assert result == [total] and queue.dropped == 0

        screen = app.workbench_screen
        table = screen.query_one(TrialsTable)
        assert table.row_count == TRIALS
        await pilot.pause()
        for index in range(TRIALS):
            assert drawn_row(table, trial_id(index)) == expected_row(index), trial_id(index)

        # the trial selected when the first row appeared followed the flood in its visible pane, and
        # its other panes draw its end when shown
        selected = screen.selected_trial()
        assert selected is not None
        await assert_panes_show_the_end(pilot, int(selected[-4:]))

        # another trial, selected now, is drawn from its live buffer
        other = next(index for index in range(TRIALS - 1, 0, -1) if not finishes(index) and trial_id(index) != selected)
        table.move_cursor(row=table.get_row_index(trial_id(other)))
        await wait_for(pilot, lambda: screen.query_one(TrialPanes).trial_id == trial_id(other), "the other trial shown")
        await assert_panes_show_the_end(pilot, other)


async def assert_panes_show_the_end(pilot: Pilot, index: int) -> None:
    """The trial's last thought (and end), its last tool call and its last hook line end its panes."""
    tid, rounds = trial_id(index), ROUNDS if finishes(index) else PAUSED_ROUNDS
    iterations = await pane_lines(pilot, "pane-iterations")
    if finishes(index):
        assert iterations[-1].startswith("trial completed") and iterations[-2].startswith("finished: answered")
    else:
        assert iterations[-1] == f"Thought: step {rounds - 1} of {tid}"
    tools = "\n".join(await pane_lines(pilot, "pane-tools"))
    assert tools.endswith(f'"n": {rounds - 1},\n  "of": "{tid}"\n}}\nok'), tools[-200:]
    hooks = await pane_lines(pilot, "pane-hooks")
    last_hook = f"hook h{index} at before_iteration (iteration {rounds})"
    assert hooks[-1] == (last_hook if finishes(index) else f"control: paused at iteration {rounds + 1}")
    assert last_hook in hooks


async def pane_lines(pilot: Pilot, pane_id: str) -> list[str]:
    """Show a pane's tab and return its lines once drawn (a tab switch redraws it from the trial's buffer)."""
    screen = pilot.app.workbench_screen
    screen.query_one("#pane-tabs", TabbedContent).active = pane_id
    log = screen.query_one(f"#{pane_id}-log", RichLog)
    await wait_for(pilot, lambda: log._size_known and not log._deferred_renders and log.lines, f"{pane_id} drawn")
    return "\n".join(strip.text for strip in log.lines).rstrip().splitlines()
