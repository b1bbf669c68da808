"""A `Select` that cannot crash while it mounts.

Textual 8.2.8's `Select` sets its first value when it mounts, and its value watcher writes the label into
its `SelectCurrent` child by querying that child's own `#label` child. On a loaded machine the
`SelectCurrent` can be mounted but not yet composed at that moment: the query raises `NoMatches`, and the
whole workbench exits while it starts (seen in the suite at load 10-18; Textual issue #6581, fixed on an
unreleased branch). Here the current-value widget keeps a label that arrives before its children and
writes it once they exist; everything else is Textual's `Select`, through public methods only.
"""

from __future__ import annotations

from contextlib import suppress
from typing import Any

from textual.app import ComposeResult
from textual.css.query import NoMatches
from textual.widgets import Select, Static

from corral_tui.widgets.textual_adapter import NoSelection, SelectCurrent  # what Select composes: no public name


class _Current(SelectCurrent):
    """Select's current-value row, taking a label before its `#label` child is composed."""

    def update(self, label: Any) -> None:
        with suppress(NoMatches):  # not composed yet: `on_mount` writes the label `update` kept before its query
            super().update(label)

    def on_mount(self) -> None:
        label = self.label
        self.query_one("#label", Static).update(self.placeholder if isinstance(label, NoSelection) else label)


class Choice(Select[str]):
    """Textual's `Select` of strings, whose mount never queries a child that is not there yet."""

    def compose(self) -> ComposeResult:
        for widget in super().compose():
            yield _Current(self.prompt) if type(widget) is SelectCurrent else widget
