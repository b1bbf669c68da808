"""Typing as a person does, with no pause between keys: every key event is queued at once, so none
waits for the one before it to be handled (Pilot.press waits for the app to be idle after each key,
which hides races between a key and the focus change the key before it causes)."""

from __future__ import annotations

import subprocess
import sys
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager

from textual import events
from textual.app import App
from textual.keys import _character_to_key, _get_unicode_name_from_key
from textual.pilot import Pilot


def type_now(app: App[object], *keys: str) -> None:
    """Queue `keys` (names as for Pilot.press: "a", "tab", "enter", or one character) in one go."""
    driver = app._driver
    assert driver is not None, "the app is not running"
    for key in keys:
        char: str | None
        if len(key) == 1:  # a character: its key name ("slash" for "/") and the character itself
            char, key = key, key if key.isalnum() else _character_to_key(key)
        else:
            try:
                char = unicodedata.lookup(_get_unicode_name_from_key(key))
            except KeyError:
                char = None
        event = events.Key(key, char)
        event.set_sender(app)
        driver.send_message(event)


def type_text(app: App[object], text: str, *then: str) -> None:
    """Queue every character of `text`, then the named keys in `then`, with no pause."""
    type_now(app, *text, *then)


@contextmanager
def cpu_hogs(count: int = 2) -> Iterator[None]:
    """`count` processes spinning on a core each while the block runs (a loaded machine), killed after."""
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield
    finally:
        for hog in hogs:
            hog.kill()
        for hog in hogs:
            hog.wait()


async def handled(pilot: Pilot[object]) -> None:
    """Wait until every key queued by `type_now` has been handled: the driver posts them on the next turns
    of the event loop (a pause lets them in), then every node's queue must be empty."""
    from tests.tui.helpers import quiet, wait_for

    await pilot.pause()
    await wait_for(pilot, lambda: quiet(pilot.app), "every key typed handled")
