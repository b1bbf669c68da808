"""The workbench's embedded environment servers refuse rebinding pages (tests/server/rebinding.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from corral_core.events import EventKind
from corral_tui.services import WorkbenchServices
from tests.server.rebinding import attack, expected_refusals
from tests.tui.stable import test_config
from tests.workbench.conftest import SAMPLEMATH, TUITEST


@pytest.fixture
def services(tmp_path: Path) -> Iterator[WorkbenchServices]:
    config = test_config([SAMPLEMATH, TUITEST], db_url=str(tmp_path / "corral.db"), work_dir=tmp_path / "work")
    built = WorkbenchServices.build(config)
    built.load_suites()
    built.start()
    yield built
    built.close()


def test_the_workbench_servers_refuse_rebinding_pages(services: WorkbenchServices, markers: Path) -> None:
    for suite, task, tool, arguments in (
        ("samplemath", "add", "calculator", {"operation": "+", "a": 1, "b": 2}),
        ("tuitest", "mark", "write_marker", {"name": "pwned.txt"}),
    ):
        url = services.lifecycle.url_for(suite)
        assert url is not None
        seen = attack(url, task, tool, arguments)
        assert seen == expected_refusals(seen), suite
    assert list(markers.iterdir()) == []
    queued = services.lifecycle.queue.drain(10_000)
    assert not [e for e in queued if e.kind in (EventKind.TOOL_CALL, EventKind.TOOL_CALL_EXECUTED,
                                                 EventKind.APPROVAL_ASKED)]
