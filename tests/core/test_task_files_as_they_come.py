"""Task files as benchmarks ship them: .json holding JSON Lines or an array, nested field paths in
`fields:`, a prompt given as a message list, and a prompt error that names the value's actual type."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from corral_core.env.suite import load_suite
from corral_core.errors import UserError

ROWS = [{"id": "simple_0", "question": [[{"role": "user", "content": "Area of a triangle, base 10, height 5?"}]],
         "ground_truth": [{"area": 25}]},
        {"id": "simple_1", "question": [[{"role": "user", "content": "Factorial of 5?"}]],
         "ground_truth": [{"math.factorial": 120}]}]


def _suite(tmp_path: Path, tasks: str, fields: str = "") -> Path:
    suite = tmp_path / "suite.yaml"
    suite.write_text(f"name: t\ntools: []\ntasks:\n  source: {tasks}\n{fields}", encoding="utf-8")
    return suite


@pytest.mark.parametrize("layout", ["jsonl", "array"])
def test_json_file_with_nested_field_paths(tmp_path: Path, layout: str) -> None:
    text = "\n".join(json.dumps(r) for r in ROWS) if layout == "jsonl" else json.dumps(ROWS, indent=1)
    (tmp_path / "BFCL_like.json").write_text(text, encoding="utf-8")
    suite = load_suite(_suite(tmp_path, "BFCL_like.json",
                              "  fields: {prompt: 'question[0][0].content', answer: 'ground_truth[0]'}\n"))
    assert suite.task_ids == ["simple_0", "simple_1"]
    assert suite.tasks["simple_0"].prompt == "Area of a triangle, base 10, height 5?"
    assert suite.tasks["simple_1"].answer == {"math.factorial": 120}


def test_prompt_given_as_a_message_list(tmp_path: Path) -> None:
    (tmp_path / "rows.json").write_text(json.dumps(ROWS), encoding="utf-8")
    suite = load_suite(_suite(tmp_path, "rows.json", "  fields: {prompt: 'question[0]'}\n"))
    assert suite.tasks["simple_1"].prompt == "Factorial of 5?"


def test_prompt_of_the_wrong_type_names_its_type(tmp_path: Path) -> None:
    (tmp_path / "rows.json").write_text(json.dumps(ROWS), encoding="utf-8")
    with pytest.raises(UserError) as caught:  # the outer list holds lists, not messages
        load_suite(_suite(tmp_path, "rows.json", "  fields: {prompt: question}\n"))
    message = str(caught.value)
    assert "not a list of non-mappings" in message and "question[0][0].content" in message
    assert "quote a number" not in message
