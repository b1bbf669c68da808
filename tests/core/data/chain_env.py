"""Test environment: a three-link chain, a slow tool and a grader that never returns."""

import os
import threading
import time
from pathlib import Path

from corral_core.env import ScoringContext
from corral_core.env.scoring import extract_number
from corral_core.tools import tool


@tool
def pause(seconds: float) -> str:
    """Wait a little, so a trial takes measurable time.

    Args:
        seconds: How long to wait (at most 5).

    Returns:
        "done".
    """
    held(os.environ.get("CORRAL_TEST_GATE"))
    time.sleep(min(max(seconds, 0.0), 5.0))
    return "done"


def held(folder: str | None) -> None:
    """A test's gate on the run (tests/core/gate.py): every call appends a byte to `calls`; once there
    are more calls than `hold_after` says, a call waits for the `release` file. A test can thus keep a
    run alive, or stop it at a known trial, without assuming how long trials take. Bounded: 300 s."""
    if not folder:
        return
    gate = Path(folder)
    with open(gate / "calls", "a", encoding="utf-8") as calls:
        calls.write(".")
    count = (gate / "calls").stat().st_size
    limit = gate / "hold_after"
    if limit.exists() and count > int(limit.read_text()):
        deadline = time.monotonic() + 300
        while not (gate / "release").exists() and time.monotonic() < deadline:
            time.sleep(0.01)


def any_number(answer: str | None, context: ScoringContext) -> tuple[float, str]:
    """A seed link succeeds with any number."""
    value = extract_number(answer)
    return (1.0, f"seed {value:g}") if value is not None else (0.0, "no number")


def doubles_upstream(answer: str | None, context: ScoringContext) -> tuple[float, str]:
    """Right when the answer is twice this round's seed output."""
    seed = extract_number(context.inputs.get("seed"))
    value = extract_number(answer)
    ok = seed is not None and value is not None and value == 2 * seed
    return (1.0 if ok else 0.0), f"expected {None if seed is None else 2 * seed}, got {value}"


def echoes_upstream(answer: str | None, context: ScoringContext) -> tuple[float, str]:
    """Right when the answer repeats this round's `double` output."""
    ok = answer is not None and answer.strip() == str(context.inputs.get("double")).strip()
    return (1.0 if ok else 0.0), f"upstream {context.inputs.get('double')!r}"


def never_returns(answer: str | None, context: ScoringContext) -> float:
    """A grader that hangs: the server's grader timeout must end the trial."""
    threading.Event().wait()
    return 1.0


@tool(risk="confirm")
def launch(target: str) -> str:
    """Launch something irreversible; needs a person's approval.

    Args:
        target: What to launch.

    Returns:
        A confirmation.
    """
    return f"launched {target}"
