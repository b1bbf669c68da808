"""Every action, for the command palette (ctrl+p) and the help screen: both read the bindings of
the app and of the screens in `registry.screens()`, so a new binding or screen shows up in both without a
second list to keep in step."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from functools import partial
from typing import Any

from textual.app import App
from textual.binding import Binding
from textual.command import DiscoveryHit, Hit, Hits, Provider

from corral_tui.screens.registry import screens


def _bindings(owner: type) -> list[Binding]:
    return [b for b in Binding.make_bindings(getattr(owner, "BINDINGS", [])) if b.id]


def _keys(bindings: list[Binding]) -> dict[str, tuple[str, Binding]]:
    """Binding id -> (the keys bound to it, "a / y", and its first binding)."""
    keys: dict[str, tuple[list[str], Binding]] = {}
    for binding in bindings:
        entry = keys.setdefault(binding.id or "", ([], binding))
        entry[0].append(binding.key)
    return {bid: (binding.key_display or " / ".join(names), binding) for bid, (names, binding) in keys.items()}


def binding_rows(owners: Iterable[tuple[str, type]]) -> list[tuple[str, str, str, str]]:
    """(where, keys, description, id) for every binding with an id, per screen class."""
    rows = []
    for where, owner in owners:
        for binding_id, (keys, binding) in _keys(_bindings(owner)).items():
            rows.append((where, keys, binding.description or binding.action, binding_id))
    return rows


def all_binding_owners(app: type[App[Any]]) -> list[tuple[str, type]]:
    """The app and every screen of the registry, in the order the help screen lists them."""
    return [("everywhere", app), *((info.name, info.screen) for info in screens())]


class ActionsProvider(Provider):
    """Lists every bound action of the current screen and the app, by description and key, and the
    screens that open on their own."""

    def _commands(self) -> list[tuple[str, str, Callable[[], Awaitable[object]]]]:
        screen, app = self.screen, self.app
        seen: set[str] = set()
        commands: list[tuple[str, str, Callable[[], Awaitable[object]]]] = []
        for node in (screen, app):
            for binding_id, (keys, binding) in _keys(_bindings(type(node))).items():
                if binding_id in seen:
                    continue
                seen.add(binding_id)
                title = binding.description or binding.action
                commands.append((title, f"key {keys} · {binding_id}", partial(app.run_action, binding.action, node)))
        for info in screens():
            if info.open_action is not None:
                commands.append((f"Open {info.name}", info.description, partial(app.run_action, info.open_action)))
        return commands

    async def discover(self) -> Hits:
        for title, help_text, callback in self._commands():
            yield DiscoveryHit(title, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, help_text, callback in self._commands():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), callback, help=help_text)
