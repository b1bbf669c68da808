"""`corral-tui` collects no garbage while the workbench starts: the start allocates what lives as long as
the workbench, and each collection walked it all again (~0.3 s of CPU before "Ready."). The collector runs
again once the warm-up has frozen that heap, or at once when the start fails (no warm-up follows)."""

from __future__ import annotations

import gc
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import corral_core.llm
import corral_core.llm.client
import corral_tui.app
from corral_tui import cli
from corral_tui.screens.dialogs import ErrorScreen
from corral_tui.services import lifecycle
from tests.tui.helpers import SIZE, make_app, wait_for


@pytest.fixture
def collector() -> Iterator[None]:
    """Whatever a test does to the collector, the next test finds it running."""
    try:
        yield
    finally:
        gc.enable()


class Exited(Exception):
    pass


def test_the_workbench_starts_with_the_collector_paused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        collector: None) -> None:
    seen: list[bool] = []

    def run_app(options: object) -> int:
        seen.append(gc.isenabled())
        return 0

    def exit_now(code: int) -> None:
        raise Exited(code)

    monkeypatch.setattr(corral_tui.app, "run_app", run_app)
    monkeypatch.setattr(cli.os, "_exit", exit_now)  # what the workbench path ends with
    with pytest.raises(Exited):
        cli.main(["--db", str(tmp_path / "c.db")])
    assert seen == [False]


def _warm_up_and_wait() -> None:
    lifecycle.warm_up()
    for thread in threading.enumerate():
        if thread.name == "corral-tui-warmup":
            thread.join(120)


def test_the_warm_up_lets_the_collector_run_again_after_freezing(monkeypatch: pytest.MonkeyPatch,
                                                                  collector: None) -> None:
    calls: list[str] = []
    monkeypatch.delitem(sys.modules, "litellm", raising=False)  # as in a new process: the warm-up loads it
    monkeypatch.setattr(corral_core.llm, "preload", lambda: calls.append("preload"))
    monkeypatch.setattr(gc, "collect", lambda *args: calls.append("collect") or 0)
    monkeypatch.setattr(corral_core.llm.client, "freeze_startup_heap",
                        lambda: calls.append(f"freeze, collector on: {gc.isenabled()}"))
    gc.disable()
    _warm_up_and_wait()
    assert calls == ["collect", "preload", "freeze, collector on: False"]
    assert gc.isenabled()


def test_a_warm_up_with_litellm_loaded_already_lets_the_collector_run_again(monkeypatch: pytest.MonkeyPatch,
                                                                          collector: None) -> None:
    monkeypatch.setitem(sys.modules, "litellm", sys.modules.get("litellm", object()))  # e.g. by --litellm-callback
    gc.disable()
    _warm_up_and_wait()
    assert gc.isenabled()


@pytest.mark.anyio
async def test_a_failed_start_lets_the_collector_run_again(tmp_path: Path, collector: None) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: broken\ntasks: [\n", encoding="utf-8")
    app = make_app(tmp_path, suites=[broken])
    gc.disable()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, ErrorScreen), "the suite's error")
        assert gc.isenabled()


def test_a_start_refused_before_the_workbench_lets_the_collector_run_again(monkeypatch: pytest.MonkeyPatch,
                                                                           collector: None) -> None:
    """OTEL_* variables without the [otel] extra end the start with exit 2 before the workbench opens: the
    collector paused for the start runs again (a caller that goes on, like an in-process test, needs it)."""
    import corral_core.tracing
    from corral_core.errors import UserError

    def refuse() -> None:
        raise UserError("tracing is asked for but the [otel] extra is not installed.")

    monkeypatch.setattr(corral_core.tracing, "check", refuse)
    assert cli.main(["--db", "unused.db"]) == 2
    assert gc.isenabled()
