"""Benchmark specs: the sample specs load, the digest means "same spec", mistakes read clearly."""

from __future__ import annotations

from pathlib import Path

import pytest

from corral_core.errors import UserError
from corral_core.spec import load_spec, spec_from_dict

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_tasks"
DATA = Path(__file__).resolve().parent / "data"


def write_spec(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "bench.yaml"
    path.write_text(body.replace("SUITE", str(SAMPLES / "samplemath.yaml")), encoding="utf-8")
    return path


def error_of(tmp_path: Path, body: str) -> str:
    with pytest.raises(UserError) as info:
        load_spec(write_spec(tmp_path, body))
    return str(info.value)


def test_quickstart_spec_loads_as_documented() -> None:
    spec = load_spec(SAMPLES / "quickstart.bench.yaml")
    assert [arm.name for arm in spec.arms] == ["minimal", "brief", "syntactical"]
    assert [arm.verbosity for arm in spec.arms] == ["minimal", "brief", "syntactical"]
    assert {arm.model.id for arm in spec.arms} == {"scripted/samplemath"}
    assert {arm.agent.type for arm in spec.arms} == {"react"}
    assert spec.trials_per_task == 3 and spec.k_values == (1, 3)
    assert spec.task_ids == ["add", "multiply", "divide", "power", "compound"]
    assert spec.total_trials == 3 * 5 * 3
    assert spec.approval == "reject" and spec.timeouts.grader == 30


def test_samplemath_spec_has_one_arm_per_agent_type() -> None:
    spec = load_spec(SAMPLES / "samplemath.bench.yaml")
    assert [arm.agent.type for arm in spec.arms] == ["react", "tool_calling", "planner", "reflection"]
    assert spec.arms[2].agent.options == {"executor_max_iterations": 4}
    assert spec.k_values == (1, 2)


def test_digest_ignores_parallel_and_comments_but_not_what_changes_results(tmp_path: Path) -> None:
    base = "name: d\nsuite: SUITE\nmodel: scripted/samplemath\ntrials_per_task: 2\n"
    first = load_spec(write_spec(tmp_path, base)).digest
    assert load_spec(write_spec(tmp_path, "# a comment\n" + base + "parallel: 4\n")).digest == first
    assert load_spec(write_spec(tmp_path, base + "arms: {verbosity: [brief]}\n")).digest != first
    assert load_spec(write_spec(tmp_path, base.replace("trials_per_task: 2", "trials_per_task: 3"))).digest != first


def test_spec_from_dict_builds_the_same_spec_as_the_file(tmp_path: Path) -> None:
    path = write_spec(tmp_path, "name: same\nsuite: SUITE\nmodel: scripted/samplemath\n"
                                "arms: {verbosity: [minimal, full]}\ntrials_per_task: 2\n")
    from_file = load_spec(path)
    from_form = spec_from_dict({"name": "same", "suite": str(SAMPLES / "samplemath.yaml"),
                                "model": "scripted/samplemath", "arms": {"verbosity": ["minimal", "full"]},
                                "trials_per_task": 2}, tmp_path)
    assert from_form.digest == from_file.digest
    assert from_form.source == "<run form>"


def test_model_mapping_long_form_arms_and_overrides(tmp_path: Path) -> None:
    spec = load_spec(write_spec(tmp_path, """
suite: SUITE
model: {id: openai/gpt-4o-mini, temperature: 0, api_key_env: MY_KEY, timeout: 20, max_retries: 1}
agent: {type: tool_calling, max_iterations: 4}
arms:
  - {verbosity: minimal}
  - {name: big, verbosity: full, model: scripted/samplemath, agent: {type: react}}
"""))
    assert spec.name == "bench"
    small, big = spec.arms
    assert (small.name, small.model.id, small.model.temperature, small.agent.type) == \
        ("minimal", "openai/gpt-4o-mini", 0.0, "tool_calling")
    assert (big.name, big.model.id, big.agent.type, big.agent.max_iterations) == \
        ("big", "scripted/samplemath", "react", 4)
    overridden = spec.with_overrides(model="scripted/samplemath")
    assert {arm.model.id for arm in overridden.arms} == {"scripted/samplemath"}
    assert overridden.digest != spec.digest


def test_unknown_key_names_line_and_suggests_the_right_one(tmp_path: Path) -> None:
    message = error_of(tmp_path, "name: x\nsuite: SUITE\nmodel: scripted/samplemath\ntrails_per_task: 3\n")
    assert "bench.yaml" in message and "line 4" in message
    assert "unknown key `trails_per_task`" in message and "Did you mean `trials_per_task`?" in message
    nested = error_of(tmp_path, "suite: SUITE\nmodel: scripted/samplemath\ntimeouts: {grade: 3}\n")
    assert "line 3" in nested and "timeouts.grade" in nested and "`grader`" in nested


def test_wrong_type_says_what_was_expected(tmp_path: Path) -> None:
    message = error_of(tmp_path, "suite: SUITE\nmodel: scripted/samplemath\ntrials_per_task: three\n")
    assert "line 3" in message and "`trials_per_task` must be a whole number, not text 'three'" in message
    flag = error_of(tmp_path, "suite: SUITE\nmodel: scripted/samplemath\nsurrender: 1\n")
    assert "`surrender` must be true or false" in flag


def test_missing_suite_file_points_at_the_suite_key(tmp_path: Path) -> None:
    message = error_of(tmp_path, "name: x\nmodel: scripted/samplemath\nsuite: nowhere.yaml\n")
    assert "line 3, key suite" in message and "suite file 'nowhere.yaml' not found" in message
    assert "Fix:" in message


def test_k_larger_than_trials(tmp_path: Path) -> None:
    message = error_of(tmp_path, "suite: SUITE\nmodel: scripted/samplemath\ntrials_per_task: 2\nk_values: [1, 5]\n")
    assert "k = 5 is larger than trials_per_task (2)" in message and "k_values[1]" in message


def test_unknown_verbosity_and_agent_type(tmp_path: Path) -> None:
    verbosity = error_of(tmp_path, "suite: SUITE\nmodel: scripted/samplemath\narms: {verbosity: [brief, ful]}\n")
    assert "unknown verbosity level 'ful'" in verbosity and "Did you mean `full`?" in verbosity
    agent = error_of(tmp_path, "suite: SUITE\nmodel: scripted/samplemath\nagent: {type: reactt}\n")
    assert "unknown agent type 'reactt'" in agent and "Did you mean `react`?" in agent
    assert "react, tool_calling, planner, reflection" in agent


def test_agent_options_are_checked_against_the_agent_class(tmp_path: Path) -> None:
    message = error_of(tmp_path, "suite: SUITE\nmodel: scripted/samplemath\n"
                                 "agent: {type: planner, options: {executor_max_iteration: 3}}\n")
    assert "no option `executor_max_iteration`" in message and "`executor_max_iterations`" in message


def test_task_subset_must_exist_and_be_dependency_closed(tmp_path: Path) -> None:
    unknown = error_of(tmp_path, "suite: SUITE\nmodel: scripted/samplemath\ntasks: [add, multiplyy]\n")
    assert "unknown task 'multiplyy'" in unknown and "Did you mean `multiply`?" in unknown
    chain = DATA / "chain.yaml"
    with pytest.raises(UserError) as info:
        spec_from_dict({"suite": str(chain), "model": f"scripted/{DATA / 'chain.script.yaml'}", "tasks": ["double"]},
                       DATA)
    assert "not dependency-closed" in str(info.value) and "'seed'" in str(info.value)


def test_duplicate_arm_names_and_missing_model(tmp_path: Path) -> None:
    dup = error_of(tmp_path, "suite: SUITE\nmodel: scripted/samplemath\n"
                             "arms: [{name: a, verbosity: brief}, {name: a, verbosity: full}]\n")
    assert "two arms are named 'a'" in dup
    with pytest.raises(UserError) as info:
        spec_from_dict({"suite": str(DATA / "chain.yaml")}, DATA)
    assert "missing `model`" in str(info.value) and "<run form>" in str(info.value)


def test_model_defaults_to_the_suites_script(tmp_path: Path) -> None:
    spec = load_spec(write_spec(tmp_path, "suite: SUITE\n"))
    assert spec.model.id == "scripted/samplemath"
    assert [arm.name for arm in spec.arms] == ["default"]


CHAIN = "name: c\nsuite: CHAIN\nmodel: scripted/materials_chain\n"


def write_chain_spec(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "chain.bench.yaml"
    path.write_text((CHAIN + body).replace("CHAIN", str(SAMPLES / "materials_chain.yaml")), encoding="utf-8")
    return path


def test_direction_and_chain_weights(tmp_path: Path) -> None:
    plain = load_spec(write_chain_spec(tmp_path, ""))
    assert plain.direction == "maximize" and plain.chain_weights == ()
    spec = load_spec(write_chain_spec(tmp_path, "direction: minimize\n"
                                                "chain: {weights: {mc_lookup: 0.3, mc_volume: 0.3, mc_modify: 0.4}}\n"))
    assert spec.direction == "minimize"
    assert spec.chain_weights == (("mc_lookup", 0.3), ("mc_volume", 0.3), ("mc_modify", 0.4))
    assert spec.digest != plain.digest  # both change what the numbers mean
    # specs that set neither keep the digest they had before these keys existed
    assert "direction" not in plain.normalized() and "chain" not in plain.normalized()


@pytest.mark.parametrize(("body", "expected"), [
    ("direction: up\n", "unknown direction 'up'"),
    ("chain: {weights: {mc_lookup: 0.5, mc_volume: 0.3, mc_modify: 0.4}}\n",
     "sum to 1.2, not 1 (mc_lookup: 0.5, mc_volume: 0.3, mc_modify: 0.4)"),
    ("chain: {weights: {mc_lookup: 0.5, mc_volume: 0.5}}\n", "no weight for the chain link(s) mc_modify"),
    ("chain: {weights: {mc_lookp: 0.3, mc_volume: 0.3, mc_modify: 0.4}}\n", "'mc_lookp' is not a link of a chain"),
    ("chain: {weights: {mc_lookup: -0.3, mc_volume: 0.9, mc_modify: 0.4}}\n", "must be a finite number >= 0"),
    ("chain: {weight: {}}\n", "unknown key `weight`"),
])
def test_bad_direction_and_chain_weights_are_refused_plainly(tmp_path: Path, body: str, expected: str) -> None:
    with pytest.raises(UserError) as info:
        load_spec(write_chain_spec(tmp_path, body))
    assert expected in str(info.value), str(info.value)


def test_chain_weights_need_a_chain(tmp_path: Path) -> None:
    message = error_of(tmp_path, "suite: SUITE\nmodel: scripted/samplemath\nchain: {weights: {add: 1}}\n")
    assert "no selected task is part of a chain" in message


def test_a_bad_spec_reports_every_mistake_at_once(tmp_path: Path) -> None:
    """Three mistakes in three places (an unknown key, a bad type in an arm, a bad value in the hooks'
    tasks) come back in one answer, each with its line, key and fix; the exit code stays 2."""
    with pytest.raises(UserError) as info:
        load_spec(write_spec(tmp_path, "suite: SUITE\nmodel: scripted/samplemath\ntrails_per_task: 3\n"
                                       "arms:\n  - {name: a, verbosity: brief}\n  - {name: b, verbosity: 7}\n"
                                       "hooks: {interventions: {ad: Use the calculator.}}\n"))
    error = info.value
    message = str(error)
    assert error.exit_code == 2 and len(error.errors) == 3
    assert "bench.yaml: 3 problems:" in message
    assert "1. line 3, key trails_per_task: unknown key `trails_per_task`. Did you mean `trials_per_task`?" in message
    assert "2. line 6, key arms[1].verbosity: unknown verbosity level 7." in message
    assert "3. line 7, key hooks.interventions.ad: intervention for unknown task 'ad'. Did you mean `add`?" in message
    assert message.count("Fix:") == 3


def test_a_mistake_is_not_repeated_by_the_checks_that_build_on_it(tmp_path: Path) -> None:
    """A wrong trial count is one mistake, not also 'k larger than trials'; a mistyped task is not also a
    broken dependency; a suite that fails to load is not also every task unknown."""
    message = error_of(tmp_path, "suite: SUITE\nmodel: scripted/samplemath\ntrials_per_task: two\nk_values: [1, 2]\n")
    assert "must be a whole number" in message and "problems" not in message
    message = error_of(tmp_path, "suite: nowhere.yaml\nmodel: scripted/samplemath\ntasks: [add]\n"
                                 "hooks: {interventions: {add: Go.}}\nparallel: 0\n")
    assert "2 problems:" in message and "suite file 'nowhere.yaml' not found" in message
    assert "`parallel` must be at least 1, not 0." in message and "unknown task" not in message
    single = error_of(tmp_path, "suite: SUITE\nmodel: scripted/samplemath\ntasks: [add, multiplyy]\n")
    assert "problems" not in single and single.startswith(str(tmp_path / "bench.yaml") + " (line 3, key tasks[1])")
