"""Typing as a person does, with no pause between keys: every key event is queued at once, so none
waits for the one before it to be handled (Pilot.press waits for the app to be idle after each key,
which hides races between a key and the focus change the key before it causes)."""

from __future__ import annotations

import unicodedata

from textual import events
from textual.app import App
from textual.keys import _character_to_key, _get_unicode_name_from_key


def type_now(app: App[object], *keys: str) -> None:
    """Queue `keys` (names as for Pilot.press: "a", "tab", "enter", or one character) in one go."""
    driver = app._driver
    assert driver is not None, "the app is not running"
    for key in keys:
        if len(key) == 1 and not key.isalnum():
            key = _character_to_key(key)
        try:
            char: str | None = unicodedata.lookup(_get_unicode_name_from_key(key))
        except KeyError:
            char = key if len(key) == 1 else None
        event = events.Key(key, char)
        event.set_sender(app)
        driver.send_message(event)


def type_text(app: App[object], text: str, *then: str) -> None:
    """Queue every character of `text`, then the named keys in `then`, with no pause."""
    type_now(app, *text, *then)
