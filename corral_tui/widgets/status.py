"""One-line bars: the info bar (server, requests, model, progress) and the run status line."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.widgets import Static


@dataclass
class Info:
    server: str = "starting…"
    requests: str = "0"
    model: str = "-"
    done: int = 0
    total: int = 0
    run_state: str = "idle"
    approvals: int = 0


class InfoBar(Static):
    """server URL · requests served · model · progress · run state · pending approvals."""

    def show(self, info: Info) -> None:
        text = Text.assemble(("server ", "dim"), (info.server, "bold"), ("  requests ", "dim"), info.requests,
                             ("  model ", "dim"), (info.model, "bold"),
                             ("  progress ", "dim"), f"{info.done}/{info.total}",
                             ("  run ", "dim"), (info.run_state, "bold cyan"))
        if info.approvals:
            text.append(f"  approvals pending: {info.approvals}", style="bold black on yellow")
        self.update(text)


class StatusLine(Static):
    """What the selected trial is doing, or the last thing that happened."""

    def say(self, message: str, style: str = "") -> None:
        self.update(Text(message, style=style))
