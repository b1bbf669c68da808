"""A tiny suite built from Python objects, and a real server on loopback for every test module.

Tools: `add` (numeric), `echo` (trivial), `explode` (raises), `slow` (sleeps), `touch_confirm`
(confirm risk, writes a side-effect file) and `touch_blocked` (blocked risk, would write one).
Tasks: `add` (answer 5), `echo` (answer "hi"), and a chain `first` -> `second`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from corral_core.client import CorralRouter
from corral_core.env import Suite, TaskSpec
from corral_core.events import ListSink
from corral_core.server import EmbeddedServer, create_app
from corral_core.tools import tool


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first addend.
        b: The second addend.
    """
    return a + b


@tool
def echo(text: str) -> str:
    """Return the text unchanged.

    Args:
        text: Any text.
    """
    return text


@tool
def explode(message: str) -> str:
    """Always fails, with `message` as the error.

    Args:
        message: The error text.
    """
    raise RuntimeError(message)


SLOW_RELEASE = threading.Event()  # ends every `slow` call at once (the fixture `release_slow` sets it)


@tool
def slow(seconds: float) -> str:
    """Sleep, then say so.

    Args:
        seconds: How long to sleep.
    """
    SLOW_RELEASE.wait(seconds)
    return "slept"


@tool(risk="confirm")
def touch_confirm(path: str) -> str:
    """Create a file (needs approval).

    Args:
        path: Where to create it.
    """
    Path(path).write_text("touched")
    return "created"


@tool(risk="blocked")
def touch_blocked(path: str) -> str:
    """Create a file (blocked: must never run).

    Args:
        path: Where to create it.
    """
    Path(path).write_text("touched")
    return "created"


TOOLS = [add, echo, explode, slow, touch_confirm, touch_blocked]


def make_suite() -> Suite:
    tasks = [
        TaskSpec(id="add", prompt="What is 2 + 3?", answer=5, scoring={"type": "numeric"}),
        TaskSpec(id="echo", prompt="Say hi.", answer="hi", scoring={"type": "exact"}),
        TaskSpec(id="first", prompt="Name a colour.", answer="red", scoring={"type": "exact"}),
        TaskSpec(id="second", prompt="Repeat the colour.", answer="red", scoring={"type": "exact"},
                 depends_on=["first"]),
    ]
    return Suite("servertest", tasks, TOOLS)


class Served:
    """A running server with its app, sink, client and URL."""

    def __init__(self, **app_options: object) -> None:
        self.sink = ListSink()
        self.app = create_app(make_suite(), sink=self.sink, **app_options)  # type: ignore[arg-type]
        self.server = EmbeddedServer(self.app)
        self.url = self.server.start()
        token = app_options.get("token")
        self.client = CorralRouter(self.url, default_verbosity=None, token=token)  # type: ignore[arg-type]

    def close(self) -> None:
        self.client.close()
        self.server.stop()


@pytest.fixture
def served_factory() -> Iterator[type[Served]]:
    """Start servers with custom options; all are stopped at the end of the test."""
    started: list[Served] = []

    def factory(**options: object) -> Served:
        served = Served(**options)
        started.append(served)
        return served

    yield factory  # type: ignore[misc]
    for served in started:
        served.close()


@pytest.fixture
def release_slow() -> Iterator[None]:
    """Ends the `slow` calls this test left running when it ends (later calls sleep again)."""
    global SLOW_RELEASE
    yield
    running, SLOW_RELEASE = SLOW_RELEASE, threading.Event()
    running.set()


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    """One default server (approvals rejected by policy) shared by a test module."""
    instance = Served()
    yield instance
    instance.close()
