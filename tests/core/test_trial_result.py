"""The one finished-trial record: what TRIAL_FINISHED carries, what the store reads back, one success rule."""

from __future__ import annotations

import dataclasses
import json
import subprocess
from pathlib import Path

import pytest

from corral_core.events import EventKind, event_from
from corral_core.metrics import success
from corral_core.trial_result import FIELD_NAMES, FINISHED_KEYS, TrialResult, passes

ROOT = Path(__file__).resolve().parents[2]

FINISHED = TrialResult(
    "t1", "full", 2, "completed", 0.75, False, None, None, True, None, 10, 5, 15, 0.01, 1.5, [], "ep1", None,
    "tr_1", "42", "right", 3, 0.25, 1, 0.5, 0.0)


def test_a_finished_trial_survives_the_wire_and_reads_back_as_the_same_record() -> None:
    event = event_from(EventKind.TRIAL_FINISHED, trial_id="tr_1", task_id="t1", data=FINISHED.finished_data())
    wire = json.loads(json.dumps(event.to_dict()))
    assert list(wire["data"]) == list(FINISHED_KEYS)  # the payload's keys, in wire order
    back = TrialResult.from_mapping({**wire["data"], "task_id": wire["task_id"], "trial_id": wire["trial_id"]})
    assert back == FINISHED


def test_the_runners_payload_is_the_records_payload() -> None:
    from types import SimpleNamespace

    from corral_core.runner.trial import _finished_data

    data = _finished_data(SimpleNamespace(name="full"), 1, None, error="boom", fault="environment")  # type: ignore[arg-type]
    assert list(data) == list(FINISHED_KEYS)
    assert (data["status"], data["error"], data["duration"], data["arm"], data["trial_index"]) == \
        ("error", "boom", 0.0, "full", 1)


@pytest.mark.parametrize(("status", "score", "error", "surrendered", "threshold", "ok"), [
    ("completed", 0.5, None, False, 0.0, True), ("completed", 0.0, None, False, 0.0, False),
    ("completed", None, None, False, 0.0, False), ("completed", 0.5, "x", False, 0.0, False),
    ("completed", 0.5, "", False, 0.0, True), ("completed", 0.5, None, True, 0.0, False),
    ("error", 1.0, None, False, 0.0, False), ("completed", 0.5, None, False, 0.5, False),
])
def test_one_success_rule_for_the_record_the_metrics_and_the_values(status, score, error, surrendered, threshold,
                                                                     ok) -> None:
    record = TrialResult("t", status=status, score=score, error=error, surrendered=surrendered)
    assert record.success(threshold) is ok
    assert success(record, threshold) is ok
    assert passes(status, score, error, surrendered, threshold) is ok


def test_the_fast_builders_make_the_record_init_makes() -> None:
    assert TrialResult.from_values(dataclasses.astuple(FINISHED)) == FINISHED
    assert FINISHED.evolve(arm="other") == dataclasses.replace(FINISHED, arm="other")
    with pytest.raises(TypeError):
        FINISHED.evolve(no_such_field=1)
    with pytest.raises(ValueError):
        TrialResult.from_values(("t1",))
    with pytest.raises(dataclasses.FrozenInstanceError):
        FINISHED.arm = "x"  # type: ignore[misc]
    assert set(FINISHED_KEYS) <= set(FIELD_NAMES)


def test_one_trial_record_class() -> None:
    found = subprocess.run(["grep", "-rn", "--include=*.py", "-E", r"^\s*class (TrialRecord|TrialResult)\b",
                            "corral_core", "corral_tui"], cwd=ROOT, capture_output=True, text=True).stdout
    assert [line.split(":")[0] for line in found.splitlines()] == ["corral_core/trial_result.py"], found
