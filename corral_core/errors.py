"""Errors a user can cause, answered in words rather than tracebacks."""

from __future__ import annotations

from pathlib import Path


class UserError(Exception):
    """A mistake in user input (a spec, a suite, a flag): exit code 2, one readable paragraph.

    The message names the file (and line or key where known), what is wrong, and how to fix it.
    """

    exit_code = 2

    def __init__(
        self,
        problem: str,
        *,
        file: str | Path | None = None,
        where: str | None = None,
        fix: str | None = None,
    ) -> None:
        self.problem = problem
        self.file = str(file) if file is not None else None
        self.where = where
        self.fix = fix
        super().__init__(self.render())

    def render(self) -> str:
        location = ""
        if self.file:
            location = self.file
            if self.where:
                location += f" ({self.where})"
            location += ": "
        elif self.where:
            location = f"{self.where}: "
        text = f"{location}{self.problem}"
        if self.fix:
            text += f" Fix: {self.fix}"
        return text


class StoreError(UserError):
    """The store cannot be used: a schema this version does not know, a damaged file, a database
    that refuses reads or writes (disk full, read-only, server gone). Exit code 2, like any input
    the user chose; what was already committed stays and can be resumed once the cause is fixed."""

    benchmark_id: str | None = None  # the run it stopped, if one was going (resume it once fixed)
