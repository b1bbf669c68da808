"""Suite loading, scorers and chains."""

from __future__ import annotations

from pathlib import Path

import pytest

from corral_core.env import (
    EpisodeStore,
    ScoringContext,
    TaskDefinition,
    TaskGroup,
    ToolCall,
    ToolStatus,
    choice,
    exact_match,
    extract_number,
    load_suite,
    numeric,
    process_credit,
    regex,
    topological_order,
)
from corral_core.env.chains import DependencyError
from corral_core.errors import UserError

REPO = Path(__file__).resolve().parents[2]
SAMPLEMATH = REPO / "sample_tasks" / "samplemath.yaml"


def ctx(**kw):
    return ScoringContext(task_id="t", **kw)


@pytest.mark.parametrize("answer", ["42", "42.0", "The answer is 42.0", "answer: 42.", "4.2e1"])
def test_numeric_is_robust_to_format(answer):
    assert numeric(42)(answer, ctx())[0] == 1.0


@pytest.mark.parametrize("answer", ["41", "no idea", None, "", "\u221242", "\u201342"])
def test_numeric_rejects_wrong_or_missing(answer):
    assert numeric(42)(answer, ctx())[0] == 0.0


def test_typographic_minus_is_a_minus():
    assert numeric(-1024)("\u22121024", ctx())[0] == 1.0


def test_numeric_tolerance_and_relative():
    assert numeric(100, tolerance=0.5)("100.4", ctx())[0] == 1.0
    assert numeric(100, tolerance=0.5)("100.6", ctx())[0] == 0.0
    assert numeric(1000, tolerance=0.01, relative=True)("1009", ctx())[0] == 1.0


def test_extract_number_takes_the_last_number():
    assert extract_number("step 1: 3 + 4 = 7, so 35") == 35.0
    assert extract_number("1,024") == 1024.0


def test_exact_regex_choice():
    assert exact_match("Paris")(" Paris ", ctx())[0] == 1.0
    assert exact_match("Paris")("paris", ctx())[0] == 0.0
    assert exact_match("Paris", case_sensitive=False)("paris", ctx())[0] == 1.0
    assert regex(r"^C\d+H\d+")("C6H6 benzene", ctx())[0] == 1.0
    assert regex(r"^C\d+H\d+")("benzene", ctx())[0] == 0.0
    assert choice("Yes")("YES", ctx())[0] == 1.0
    assert choice("yes", ["yes", "no"])("I think yes.", ctx())[0] == 1.0
    assert choice("yes", ["yes", "no"])("yes or no", ctx())[0] == 0.0


def test_process_credit():
    calls = [ToolCall("database_query", {}, "ok", ToolStatus.SUCCESS),
             ToolCall("structure_analyzer", {}, None, ToolStatus.EXECUTION_ERROR)]
    scorer = process_credit({"database_query": 0.3, "structure_analyzer": 0.3}, numeric(7), 0.4)
    score, why = scorer("7", ctx(tool_calls=calls))
    assert score == pytest.approx(0.7)
    assert "database_query" in why and "structure_analyzer" not in why


def test_samplemath_loads_with_tools_and_scoring():
    suite = load_suite(SAMPLEMATH)
    assert suite.name == "samplemath"
    assert suite.task_ids == ["add", "multiply", "divide", "power", "compound"]
    assert set(suite.tools) == {"calculator", "round_number"}
    assert not suite.chained
    env = suite.create_environment("add")
    assert env.get_task_prompt() == "What is 17 + 25?"
    assert env.call_tool("calculator", {"operation": "+", "a": 17, "b": 25}).result == "42.0"
    assert env.submit_answer("The answer is 42") == 1.0
    env.close()


def test_samplemath_calculator_reports_non_real_powers_in_words():
    env = load_suite(SAMPLEMATH).create_environment("power")
    call = env.call_tool("calculator", {"operation": "**", "a": -8, "b": 0.5})
    assert call.status.value == "execution_error" and "no real value" in call.error_message


def test_samplemath_process_scoring_gives_partial_credit():
    suite = load_suite(SAMPLEMATH)
    env = suite.create_environment("compound")
    assert env.submit_answer("35") == pytest.approx(0.8)  # right answer, no calculator use
    env = suite.create_environment("compound")
    env.call_tool("calculator", {"operation": "+", "a": 3, "b": 4})
    assert env.submit_answer("35") == pytest.approx(1.0)


def test_calculator_guide_differs_by_verbosity():
    suite = load_suite(SAMPLEMATH)
    env = suite.create_environment("power")
    minimal, brief, full = (env.tools_guide(level) for level in ("minimal", "brief", "full"))
    assert len(minimal) < len(brief) < len(full)
    assert "**" not in env.tools_guide("procedural")
    assert "**" in env.tools_guide("syntactical")


def write_suite(tmp_path: Path, body: str, module: str | None = None) -> Path:
    if module is not None:
        (tmp_path / "env.py").write_text(module)
    path = tmp_path / "suite.yaml"
    path.write_text(body)
    return path


GOOD_MODULE = '''
from corral_core.tools import tool

@tool
def echo(text: str) -> str:
    """Echo.

    Args:
        text: Text.

    Returns:
        The text.
    """
    return text
'''


@pytest.mark.parametrize(
    ("body", "module", "expected"),
    [
        ("name: x\ntasks:\n  - id: a\n", GOOD_MODULE, ["line 3", "prompt"]),
        ("tasks:\n  - id: a\n    prompt: hi\n", None, ["name"]),
        ("name: x\nenvironment: nowhere.py\ntasks:\n  - id: a\n    prompt: p\n", None, ["line 2", "nowhere.py"]),
        ("name: x\nenvironment: env.py\ntools: [missing]\ntasks:\n  - id: a\n    prompt: p\n", GOOD_MODULE,
         ["line 3", "missing", "echo"]),
        ("name: x\ncolour: red\ntasks:\n  - id: a\n    prompt: p\n", None, ["line 2", "colour"]),
        ("name: x\ntasks:\n  - id: a\n    prompt: p\n    depends_on: [b]\n", None, ["unknown task"]),
        ("name: x\ntasks:\n  - id: a\n    prompt: p\n    depends_on: [b]\n  - id: b\n    prompt: p\n"
         "    depends_on: [a]\n", None, ["cycle"]),
        ("name: x\ntasks:\n  - id: a\n    prompt: p\n    scoring: {type: magic}\n", None, ["line 5", "magic"]),
        ("name: x\nenvironment: env.py\ntasks:\n  - id: a\n    prompt: p\n", "import nonexistent_pkg_xyz\n",
         ["could not load", "nonexistent_pkg_xyz"]),
        ("name: [unclosed\n", None, ["YAML"]),
        ("name: x\ntasks:\n  - id: a\n    prompt: p\n    scoring: {type: numeric}\n", None, ["answer"]),
        ("name: x\ntasks:\n  - id: a\n    prompt: p\n    depends_on: 5\n", None, ["line 5", "depends_on"]),
        ("name: x\ntasks:\n  - id: a\n    prompt: p\n    metadata: [1, 2]\n", None, ["line 5", "metadata"]),
        ("name: x\ntasks:\n  - id: a\n    prompt: p\n    scoring: {type: regex, pattern: '('}\n", None,
         ["line 5", "scoring"]),
        ("name: x\ntasks:\n  - id: a\n    prompt: 5\n", None, ["line 4", "prompt"]),
        ("name: x\nscript: [1]\ntasks:\n  - id: a\n    prompt: p\n", None, ["line 2", "script"]),
        ("name: x\ntasks:\n  - id: a\n    prompt: p\n    tools: calc\n", None, ["unknown tools"]),
    ],
)
def test_bad_suites_are_user_errors_naming_file_and_problem(tmp_path, body, module, expected):
    path = write_suite(tmp_path, body, module)
    with pytest.raises(UserError) as info:
        load_suite(path)
    message = str(info.value)
    assert str(path) in message
    for fragment in expected:
        assert fragment in message


def test_suite_that_is_not_utf8(tmp_path):
    path = tmp_path / "latin1.yaml"
    path.write_bytes("name: caf\xe9\n".encode("latin-1"))
    with pytest.raises(UserError, match="UTF-8"):
        load_suite(path)


def test_missing_suite_file(tmp_path):
    with pytest.raises(UserError, match="not found"):
        load_suite(tmp_path / "nope.yaml")


CHAIN = """
name: chain
environment: env.py
tasks:
  - id: fetch
    prompt: Fetch the value.
    answer: "7"
  - id: double
    prompt: Double the value.
    answer: 14
    scoring: {type: numeric}
    depends_on: [fetch]
  - id: report
    prompt: Report.
    answer: done
    depends_on: [double]
"""


def test_chain_prompts_see_only_their_episode(tmp_path):
    suite = load_suite(write_suite(tmp_path, CHAIN, GOOD_MODULE))
    assert suite.chained
    assert suite.ordered_task_ids() == ["fetch", "double", "report"]
    round1, round2 = EpisodeStore("e1"), EpisodeStore("e2")
    suite.create_environment("fetch", episode=round1).submit_answer("7")
    double1 = suite.create_environment("double", episode=round1)
    double2 = suite.create_environment("double", episode=round2)
    assert "Output of fetch: 7" in double1.get_task_prompt()
    assert "Output of fetch: (not available)" in double2.get_task_prompt()
    assert double1.submit_answer("14") == 1.0
    assert round1.output("double").answer == "14"
    assert round2.output("double") is None


def test_an_unscored_trial_withdraws_its_earlier_output(tmp_path):
    suite = load_suite(write_suite(tmp_path, CHAIN, GOOD_MODULE))
    shared = EpisodeStore("shared-across-rounds")
    suite.create_environment("fetch", episode=shared).submit_answer("7")
    assert shared.output("fetch").answer == "7"
    suite.create_environment("fetch", episode=shared).surrender()  # the next round gives up
    assert shared.output("fetch") is None
    assert "Output of fetch: (not available)" in suite.create_environment("double", episode=shared).get_task_prompt()


def test_topological_order_and_task_group():
    assert topological_order({"c": ["b"], "b": ["a"], "a": []}) == ["a", "b", "c"]
    with pytest.raises(DependencyError):
        topological_order({"a": ["a"]})
    group = TaskGroup("g", {
        "t1": TaskDefinition("t1", "first"),
        "t2": TaskDefinition("t2", "second", input_from_tasks=["t1"], initial_input={"k": 1}),
    })
    assert group.chained_tasks
    assert not group.check_dependencies_satisfied("t2")
    group.store_result("t1", {"answer": "x"}, 1.0)
    assert group.get_task_input("t2") == {"k": 1, "result_from_t1": "x"}
    assert group.check_dependencies_satisfied("t2")


def test_catalog_serves_several_suites_and_refuses_clashing_ids(tmp_path):
    from corral_core.env import SuiteCatalog, combine_suites

    math = load_suite(SAMPLEMATH)
    chain = load_suite(write_suite(tmp_path, CHAIN, GOOD_MODULE))
    catalog = combine_suites([math, chain])
    assert isinstance(catalog, SuiteCatalog)
    assert catalog.task_ids[:5] == math.task_ids and catalog.task_ids[5:] == chain.task_ids
    assert catalog.chained and catalog.dependency_graph()["double"] == ["fetch"]
    assert catalog.suite_of("double") is chain
    assert [t.name for t in catalog.tools_for("add")] == ["calculator", "round_number"]
    assert catalog.create_environment("fetch").get_task_prompt() == "Fetch the value."
    assert combine_suites([math]) is math
    with pytest.raises(ValueError, match="'add'"):
        SuiteCatalog([math, math])


def test_a_module_shared_by_suite_and_tool_declaration_is_imported_once(tmp_path):
    (tmp_path / "env.py").write_text(GOOD_MODULE + "\nLOADS = []\nLOADS.append(1)\n")
    suite = load_suite(write_suite(tmp_path, "name: x\nenvironment: env.py\ntools:\n  - echo\n"
                                             "  - {name: echo2, type: python, import: 'env.py:echo'}\n"
                                             "tasks:\n  - id: a\n    prompt: p\n"))
    from corral_core.pyfile import load_python_file

    module = load_python_file(tmp_path / "env.py")
    assert module.LOADS == [1]
    assert suite.own_tools["echo"] is module.echo  # (suite.tools shows it by the derived rule: a copy)
