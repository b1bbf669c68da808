"""Every action, for the command palette (ctrl+p) and the help screen: both read the bindings, so
a new binding shows up in both without a second list to keep in step."""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial

from textual.binding import Binding
from textual.command import DiscoveryHit, Hit, Hits, Provider


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


def all_binding_owners() -> list[tuple[str, type]]:
    """The app and every screen, in the order the help screen lists them."""
    from corral_tui.app import WorkbenchApp
    from corral_tui.screens.approval import ApprovalScreen
    from corral_tui.screens.compare import CompareScreen
    from corral_tui.screens.dialogs import ErrorScreen, HelpScreen, InterventionScreen
    from corral_tui.screens.history import HistoryScreen, TrialsScreen
    from corral_tui.screens.timeline import TimelineScreen
    from corral_tui.screens.workbench import WorkbenchScreen

    return [("everywhere", WorkbenchApp), ("workbench", WorkbenchScreen), ("approval", ApprovalScreen),
            ("intervention", InterventionScreen), ("history", HistoryScreen), ("trials", TrialsScreen),
            ("timeline", TimelineScreen), ("compare", CompareScreen), ("help", HelpScreen), ("error", ErrorScreen)]


class ActionsProvider(Provider):
    """Lists every bound action of the current screen and the app, by description and key."""

    def _commands(self) -> list[tuple[str, str, object]]:
        screen, app = self.screen, self.app
        seen: set[str] = set()
        commands = []
        for node in (screen, app):
            for binding_id, (keys, binding) in _keys(_bindings(type(node))).items():
                if binding_id in seen:
                    continue
                seen.add(binding_id)
                title = binding.description or binding.action
                commands.append((title, f"key {keys} · {binding_id}", partial(app.run_action, binding.action, node)))
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
