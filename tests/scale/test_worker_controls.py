"""The worker side of run-wide controls (runner/dask_worker.py `_RunControls`), without a cluster.

The driver sends a run-wide command once for the run and once per trial it knows, with one cause;
each trial must get it exactly once."""

from __future__ import annotations

import threading
from typing import Any

from corral_core.agents.interventions import InterventionInbox
from corral_core.events import (
    Event,
    EventKind,
)
from corral_core.runner.dask_worker import _RunControls

WAIT = 60.0  # seconds: only a failing test waits this long


class Agent:
    """What a controller reads from its agent: its iteration, and where its events go."""

    current_iteration = 1

    def __init__(self) -> None:
        self.held = threading.Event()

    def emit(self, event: Event) -> None:
        if event.kind is EventKind.CONTROL_STATE and event.data.get("state") == "paused" and event.data.get("reason"):
            self.held.set()


def registered(controls: _RunControls, trial_id: str) -> Any:
    controller = controls.new_controller()
    controls.register(trial_id, task_id="add", arm="full", index=0, controller=controller,
                      inbox=InterventionInbox(), agent=Agent())
    return controller


def test_a_resume_all_reaches_a_trial_once_so_a_breakpoint_hold_after_it_stays() -> None:
    controls = _RunControls(start_paused=True, hold_on_breakpoints=True)
    controller = registered(controls, "t1")
    assert controller.state == "paused"
    controls.run_wide("resume_all", "cause-1")  # the run-wide command arrives first
    assert controller.state == "running"
    agent = Agent()
    holding = threading.Thread(target=controller.hold, args=(agent, "breakpoint tool:calculator: about to call"))
    holding.start()
    try:
        assert agent.held.wait(WAIT)
        controls.apply_to_trial("t1", "resume", None, "cause-1")  # the same resume, sent for the trial
        assert controller.state == "paused"  # the hold that began since is not released by it
    finally:
        controls.apply_to_trial("t1", "resume", None, "cause-2")  # a new Continue releases it
        holding.join(WAIT)
    assert not holding.is_alive() and controller.state == "running"


def test_a_trial_registered_after_a_resume_all_gets_its_own_copy() -> None:
    controls = _RunControls(start_paused=True)
    controls.run_wide("resume_all", "cause-1")  # no trial here yet
    controller = registered(controls, "t2")  # started paused (the run starts trials paused)
    assert controller.state == "paused"
    controls.apply_to_trial("t2", "resume", None, "cause-1")  # the driver knew it: its copy resumes it
    assert controller.state == "running"
