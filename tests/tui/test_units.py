"""The workbench's plain-Python parts: live state bounds, render hints, the run form's spec, bars."""

from __future__ import annotations

import pytest
from rich.json import JSON
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from corral_core.events import Event, EventKind, event_from
from corral_core.spec import spec_from_dict
from corral_tui.live import LiveRun
from corral_tui.render import tool_result
from corral_tui.run_request import RunRequest, parse_count, parse_verbosities
from corral_tui.widgets.bars import bar_line
from tests.tui.helpers import SAMPLEMATH
from tests.tui.stable import StableRedactor


def _events(trial_id: str, n: int, finished: bool = False) -> list[Event]:
    events = [event_from(EventKind.TRIAL_STARTED, trial_id, "add", {"arm": "full", "trial_index": 0})]
    events += [event_from(EventKind.ITERATION_STARTED, trial_id, "add", {"iteration": i}) for i in range(n)]
    if finished:
        events.append(event_from(EventKind.TRIAL_FINISHED, trial_id, "add", {"status": "completed", "score": 1.0}))
    return events


def test_live_run_keeps_a_bounded_buffer_per_trial_and_drops_old_finished_ones() -> None:
    live = LiveRun(buffer=50, buffered_trials=3)
    for index in range(5):
        live.apply(_events(f"tr_{index}", 100, finished=True))
    running = live.apply(_events("tr_running", 10))
    assert running.new_rows == ["tr_running"] and live.trials["tr_running"].status == "running"
    assert all(len(t.events) <= 50 for t in live.trials.values())
    buffered = [tid for tid, t in live.trials.items() if t.events]
    assert len(buffered) == 3 and "tr_running" in buffered  # the oldest finished trials gave theirs up
    assert len(live.trials) == 6 and live.done == 5  # rows stay


def test_running_trials_keep_their_events_and_the_least_recently_active_finished_trial_gives_up_first() -> None:
    live = LiveRun(buffer=50, buffered_trials=3)
    live.apply(_events("tr_run", 2) + _events("tr_a", 2, finished=True) + _events("tr_b", 2, finished=True))
    live.apply([event_from(EventKind.HOOK_FIRED, "tr_a", "add", {"hook": "late"})])  # tr_a is now the recent one
    live.apply(_events("tr_c", 1))
    assert not live.trials["tr_b"].events and live.trials["tr_a"].events and live.trials["tr_run"].events
    live.apply(_events("tr_d", 1))
    assert not live.trials["tr_a"].events and live.trials["tr_a"].status == "completed"
    for index in range(30):  # more running trials than buffered ones: none of them loses anything
        live.apply(_events(f"tr_many{index}", 2))
    assert all(len(live.trials[f"tr_many{index}"].events) == 3 for index in range(30)) and live.trials["tr_run"].events


def test_control_and_finish_events_update_the_row() -> None:
    live = LiveRun()
    live.apply(_events("tr_1", 2))
    changes = live.apply([event_from(EventKind.CONTROL_STATE, "tr_1", "add", {"state": "paused", "iteration": 2}),
                          event_from(EventKind.APPROVAL_DECIDED, "tr_1", "add",
                                {"approval_id": "ap_1", "approved": True, "decided_by": "user"})])
    trial = live.trials["tr_1"]
    assert changes.rows == {"tr_1"}
    assert (trial.status, trial.iteration, trial.assisted) == ("paused", 2, True)  # two iterations started
    live.apply([event_from(EventKind.TRIAL_FINISHED, "tr_1", "add", {"status": "completed", "score": 0.5,
                                                               "iterations": 3})])
    assert (trial.status, trial.score, trial.iteration) == ("completed", 0.5, 3)


def test_tool_results_are_drawn_by_their_render_hint() -> None:
    rows = '[{"material": "steel", "density": 7.85}, {"material": "oak", "density": 0.75}]'
    assert isinstance(tool_result(rows, "table"), Table)
    assert isinstance(tool_result('{"a": 1}', "json"), JSON)
    assert isinstance(tool_result("print('hi')", "code"), Syntax)
    assert isinstance(tool_result("plain words", "text"), Text)
    assert isinstance(tool_result("not json", "table"), Text)  # a wrong hint falls back to text


def test_the_run_form_makes_a_valid_spec() -> None:
    request = RunRequest(suite="samplemath", tasks=["add"], verbosities=parse_verbosities("Minimal, full"),
                         trials=parse_count("2", "trials"), parallel=2, approval="ask")
    spec = spec_from_dict(request.spec_data(SAMPLEMATH, 30.0), SAMPLEMATH.parent)
    assert [arm.name for arm in spec.arms] == ["minimal", "full"]
    assert (spec.task_ids, spec.trials_per_task, spec.total_trials, spec.approval) == (["add"], 2, 4, "ask")
    assert spec.model.id == "scripted/samplemath" and spec.timeouts.approval == 30.0


@pytest.mark.parametrize(("parse", "text", "problem"), [
    (parse_verbosities, "full, loud", "unknown verbosity level loud"),
    (lambda text: parse_count(text, "trials"), "two", "trials must be a whole number"),
    (lambda text: parse_count(text, "parallel", 1, 512), "600", "parallel must be between 1 and 512"),
])
def test_bad_form_values_are_named(parse, text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        parse(text)


def test_bars_have_eighth_cell_resolution() -> None:
    assert bar_line(0.5, 4) == "██  "
    assert bar_line(1 / 16, 2) == "▏ "
    assert bar_line(1.5, 3) == "███"


def test_the_stable_redactor_names_ids_in_order_of_appearance() -> None:
    redact = StableRedactor()
    assert [redact.ident(i) for i in ("tr_9f", "bm_x", "tr_11", "tr_9f")] == ["tr_0001", "bm_0001", "tr_0002",
                                                                             "tr_0001"]
    assert redact.url("http://127.0.0.1:41234") == "http://127.0.0.1:PORT"


def test_the_workbench_takes_executor_and_workers_from_the_command_line() -> None:
    from corral_core.errors import UserError
    from corral_tui.cli import parse_options
    from corral_tui.config import config_from_args

    config = config_from_args(parse_options(["--executor", "processes", "--workers", "2"]))
    assert (config.executor, config.workers) == ("processes", 2)
    assert config_from_args(parse_options([])).executor == "local"
    assert config_from_args(parse_options(["--executor", "dask://10.0.0.5:8786"])).executor == \
        "dask://10.0.0.5:8786"
    with pytest.raises(UserError, match="unknown executor 'threads'"):
        config_from_args(parse_options(["--executor", "threads"]))


def test_a_pane_item_takes_at_least_the_lines_min_lines_counts() -> None:
    from rich.console import Console

    from corral_tui.render import hook_line, iteration_item, tool_call_block
    from corral_tui.widgets.trial_panes import min_lines

    rows = '{"rows": [{"material": "steel", "density": 7.8}, {"material": "oak", "density": 0.7}]}'
    items = [
        tool_call_block({"tool_name": "lookup", "arguments": {"a": 1, "b": [1, 2]}, "result": rows, "render": "table",
                         "status": "success"}, StableRedactor()),
        tool_call_block({"tool_name": "run", "arguments": {}, "result": "print(1)\nprint(2)", "render": "code",
                         "status": "success"}, StableRedactor()),
        iteration_item(event_from(EventKind.MESSAGE, "tr_1", "add", {"role": "assistant", "content":
                             '<thought>a long thought that wraps</thought><action>lookup</action>'
                             '<action_input>{"material": "steel"}</action_input>'}), StableRedactor()),
        iteration_item(event_from(EventKind.MESSAGE, "tr_1", "add",
                                  {"role": "user", "content": f"Observation: {rows}"}),
                       StableRedactor()),
        iteration_item(event_from(EventKind.ITERATION_STARTED, "tr_1", "add", {"iteration": 0}), StableRedactor()),
        hook_line(event_from(EventKind.HOOK_FIRED, "tr_1", "add", {"hook": "h", "point": "before_iteration"})),
    ]
    console = Console(width=40, color_system=None)
    for item in items:
        assert item is not None
        drawn = len(console.render_lines(item, console.options, pad=False))
        assert 1 <= min_lines(item) <= drawn, (item, drawn)
    assert min_lines(items[0]) >= 8  # header, 4 lines of arguments' JSON, table header and two rows
