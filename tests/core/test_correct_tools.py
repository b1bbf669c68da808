"""Tasks declare which tools count as a correct choice (issue 39, item 4): `correct_tools` is validated when
the suite loads (file, line, fix), a `tool_choice` scorer reads the calls against it, and the selection study
reports per arm how often the first call and any call named a correct tool, with task-level intervals."""

from __future__ import annotations

import math
import statistics

import pytest
from scipy import stats as scipy_stats

from corral_core.env import load_suite
from corral_core.env.records import ToolCall
from corral_core.env.scoring import ScoringContext, build_scorer
from corral_core.errors import UserError
from corral_core.metrics import TrialResult, analyse

TOOLS = '''
from corral_core.tools import tool

@tool
def search_a(query: str) -> str:
    """Search the first index.

    Args:
        query: What to look for.
    """
    return query

@tool
def search_b(query: str) -> str:
    """Search the second index.

    Args:
        query: What to look for.
    """
    return query
'''
HEAD = "name: x\nenvironment: env.py\ntools: [search_a, search_b]\ntasks:\n  - id: a\n    prompt: p\n"


def write(tmp_path, body: str):  # type: ignore[no-untyped-def]
    (tmp_path / "env.py").write_text(TOOLS)
    path = tmp_path / "suite.yaml"
    path.write_text(body)
    return path


def test_a_task_declares_its_correct_tools_and_the_scorer_reads_them(tmp_path) -> None:  # type: ignore[no-untyped-def]
    suite = load_suite(write(tmp_path, HEAD + "    correct_tools: [search_b]\n    scoring: {type: tool_choice}\n"))
    task = suite.tasks["a"]
    assert task.correct_tools == ["search_b"]
    calls = [ToolCall("search_a", {}, "ok", "success"), ToolCall("search_b", {}, "ok", "success")]
    context = ScoringContext(task_id="a", tool_calls=calls, correct_tools=("search_b",))
    assert task.scorer is not None
    assert task.scorer("anything", context) == (0.0, "first called search_a, not one of ['search_b']")
    any_call = build_scorer({"type": "tool_choice", "any_call": True}, None, lambda name: None)
    assert any_call("anything", context) == (1.0, "called search_b")
    assert task.scorer(None, ScoringContext(task_id="a", correct_tools=("search_b",)))[0] == 0.0


@pytest.mark.parametrize(("extra", "line", "fragments"), [
    ("    correct_tools: [search_c]\n", 7, ["'search_c', which this task does not offer", "did you mean 'search_b'"]),
    ("    correct_tools: []\n", 7, ["`correct_tools` is empty", "correct_tools: [search_a]"]),
    ("    correct_tools: 5\n", 7, ["must be a list of names"]),
    ("    tools: [search_a]\n    correct_tools: [search_b]\n", 8, ["'search_b', which this task does not offer",
                                                                     "name one of its tools: search_a"]),
    ("    scoring: {type: tool_choice}\n", 7, ["needs the task's `correct_tools`", "add `correct_tools:"]),
])
def test_bad_correct_tools_are_refused_with_file_line_and_fix(tmp_path, extra: str, line: int,  # type: ignore[no-untyped-def]
                                                              fragments: list[str]) -> None:
    path = write(tmp_path, HEAD + extra)
    with pytest.raises(UserError) as info:
        load_suite(path)
    message = str(info.value)
    assert str(path) in message and f"line {line}" in message
    for fragment in fragments:
        assert fragment in message


# per arm, task -> the calls of each of its trials; tasks t0 and t1 count search_b as correct, t2 declares none
CALLS = {
    "plain": {"t0": [["search_a"], ["search_b"], ["search_a", "search_b"], []],
              "t1": [["search_a"], ["search_a"], ["search_b"], ["search_a"]],
              "t2": [["search_a"], ["search_b"]]},
    "clear": {"t0": [["search_b"], ["search_b"], ["search_b"], ["search_a", "search_b"]],
              "t1": [["search_b"]] * 4,
              "t2": [["search_b"], ["search_b"]]},
}
CORRECT = {"t0": ["search_b"], "t1": ["search_b"]}


def records() -> list[TrialResult]:
    return [TrialResult(task_id=task, arm=arm, trial_index=i, score=1.0, iterations=len(calls) + 1,
                        tool_calls=[{"tool_name": name, "status": "success"} for name in calls])
            for arm, tasks in CALLS.items() for task, trials in tasks.items() for i, calls in enumerate(trials)]


def hand_interval(shares: list[float], trials: list[int]) -> tuple[float, float]:
    """intervals.task_mean_interval by hand: t over tasks, the sd floored by m(1-m) * mean(1/trials)."""
    m = statistics.fmean(shares)
    floor = m * (1 - m) * statistics.fmean(1 / n for n in trials)
    sd = math.sqrt(max(statistics.variance(shares), floor))
    half = scipy_stats.t.ppf(0.975, len(shares) - 1) * sd / math.sqrt(len(shares))
    return max(0.0, m - half), min(1.0, m + half)


def test_correct_choice_rates_per_arm_match_a_hand_computation() -> None:
    study = analyse(records(), ["plain", "clear"], correct_tools=CORRECT).selection
    assert study is not None and study.correct_tools == CORRECT
    plain, clear = study.arms
    assert plain.correct_first is not None and plain.correct_any is not None
    # plain, first call search_b: t0 1/4, t1 1/4 (t2 declares nothing and is left out)
    assert plain.correct_first.n_tasks == 2
    assert plain.correct_first.value == pytest.approx(0.25)
    # both tasks at 0.25: no spread, so the floor 0.25 * 0.75 / 4 sizes the interval
    assert plain.correct_first.ci == pytest.approx(hand_interval([0.25, 0.25], [4, 4]))
    # called search_b at all: t0 2/4 (the trial with no call is wrong), t1 1/4
    assert plain.correct_any.value == pytest.approx(0.375)
    assert plain.correct_any.ci == pytest.approx(hand_interval([0.5, 0.25], [4, 4]))
    assert clear.correct_first is not None and clear.correct_any is not None
    assert clear.correct_first.value == pytest.approx((3 / 4 + 1) / 2)
    assert clear.correct_any.value == 1.0
    assert "correct tool first 0.25" in study.summary[0]
    assert "over the 2 tasks declaring correct_tools" in study.summary[0]


def test_without_declared_tools_there_are_no_correct_rates() -> None:
    study = analyse(records(), ["plain", "clear"]).selection
    assert study is not None and study.arms[0].correct_first is None and study.correct_tools == {}
    assert "correct tool" not in study.summary[0]


def test_a_task_file_row_declares_correct_tools_too(tmp_path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "tasks.csv").write_text("id,prompt,correct_tools\na,p,search_b\nb,q,\"search_a, search_b\"\n")
    suite = load_suite(write(tmp_path, "name: x\nenvironment: env.py\ntools: [search_a, search_b]\ntasks: tasks.csv\n"))
    assert suite.tasks["a"].correct_tools == ["search_b"]
    assert suite.tasks["b"].correct_tools == ["search_a", "search_b"]
    (tmp_path / "tasks.csv").write_text("id,prompt,correct_tools\na,p,search_x\n")
    with pytest.raises(UserError, match="tasks.csv.*'search_x', which this task does not offer"):
        load_suite(tmp_path / "suite.yaml")
