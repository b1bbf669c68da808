"""`corral-tui ARGS` run by calling `main()` in the test's own process, answered like `subprocess.run`.

A child interpreter costs seconds of CPU per run (Python, the engine and litellm imported again: about
4 s CPU, tens of seconds of wall time on a loaded 2-core machine). A test that checks what a command
prints, writes and exits with gets the same answers from `main()` here; tests of what only a real
process shows (signals, kills, a run that is live while another command looks at it, the installed
entry point, what gets imported at start-up) keep their subprocesses.

The command sees what a child would: its own working directory and environment (both restored after,
so a `.env` the command loads or a variable it sets never leaks into later tests), stdout and stderr
that are not terminals, and `SystemExit` (argparse) turned into the exit code.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

# Variables a library sets once per process, the first time it needs them, and never again: a command
# that happened to be first must leave them set (litellm points tiktoken at its bundled tokenizers
# when it first counts tokens; without it a later count tries to download them, and fails offline).
PROCESS_STATE = ("TIKTOKEN_CACHE_DIR",)


def run_cli(*args: str, cwd: Path | str | None = None,
            env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`corral-tui *args` in `cwd` with `env` (default: this process's environment), in this process."""
    from corral_tui.cli import main

    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    out, err = io.StringIO(), io.StringIO()
    try:
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exc:  # argparse's usage errors, as the child would have exited
                if isinstance(exc.code, str):
                    print(exc.code, file=err)
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        os.chdir(saved_cwd)
        kept = {name: os.environ[name] for name in PROCESS_STATE if name in os.environ and name not in saved_env}
        os.environ.clear()
        os.environ.update(saved_env)
        os.environ.update(kept)
    return subprocess.CompletedProcess(["corral-tui", *args], code, out.getvalue(), err.getvalue())
