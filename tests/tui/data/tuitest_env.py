"""Tools for the TUI tests: a confirm-level tool with a visible side effect, and a safe counter.

`write_marker` writes a file into $CORRAL_TUI_TEST_MARKERS, so a test can tell whether the tool
really ran (only after an approval) or not (after a rejection).
"""

import os
from pathlib import Path

from corral_core.tools import ToolExecutionError, tool

MARKERS_ENV = "CORRAL_TUI_TEST_MARKERS"


@tool(risk="confirm")
def write_marker(name: str) -> str:
    """Write a marker file: a side effect that a person has to approve.

    Args:
        name: File name of the marker.

    Returns:
        What was written.
    """
    folder = os.environ.get(MARKERS_ENV)
    if not folder:
        raise ToolExecutionError(f"${MARKERS_ENV} is not set.")
    (Path(folder) / name).write_text("written by write_marker\n", encoding="utf-8")
    return f"wrote {name}"


@tool
def tally(step: int) -> int:
    """Count one step of a long task.

    Args:
        step: The step number.

    Returns:
        The same number.
    """
    return step
