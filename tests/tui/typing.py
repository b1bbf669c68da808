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
