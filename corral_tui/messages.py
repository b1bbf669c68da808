"""Messages thread workers and engine callbacks post to the app (`post_message` is thread-safe)."""

from __future__ import annotations

from typing import Any

from textual.message import Message

from corral_core.env.approval import ApprovalRequest


class SuitesLoaded(Message):
    def __init__(self, suites: list[Any]) -> None:
        super().__init__()
        self.suites = suites


class ServicesReady(Message):
    """The store is open and the servers answer: runs can start."""

    def __init__(self, urls: dict[str, str]) -> None:
        super().__init__()
        self.urls = urls


class ApprovalRequested(Message):
    """A confirm-level tool call waits for a person (posted from a server thread)."""

    def __init__(self, request: ApprovalRequest) -> None:
        super().__init__()
        self.request = request


class RemoteApprovals(Message):
    """The remote server's pending approvals, as polled (replaces the previous poll)."""

    def __init__(self, pending: list[ApprovalRequest]) -> None:
        super().__init__()
        self.pending = pending

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, RemoteApprovals)


class RunStarted(Message):
    def __init__(self, total: int, start_paused: bool) -> None:
        super().__init__()
        self.total = total
        self.start_paused = start_paused


class RunFinished(Message):
    def __init__(self, summary: Any) -> None:
        super().__init__()
        self.summary = summary


class TaskTextLoaded(Message):
    def __init__(self, suite: str, task_id: str, verbosity: str, prompt: str, guide: str) -> None:
        super().__init__()
        self.suite, self.task_id, self.verbosity = suite, task_id, verbosity
        self.prompt, self.guide = prompt, guide


class ControlApplied(Message):
    """A pause / step / resume / intervention reached the engine (or not: `ok` False)."""

    def __init__(self, command: str, trial_id: str | None, ok: bool) -> None:
        super().__init__()
        self.command, self.trial_id, self.ok = command, trial_id, ok


class DataLoaded(Message):
    """A history / trials / timeline / compare query finished; `key` says which screen asked."""

    def __init__(self, key: str, data: Any) -> None:
        super().__init__()
        self.key = key
        self.data = data
