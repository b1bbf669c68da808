"""RunSession against its run thread: the interleavings that reading found, forced one at a time."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from corral_core.runner import ControlRegistry
from corral_core.store.ownership import Owner, OwnershipLost
from corral_tui.services import WorkbenchServices
from corral_tui.services import session as session_module
from corral_tui.services.session import ActiveRun, RunSession
from tests.tui.stable import test_config
from tests.workbench.conftest import SAMPLEMATH

WAIT = 30.0  # bound on waiting for a thread this test started


@pytest.fixture
def services(tmp_path: Path) -> Iterator[WorkbenchServices]:
    config = test_config([SAMPLEMATH], db_url=str(tmp_path / "corral.db"), work_dir=tmp_path / "work")
    built = WorkbenchServices.build(config)
    built.load_suites()
    built.start()
    yield built
    built.close()


class EndingUnderfoot(RunSession):
    """`active` as the run thread leaves it: the run in progress at the first read, None from the next on
    (the thread's `finally` ran in between)."""

    @property
    def active(self) -> ActiveRun | None:
        reads = self.__dict__["reads"] = self.__dict__.get("reads", 0) + 1
        return self.__dict__["_active"] if reads == 1 else None

    @active.setter
    def active(self, value: ActiveRun | None) -> None:
        self.__dict__["_active"] = value


@pytest.mark.parametrize("ask", [lambda s: s.breakpoints(), lambda s: s.set_breakpoints([])],
                         ids=["breakpoints", "set_breakpoints"])
def test_a_run_ending_between_two_reads_is_no_run_not_a_crash(services: WorkbenchServices, ask) -> None:
    session = services.session
    runner = SimpleNamespace(breakpoints=SimpleNamespace(points=()), benchmark_id=None,
                             set_breakpoints=lambda points: None)
    session.__class__ = EndingUnderfoot
    session.active = ActiveRun(None, 1, "m", ControlRegistry(), runner=runner)  # type: ignore[arg-type]
    try:
        ask(session)  # one read: the run it saw (the thread's own references keep it whole)
    finally:
        session.__class__ = RunSession
        session.__dict__["active"] = None


def test_close_takes_the_benchmark_from_a_run_thread_that_outlives_it(services: WorkbenchServices,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The workbench quits while the run thread is still inside a write: the benchmark is recorded
    interrupted, and nothing that thread writes after lands (its fencing token is taken from it)."""
    repository = services.lifecycle.repository
    info = repository.create_benchmark(spec_name="quitting", spec_digest="d", owner=Owner.current())
    token = info.owner_token
    release = threading.Event()
    thread = threading.Thread(target=release.wait, args=(WAIT,))  # a run thread that does not end in time
    thread.start()
    runner = SimpleNamespace(benchmark_id=info.id, ownership_token=token, stop=lambda: None)
    session = services.session
    session.active = ActiveRun(None, 1, "m", ControlRegistry(), runner=runner, thread=thread)  # type: ignore[arg-type]
    monkeypatch.setattr(session_module, "CLOSE_TIMEOUT", 0.0)
    try:
        session.close(wait=True)
        assert repository.get_benchmark(info.id).status == "interrupted"
        assert not repository.owns(info.id, token)
        with pytest.raises(OwnershipLost):  # the thread's late close would have overwritten `interrupted`
            repository.finish_benchmark(info.id, status="finished", token=token)
        assert repository.get_benchmark(info.id).status == "interrupted"
    finally:
        release.set()
        thread.join(WAIT)
        session.active = None
