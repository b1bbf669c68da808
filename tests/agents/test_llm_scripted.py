"""The scripted/<name> model answers through litellm.completion like a real provider."""

from __future__ import annotations

import json
import operator
import re
from pathlib import Path

import pytest

from corral_core.llm import CallContext, LLMError, ModelSettings, completion
from corral_core.llm.scripted import SCRIPTS_ENV, sample_tasks_dir

SAMPLEMATH = ModelSettings("scripted/samplemath", timeout=5, max_retries=0)
CALCULATOR = {
    "type": "function",
    "function": {
        "name": "calculator",
        "description": "Do arithmetic on two numbers.",
        "parameters": {
            "type": "object",
            "properties": {
                "operation": {"type": "string", "enum": ["+", "-", "*", "/", "**"], "description": "operator"},
                "a": {"type": "number", "description": "left operand"},
                "b": {"type": "number", "description": "right operand"},
            },
            "required": ["operation", "a", "b"],
        },
    },
}
OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv, "**": operator.pow}
ACTION = re.compile(r"<action>(.*?)</action>\s*<action_input>(.*?)</action_input>", re.DOTALL)
FINAL = re.compile(r"<final_answer>(.*?)</final_answer>", re.DOTALL)


def ask(task: str, prompt: str = "Solve the task.", *, tools=None, role="agent", turn=0, trial=0, settings=SAMPLEMATH):
    messages = [{"role": "system", "content": "You are an agent."}, {"role": "user", "content": prompt}]
    return completion(settings, messages, tools, context=CallContext(task, trial_index=trial, role=role, turn=turn))


def run_react(task: str, prompt: str = "Solve the task.") -> tuple[list[float], str]:
    """Play the ReAct turns of a task, computing each calculator call; returns results and answer."""
    results = []
    for turn in range(10):
        content = ask(task, prompt, turn=turn).content
        for name, raw in ACTION.findall(content):
            assert name == "calculator"
            args = json.loads(raw)
            results.append(OPS[args["operation"]](args["a"], args["b"]))
        final = FINAL.search(content)
        if final:
            return results, final.group(1).strip()
    raise AssertionError(f"{task}: no final answer in 10 turns")


@pytest.mark.parametrize(
    ("task", "answer"), [("add", "42"), ("multiply", "144"), ("divide", "12"), ("compound", "35")]
)
def test_react_turns_compute_the_right_answer(task: str, answer: str) -> None:
    results, final = run_react(task)
    assert final == answer
    assert float(final) == results[-1]  # the final answer is what the last calculator call returns


def test_power_variant_depends_on_documented_operator() -> None:
    undocumented = run_react("power", "What is 2 raised to the power of 10? **calculator**: does arithmetic")
    documented = run_react("power", 'What is 2 raised to the power of 10? operation "**" raises a to b')
    assert undocumented == ([20], "20")
    assert documented == ([1024], "1024")


def test_tool_calling_turns_and_variant_in_tool_descriptions() -> None:
    first = ask("add", tools=[CALCULATOR])
    assert first.content is None
    assert [(c.name, json.loads(c.arguments)) for c in first.tool_calls] == [
        ("calculator", {"operation": "+", "a": 17, "b": 25})
    ]
    assert ask("add", tools=[CALCULATOR], turn=1).content == "Final Answer: 42"
    # the enum always lists "**"; only a description that spells it out switches the variant
    assert json.loads(ask("power", tools=[CALCULATOR]).tool_calls[0].arguments)["operation"] == "*"
    documented = json.loads(json.dumps(CALCULATOR))
    documented["function"]["description"] += ' Use operation "**" for powers.'
    assert json.loads(ask("power", tools=[documented]).tool_calls[0].arguments)["operation"] == "**"


def test_past_the_end_repeats_the_last_turn() -> None:
    assert ask("add", turn=7).content == ask("add", turn=1).content
    assert "<final_answer>42</final_answer>" in ask("add", turn=7).content


def test_usage_is_plausible_and_runs_are_deterministic() -> None:
    short = ask("add", "hi")
    long = ask("add", "hi " * 400)
    assert short.usage.prompt_tokens > 0 and short.usage.completion_tokens > 0
    assert short.usage.total_tokens == short.usage.prompt_tokens + short.usage.completion_tokens
    assert long.usage.prompt_tokens > short.usage.prompt_tokens + 250
    again = ask("add", "hi")
    assert (again.content, again.tool_calls, again.usage) == (short.content, short.tool_calls, short.usage)
    calls_a, calls_b = ask("compound", tools=[CALCULATOR], turn=1), ask("compound", tools=[CALCULATOR], turn=1)
    assert calls_a.tool_calls == calls_b.tool_calls and calls_a.tool_calls[0].id
    assert short.model == "scripted/samplemath" and short.cost is None


def test_other_roles_and_default() -> None:
    assert "Final Answer" not in ask("add", role="planner").content
    assert ask("add", role="planner", turn=1).content.endswith("Final Answer: 42")
    assert ask("add", role="reflection").content.startswith("Lesson:")
    assert ask("divide", role="extractor").content == "12"
    unknown = ask("no-such-task")
    assert "<surrender>no script for this task</surrender>" in unknown.content
    assert ask("no-such-task", tools=[CALCULATOR]).content == "GIVE UP"


def write_script(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / f"{name}.script.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_scripts_dir_env_explicit_path_and_trial_variants(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_script(tmp_path, "mine", """
tasks:
  t1:
    react: ["base"]
    variants:
      - when: {trial_index: [1, 2]}
        react: ["later trials"]
      - when: {prompt_contains: ["alpha", "beta"]}
        react: ["both words"]
""")
    monkeypatch.setenv(SCRIPTS_ENV, str(tmp_path))
    mine = ModelSettings("scripted/mine")
    assert ask("t1", settings=mine).content == "base"
    assert ask("t1", trial=2, settings=mine).content == "later trials"
    assert ask("t1", "alpha only", settings=mine).content == "base"
    assert ask("t1", "alpha and beta", settings=mine).content == "both words"
    assert ask("t1", settings=ModelSettings(f"scripted/{path}")).content == "base"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("tasks:\n  t1:\n    react: [unclosed\n", "line"),
        ("tasks:\n  t1:\n    react: ok\n", "non-empty list"),
        ("tasks:\n  t1:\n    reflection: [x]\n", "no `react` turns for task 't1'"),
        ("tasks: {}\nmistake: 1\n", "unknown keys"),
    ],
)
def test_script_errors_name_the_file_and_the_fix(tmp_path: Path, text: str, expected: str) -> None:
    path = write_script(tmp_path, "broken", text)
    with pytest.raises(LLMError) as info:
        ask("t1", settings=ModelSettings(f"scripted/{path}"))
    assert info.value.kind == "script"
    assert str(path.name) in info.value.message and expected in info.value.message
    assert "Fix:" in info.value.message


def test_missing_script_lists_where_it_looked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(SCRIPTS_ENV, str(tmp_path))
    with pytest.raises(LLMError) as info:
        ask("add", settings=ModelSettings("scripted/does-not-exist"))
    assert info.value.kind == "script"
    assert "does-not-exist.script.yaml" in info.value.message
    assert str(tmp_path) in info.value.message and str(sample_tasks_dir()) in info.value.message


def test_unexpected_provider_failure_is_not_reported_as_a_connection_problem(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from corral_core.llm import client, offline

    def broken(*args, **kwargs):
        raise KeyError("no such field")

    monkeypatch.setattr(offline, "scripted_turn", broken)
    with pytest.raises(LLMError) as info:
        ask("add")  # the direct path
    assert info.value.kind == "provider" and "no such field" in info.value.message
    monkeypatch.setattr(client, "_route_of", lambda settings: None)
    with pytest.raises(LLMError) as through_litellm:
        ask("add")  # litellm's, as while a callback listens
    assert through_litellm.value.kind == "provider" and "no such field" in through_litellm.value.message
