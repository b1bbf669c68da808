"""Interoperability with other evaluation tools, each behind an optional extra imported on first use:
Inspect AI logs out (`inspect_out`) and in (`inspect_in`), OpenTelemetry spans (`otel`)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from importlib import import_module
from types import ModuleType
from typing import TypeVar

from corral_core.errors import UserError

T = TypeVar("T")


def require(module: str, extra: str, what: str) -> ModuleType:
    """Import `module` of an optional extra, or say in words which extra to install (exit 2)."""
    try:
        return import_module(module)
    except ImportError:
        raise UserError(f"{what} needs the optional `{extra}` extra, which is not installed.",
                        fix=f"pip install 'corral-tui[{extra}]'.") from None


def off_the_loop(call: Callable[[], T]) -> T:
    """Run one of inspect_ai's synchronous log calls where no event loop runs.

    Called with an asyncio loop running in this thread, inspect_ai re-enters that loop through
    `nest_asyncio`, which patches `asyncio.run` for the whole process: every later `asyncio.run`
    keeps its loop open and its executor threads alive (a Textual app's workers among them). So
    from inside a loop the call runs on a thread of its own, and the caller waits for it."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return call()
    outcome: list[T] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            outcome.append(call())
        except BaseException as exc:  # re-raised in the caller's thread
            failure.append(exc)

    thread = threading.Thread(target=run, name="corral-inspect-io", daemon=True)
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return outcome[0]
