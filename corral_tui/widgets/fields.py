"""Text fields that take keys in the order they are typed, however fast.

Textual hands a key to the focused widget's queue, but runs that widget's own bindings (Backspace,
Delete, the arrows, Enter) only once the key has bubbled up to the app, through each ancestor's queue.
The letters typed right after it reach the field first: Backspace then `7` typed together inserted the
`7` and then deleted it (issue 36). These fields run their editing bindings as the key reaches them, in
the field's own queue, so a key never overtakes the one before it. Tab and shift+tab are priority
bindings here (run before the next key is handed out), so the keys typed after a Tab land in the next
field.
"""

from __future__ import annotations

from textual import events
from textual.binding import Binding, BindingsMap, BindingType
from textual.widgets import Input, TextArea

FOCUS_KEYS: list[BindingType] = [
    Binding("tab", "app.focus_next", "Next field", show=False, priority=True),
    Binding("shift+tab", "app.focus_previous", "Previous field", show=False, priority=True),
]


async def _run_own_binding(widget: Input | TextArea, keys: BindingsMap, event: events.Key) -> None:
    for binding in keys.key_to_bindings.get(event.key, ()):
        if await widget.app.run_action(binding.action, widget):
            event.stop()
            event.prevent_default()  # handled: it does not bubble up to run the binding a second time
            return


class Field(Input):
    """An `Input` whose editing keys act in the order typed (see the module's docstring)."""

    EDIT_KEYS = BindingsMap(Input.BINDINGS)
    BINDINGS = FOCUS_KEYS

    async def on_key(self, event: events.Key) -> None:
        await _run_own_binding(self, self.EDIT_KEYS, event)


class FieldArea(TextArea):
    """A `TextArea` whose editing keys act in the order typed (see the module's docstring)."""

    EDIT_KEYS = BindingsMap(TextArea.BINDINGS)
    BINDINGS = FOCUS_KEYS

    async def on_key(self, event: events.Key) -> None:
        await _run_own_binding(self, self.EDIT_KEYS, event)
