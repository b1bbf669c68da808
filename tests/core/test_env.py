"""Environment: tool-call records, risk enforcement, scoring outcomes, trials and workspaces."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from corral_core.env import (
    ApprovalDecision,
    Environment,
    ToolStatus,
    TrialFinishedError,
)
from corral_core.tools import ToolExecutionError, tool
from tests.timeouts import HANG


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: First number.
        b: Second number.

    Returns:
        The sum.
    """
    return a + b


@tool
def explode(reason: str) -> str:
    """Always fail.

    Args:
        reason: What to say.

    Returns:
        Nothing, ever.
    """
    raise RuntimeError(reason)


@tool
def politely_fail() -> str:
    """Fail in words.

    Returns:
        Nothing.
    """
    raise ToolExecutionError("service unavailable")


WAKE = threading.Event()  # set by a test once it has its answer: `sleepy` ends then (or after `seconds`)
WOKE = threading.Event()  # set when `sleepy` ends


@tool
def sleepy(seconds: float) -> str:
    """Sleep a while.

    Args:
        seconds: How long.

    Returns:
        "awake".
    """
    WAKE.wait(seconds)
    WOKE.set()
    return "awake"


class Sandbox(Environment):
    """A tiny environment: answer 42, side effects in a file we can check."""

    def __init__(self, *args, scorer=None, **kwargs):
        self.scorer = scorer or (lambda answer: 1.0 if answer == "42" else 0.0)
        super().__init__(*args, **kwargs)
        self.add_tool(add)
        self.add_tool(explode)
        self.add_tool(politely_fail)
        self.add_tool(sleepy)

    def get_task_prompt(self) -> str:
        return "What is 40 + 2?"

    def score(self):
        return self.scorer(self.state.submitted_answer)


def make_side_effect_tools(path: Path):
    @tool(risk="blocked")
    def wipe(target: str) -> str:
        """Delete everything.

        Args:
            target: What to delete.

        Returns:
            A confirmation.
        """
        path.write_text("ran")
        return "wiped"

    @tool(risk="confirm")
    def touch(name: str) -> str:
        """Create a file.

        Args:
            name: File name.

        Returns:
            A confirmation.
        """
        path.write_text(name)
        return "touched"

    return wipe, touch


class Gate:
    def __init__(self, approved: bool, decided_by: str = "user"):
        self.decision = ApprovalDecision(approved, decided_by)
        self.requests = []

    def request(self, request):
        self.requests.append(request)
        return self.decision


@pytest.fixture
def env(tmp_path):
    return Sandbox("t1", base_work_dir=tmp_path)


def test_successful_call_is_recorded_with_timing(env):
    call = env.call_tool("add", {"a": 2, "b": 3})
    assert call.status is ToolStatus.SUCCESS
    assert call.result == "5"
    assert call.duration >= 0 and call.timestamp.endswith("+00:00")
    assert env.state.tool_calls == [call]


def test_failures_become_records_not_exceptions(env):
    unknown = env.call_tool("nope", {})
    bad_args = env.call_tool("add", {"a": 1})
    crash = env.call_tool("explode", {"reason": "boom"})
    worded = env.call_tool("politely_fail", {})
    assert unknown.status is ToolStatus.INVALID_TOOL and "nope" in unknown.error_message
    assert bad_args.status is ToolStatus.INVALID_ARGS and "b" in bad_args.error_message
    assert crash.status is ToolStatus.EXECUTION_ERROR and crash.error_message == "boom"
    assert worded.status is ToolStatus.EXECUTION_ERROR and worded.error_message == "service unavailable"
    stats = env.tool_statistics()
    assert stats["total_calls"] == 4 and stats["failed_calls"] == 4 and stats["successful_calls"] == 0
    assert stats["error_types"] == {"invalid_tool": 1, "invalid_args": 1, "execution_error": 2,
                                   "blocked": 0, "rejected": 0, "timeout": 0}


def test_blocked_tool_never_runs(tmp_path):
    side_effect = tmp_path / "side-effect"
    env = Sandbox("t1", base_work_dir=tmp_path, approval_gate=Gate(True))
    wipe, _ = make_side_effect_tools(side_effect)
    env.add_tool(wipe)
    call = env.call_tool("wipe", {"target": "/"})
    assert call.status is ToolStatus.BLOCKED
    assert not side_effect.exists()


@pytest.mark.parametrize("approved", [True, False])
def test_confirm_tool_runs_only_when_approved(tmp_path, approved):
    side_effect = tmp_path / "side-effect"
    gate = Gate(approved)
    env = Sandbox("t1", base_work_dir=tmp_path, approval_gate=gate)
    _, touch = make_side_effect_tools(side_effect)
    env.add_tool(touch)
    call = env.call_tool("touch", {"name": "x"})
    assert len(gate.requests) == 1 and gate.requests[0].tool_name == "touch"
    assert gate.requests[0].trial_id == env.state.trial_id
    if approved:
        assert call.status is ToolStatus.SUCCESS and call.approval == "approved"
        assert side_effect.read_text() == "x"
    else:
        assert call.status is ToolStatus.REJECTED and call.approval == "rejected"
        assert not side_effect.exists()


def test_confirm_tool_without_gate_is_rejected(tmp_path):
    side_effect = tmp_path / "side-effect"
    env = Sandbox("t1", base_work_dir=tmp_path)
    _, touch = make_side_effect_tools(side_effect)
    env.add_tool(touch)
    call = env.call_tool("touch", {"name": "x"})
    assert call.status is ToolStatus.REJECTED
    assert "no approver" in call.error_message
    assert not side_effect.exists()


def test_approval_timeout_is_recorded_as_such(tmp_path):
    env = Sandbox("t1", base_work_dir=tmp_path, approval_gate=Gate(False, "timeout"))
    _, touch = make_side_effect_tools(tmp_path / "x")
    env.add_tool(touch)
    call = env.call_tool("touch", {"name": "x"})
    assert call.status is ToolStatus.REJECTED and call.approval == "timeout"


def test_tool_timeout(tmp_path):
    env = Sandbox("t1", base_work_dir=tmp_path, tool_timeout=0.2)
    WAKE.clear()
    WOKE.clear()
    try:
        call = env.call_tool("sleepy", {"seconds": 60})
        assert not WOKE.is_set()  # the call came back while the tool was still running: the timeout ended it
    finally:
        WAKE.set()
    assert call.status is ToolStatus.TIMEOUT


def test_submit_scores_and_second_submit_is_refused(env):
    assert env.submit_answer("42") == 1.0
    assert env.state.status == "scored" and env.state.score == 1.0
    with pytest.raises(TrialFinishedError):
        env.submit_answer("42")
    with pytest.raises(TrialFinishedError):
        env.surrender()


def test_score_with_explanation_is_kept(tmp_path):
    env = Sandbox("t1", base_work_dir=tmp_path, scorer=lambda a: (0.5, "half right"))
    assert env.submit_answer("41") == 0.5
    assert env.state.explanation == "half right"
    assert env.state.snapshot()["explanation"] == "half right"


def test_raising_scorer_scores_zero_with_error(tmp_path):
    def broken(answer):
        raise KeyError("reference")

    env = Sandbox("t1", base_work_dir=tmp_path, scorer=broken)
    assert env.submit_answer("42") == 0.0
    assert env.state.status == "scored"
    assert "KeyError" in env.state.explanation


@pytest.mark.parametrize("bad", [1.7, -0.2, float("nan"), "1.0", None])
def test_out_of_range_scores_are_contained(tmp_path, bad):
    env = Sandbox("t1", base_work_dir=tmp_path, scorer=lambda a: bad)
    score = env.submit_answer("42")
    assert 0.0 <= score <= 1.0
    assert env.state.explanation


def test_grader_that_never_returns_times_out(tmp_path):
    hang, graded = threading.Event(), threading.Event()
    env = Sandbox("t1", base_work_dir=tmp_path, grader_timeout=0.3,
                  scorer=lambda a: (hang.wait(60), graded.set()) and 1.0)
    try:
        env.submit_answer("42")
        assert not graded.is_set()  # the submit came back while the grader still hung
    finally:
        hang.set()
    assert env.state.status == "timeout"
    assert env.state.score is None
    assert "timed out" in env.state.explanation


def test_surrender(env):
    assert env.surrender() == 0.0
    assert env.state.surrendered and env.state.status == "surrendered"


def test_reset_archives_and_makes_a_fresh_workspace(env, tmp_path):
    first = env.state.trial_id
    first_dir = env.get_current_work_dir()
    env.call_tool("add", {"a": 1, "b": 1})
    env.submit_answer("42")
    second = env.reset_state()
    assert (first, second) == ("0", "1")
    assert env.trial_states["0"].score == 1.0
    assert env.state.tool_calls == [] and env.state.status == "running"
    assert env.get_current_work_dir() != first_dir
    assert Path(env.get_current_work_dir()).is_dir()
    assert Path(env.get_current_work_dir()).parent == tmp_path


def test_hidden_args_come_from_the_environment(tmp_path):
    @tool(hidden_args=("work_dir",))
    def where(work_dir: str) -> str:
        """Tell the workspace.

        Args:
            work_dir: Supplied by the environment.

        Returns:
            The path.
        """
        return work_dir

    env = Sandbox("t1", base_work_dir=tmp_path)
    env.add_tool(where)
    call = env.call_tool("where", {"work_dir": "/etc"})  # the agent cannot choose it
    assert call.status is ToolStatus.SUCCESS
    assert call.result == env.get_current_work_dir()


def test_guides(env):
    assert env.task_guide("brief").startswith("Task: What is 40 + 2?\n\n")
    names = [t["function"]["name"] for t in env.tools_list("minimal")]
    assert names == ["add", "explode", "politely_fail", "sleepy"]
    assert {t["name"] for t in env.tools_mcp()} == set(names)


@tool
def quits(code: int) -> str:
    """Call sys.exit.

    Args:
        code: Exit code.

    Returns:
        Never.
    """
    raise SystemExit(code)


@tool
def chatty(size: int) -> str:
    """Return a lot of text.

    Args:
        size: How many characters.

    Returns:
        The text.
    """
    return "x" * size


@pytest.mark.parametrize("tool_timeout", [None, HANG])  # HANG: the tool runs in a thread, with a limit
def test_tool_raising_system_exit_is_an_execution_error(tmp_path, tool_timeout):
    env = Sandbox("t1", base_work_dir=tmp_path, tool_timeout=tool_timeout)
    env.add_tool(quits)
    call = env.call_tool("quits", {"code": 3})
    assert call.status is ToolStatus.EXECUTION_ERROR
    assert "SystemExit" in call.error_message


def test_grader_raising_keyboard_interrupt_scores_zero(tmp_path):
    def interrupt(answer):
        raise KeyboardInterrupt

    env = Sandbox("t1", base_work_dir=tmp_path, scorer=interrupt, grader_timeout=HANG)
    assert env.submit_answer("42") == 0.0
    assert "KeyboardInterrupt" in env.state.explanation


def test_huge_tool_results_are_cut_with_a_note(tmp_path):
    from corral_core.tools.result_cap import MAX_RESULT_CHARS

    env = Sandbox("t1", base_work_dir=tmp_path)
    env.add_tool(chatty)
    call = env.call_tool("chatty", {"size": MAX_RESULT_CHARS * 3})
    assert call.status is ToolStatus.SUCCESS
    assert len(call.result) < MAX_RESULT_CHARS + 100
    assert call.result.endswith(f"{MAX_RESULT_CHARS * 2} more characters]")
    assert env.call_tool("chatty", {"size": 10}).result == "x" * 10
