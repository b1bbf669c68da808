"""Spec fixes from review: agent options and models are checked when the spec loads, scripted suites
do not share a script by accident, numbers are finite, and the digest covers file contents."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from corral_core.errors import UserError
from corral_core.spec import load_spec

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_tasks"
DATA = Path(__file__).resolve().parent / "data"


def write(path: Path, body: str) -> Path:
    path.write_text(body, encoding="utf-8")
    return path


def error_of(path: Path) -> str:
    with pytest.raises(UserError) as info:
        load_spec(path)
    return str(info.value)


def test_agent_options_the_agent_refuses_fail_at_load_naming_file_and_key(tmp_path: Path) -> None:
    spec = write(tmp_path / "bad.bench.yaml", f"name: r\nsuite: {SAMPLES / 'samplemath.yaml'}\n"
                                              "agent: {type: reflection, options: {max_reflections: 0}}\n")
    message = error_of(spec)
    assert "bad.bench.yaml" in message and "agent.options" in message and "max_reflections" in message


def test_agent_options_in_an_arm_are_checked_too(tmp_path: Path) -> None:
    spec = write(tmp_path / "arm.bench.yaml",
                 f"name: r\nsuite: {SAMPLES / 'samplemath.yaml'}\n"
                 "arms:\n  - {name: a}\n  - {name: b, agent: {type: reflection, options: {max_reflections: -1}}}\n")
    message = error_of(spec)
    assert "arms[1].agent.options" in message and "max_reflections" in message


def test_suites_with_different_scripts_and_no_model_are_refused(tmp_path: Path) -> None:
    spec = write(tmp_path / "two.bench.yaml",
                 f"name: two\nsuites: [{SAMPLES / 'samplemath.yaml'}, {SAMPLES / 'impossible.yaml'}]\n")
    message = error_of(spec)
    assert "samplemath" in message and "impossible" in message and "`model:`" in message


def test_suites_sharing_one_script_need_no_model(tmp_path: Path) -> None:
    other = write(tmp_path / "more.yaml", f"name: more\nenvironment: {ROOT / 'environments' / 'samplemath.py'}\n"
                                          "script: samplemath\ntools: [calculator]\n"
                                          "tasks:\n  - {id: extra, prompt: 'What is 1 + 1?', answer: 2}\n")
    spec = load_spec(write(tmp_path / "same.bench.yaml",
                           f"name: same\nsuites: [{SAMPLES / 'samplemath.yaml'}, {other}]\n"))
    assert {arm.model.id for arm in spec.arms} == {"scripted/samplemath"}


@pytest.mark.parametrize("model", ["scripted/nonexistent", "{id: scripted/nonexistent}"])
def test_an_unknown_scripted_model_fails_at_load(tmp_path: Path, model: str) -> None:
    spec = write(tmp_path / "m.bench.yaml", f"name: m\nsuite: {SAMPLES / 'samplemath.yaml'}\nmodel: {model}\n")
    message = error_of(spec)
    assert "m.bench.yaml" in message and "model" in message and "nonexistent" in message


def test_an_unknown_scripted_model_in_an_arm_fails_at_load(tmp_path: Path) -> None:
    spec = write(tmp_path / "m.bench.yaml", f"name: m\nsuite: {SAMPLES / 'samplemath.yaml'}\n"
                                            "arms: [{name: a, model: scripted/missing_script}]\n")
    assert "arms[0].model" in error_of(spec)


@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf"])
def test_timeouts_must_be_finite(tmp_path: Path, value: str) -> None:
    spec = write(tmp_path / "t.bench.yaml",
                 f"name: t\nsuite: {SAMPLES / 'samplemath.yaml'}\ntimeouts: {{trial: {value}}}\n")
    message = error_of(spec)
    assert "timeouts.trial" in message and "null" in message


def test_model_numbers_must_be_finite(tmp_path: Path) -> None:
    spec = write(tmp_path / "t.bench.yaml",
                 f"name: t\nsuite: {SAMPLES / 'samplemath.yaml'}\nmodel: {{id: scripted/samplemath, "
                 "temperature: .nan}\n")
    assert "temperature" in error_of(spec)


def copy_suite(tmp_path: Path) -> Path:
    for name in ("slow.yaml", "chain_env.py", "slow.script.yaml"):
        shutil.copy(DATA / name, tmp_path / name)
    return write(tmp_path / "s.bench.yaml", "name: s\nsuite: slow.yaml\nmodel: scripted/slow.script.yaml\n")


@pytest.mark.parametrize(("name", "old", "new"), [
    ("slow.yaml", "Wait then say one.", "Wait then say one!"),  # a task prompt
    ("chain_env.py", "at most 5", "at most five"),  # the environment module
    ("slow.script.yaml", "<final_answer>one</final_answer>", "<final_answer>1</final_answer>"),  # the script
])
def test_editing_a_suite_its_module_or_its_script_changes_the_digest(tmp_path: Path, name: str, old: str,
                                                                       new: str) -> None:
    spec = copy_suite(tmp_path)
    before = load_spec(spec).digest
    assert load_spec(spec).digest == before  # stable when nothing changed
    path = tmp_path / name
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new), encoding="utf-8")
    assert load_spec(spec).digest != before
