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
        self.errors: list[UserError] = [self]  # the mistakes this error reports (several: see combine)
        super().__init__(self.render())

    @classmethod
    def combine(cls, errors: list[UserError], *, file: str | Path | None = None) -> UserError:
        """One error for several mistakes in `file`, numbered one a line (one mistake stays as it is)."""
        unique = list({error.render(): error for error in errors}.values())
        if len(unique) == 1:
            return unique[0]
        lines = [f"{len(unique)} problems:"]
        for number, error in enumerate(unique, 1):
            where = error.where if file is not None and error.file == str(file) else error.location()
            lines.append(f"  {number}. " + (f"{where}: " if where else "") + error.problem
                         + (f" Fix: {error.fix}" if error.fix else ""))
        combined = cls("\n".join(lines), file=file)
        combined.errors = unique
        return combined

    def location(self) -> str:
        """`file (where)`, `file`, `where` or '' for what is known."""
        if self.file:
            return f"{self.file} ({self.where})" if self.where else self.file
        return self.where or ""

    def render(self) -> str:
        location = self.location()
        text = f"{location}: {self.problem}" if location else self.problem
        if self.fix:
            text += f" Fix: {self.fix}"
        return text


class StoreError(UserError):
    """The store cannot be used: a schema this version does not know, a damaged file, a database
    that refuses reads or writes (disk full, read-only, server gone). Exit code 2, like any input
    the user chose; what was already committed stays and can be resumed once the cause is fixed."""

    benchmark_id: str | None = None  # the run it stopped, if one was going (resume it once fixed)
