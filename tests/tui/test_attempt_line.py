"""The workbench's finish line says how the attempt status was reached, and an errored run says so."""

from __future__ import annotations

from corral_tui.services import run_presenter
from corral_tui.services.session import RunSummary


def headline(summary: RunSummary) -> str:
    return run_presenter.headline(summary, [])


def test_an_errored_run_is_not_a_first_run_and_a_second_run_says_no_change_with_its_interval() -> None:
    """Before: an all-errored run became the baseline, and the next said "improved against ... 0.00"."""
    errored = RunSummary("bm_1", "finished", None, "errored", None, 20, 20,
                         attempt_text="20 of 20 attempted trials errored or timed out (more than 50%)")
    assert headline(errored).startswith("no headline score: 20 of 20 attempted trials errored")
    text = ("no detectable change (MDE ±0.150 at 80% power: +0.020 [-0.080, +0.120] (…)) against the best earlier "
            "run bm_0")
    again = RunSummary("bm_2", "finished", 0.8, "no_change", 0.78, 20, 0, attempt_text=text)
    assert headline(again) == f"headline score 0.80 (no_change: {text})"
