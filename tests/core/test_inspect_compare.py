"""`corral-tui compare A.eval B.eval`: our paired task-level analysis over logs made by inspect_ai itself
(the mockllm model, offline)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from math import comb
from pathlib import Path

import pytest

from corral_core.metrics import sign_flip_test
from tests.inprocess import run_cli

pytest.importorskip("inspect_ai")

# question -> how the two runs answer it: True right, False wrong, "first" right only on its first call
BASELINE = {"q1": True, "q2": True, "q3": "first", "q4": False, "q5": False, "q6": True}
BETTER = {"q1": True, "q2": True, "q3": True, "q4": True, "q5": False}  # q6 missing: unpaired
EPOCHS = 2


def make_log(log_dir: Path, name: str, answers: dict[str, object]) -> Path:
    """Run a tiny Inspect task on mockllm whose answers follow `answers`; return its .eval log."""
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import match
    from inspect_ai.solver import generate

    calls: Counter[str] = Counter()

    def reply(messages, tools, tool_choice, config) -> ModelOutput:
        question = re.search(r"q\d+", messages[-1].text).group(0)
        calls[question] += 1
        right = answers[question] is True or (answers[question] == "first" and calls[question] == 1)
        output = ModelOutput.from_content("mockllm/model", "7" if right else "0")
        output.usage = ModelUsage(input_tokens=3, output_tokens=1, total_tokens=4)  # no tokenizer download
        return output

    samples = [Sample(id=q, input=f"{q}: what is 3 + 4?", target="7") for q in answers]
    task = Task(name=name, dataset=samples, solver=generate(), scorer=match(), epochs=EPOCHS)
    [log] = inspect_eval(task, model=get_model("mockllm/model", custom_outputs=reply), log_dir=str(log_dir),
                         display="none", max_samples=1)
    assert log.status == "success", log.error
    return Path(log.location)


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("inspect-logs")
    return make_log(folder, "baseline", BASELINE), make_log(folder, "better", BETTER)


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args)


def task_means(answers: dict[str, object], tasks: list[str]) -> list[float]:
    return [1.0 if answers[t] is True else 0.5 if answers[t] == "first" else 0.0 for t in tasks]


def test_compare_two_inspect_logs(logs: tuple[Path, Path], tmp_path: Path) -> None:
    out = tmp_path / "compare.json"
    run = cli("compare", str(logs[0]), str(logs[1]), "--json", str(out))
    assert run.returncode == 0, run.stderr
    document = json.loads(out.read_text())
    arms = list(document["arms"])
    assert arms == ["baseline/mockllm/model", "better/mockllm/model"]
    paired_tasks = ["q1", "q2", "q3", "q4", "q5"]
    a, b = task_means(BASELINE, paired_tasks), task_means(BETTER, paired_tasks)
    assert document["arms"][arms[0]]["average_score"]["value"] == pytest.approx(sum(a) / 5)
    assert document["arms"][arms[1]]["average_score"]["value"] == pytest.approx(sum(b) / 5)
    [comparison] = document["comparisons"]
    diffs = [y - x for x, y in zip(a, b, strict=True)]
    score = comparison["score"]
    assert comparison["n_tasks"] == 5 and score["mean_diff"] == pytest.approx(0.3)
    assert score["p_value"] == pytest.approx(sign_flip_test(diffs).p_value) and score["p_method"] == "exact"
    assert score["ci"] is not None and score["ci"][0] <= 0.3 <= score["ci"][1]
    # pass@k / pass^k over the paired tasks, from the per-task successes
    successes = {"q1": 2, "q2": 2, "q3": 1, "q4": 0, "q5": 0}
    for k in (1, 2):
        expected = sum(1 - comb(EPOCHS - c, k) / comb(EPOCHS, k) for c in successes.values()) / 5
        assert document["arms"][arms[0]]["pass_k"][str(k)]["pass_at_k"] == pytest.approx(expected)
        expected_hat = sum(comb(c, k) / comb(EPOCHS, k) for c in successes.values()) / 5
        assert document["arms"][arms[0]]["pass_k"][str(k)]["pass_hat_k"] == pytest.approx(expected_hat)
    # what could not be paired is named, and left out
    assert document["paired_samples"] == 10
    assert document["unpaired"] == {arms[0]: [{"id": "q6", "epoch": 1}, {"id": "q6", "epoch": 2}]}
    assert "not paired, only in baseline/mockllm/model: 2 sample(s): q6 (epoch 1), q6 (epoch 2)" in run.stdout
    assert "better/mockllm/model vs baseline/mockllm/model" in run.stdout


def test_compare_mistakes_exit_2_in_words(logs: tuple[Path, Path], tmp_path: Path) -> None:
    one = cli("compare", str(logs[0]))
    assert one.returncode == 2 and "needs at least two Inspect logs" in one.stderr
    (tmp_path / "junk.eval").write_text("not a zip")
    junk = cli("compare", str(logs[0]), str(tmp_path / "junk.eval"))
    assert junk.returncode == 2 and "not a readable Inspect log" in junk.stderr
    scorer = cli("compare", str(logs[0]), str(logs[1]), "--scorer", "nope")
    assert scorer.returncode == 2 and "no scorer 'nope' in the log" in scorer.stderr and "match" in scorer.stderr
    for run in (one, junk, scorer):
        assert "Traceback" not in run.stderr


def test_without_the_inspect_extra_the_message_says_what_to_install(monkeypatch: pytest.MonkeyPatch,
                                                                    tmp_path: Path) -> None:
    from corral_core.errors import UserError
    from corral_core.interop.inspect_in import compare_logs

    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)  # as if inspect_ai were not installed
    with pytest.raises(UserError, match=r"`compare` on Inspect logs needs the optional `inspect` extra.*"
                                        r"pip install 'corral-tui\[inspect\]'"):
        compare_logs([tmp_path / "a.eval", tmp_path / "b.eval"])


def test_reading_logs_inside_an_event_loop_leaves_asyncio_alone(logs: tuple[Path, Path]) -> None:
    """inspect_ai re-enters a running loop through nest_asyncio, which patches `asyncio.run` for the whole
    process: afterwards every `asyncio.run` keeps its loop open and its executor threads alive (the thread a
    Textual app's workers ran on outlived the app). Reading from inside a loop must not do that. In a child
    process, so a failure cannot leave this one patched."""
    code = (
        "import asyncio, sys\n"
        "from pathlib import Path\n"
        "from corral_core.interop.inspect_in import compare_logs\n"
        "async def main():\n"
        "    return compare_logs([Path(p) for p in sys.argv[1:]])\n"
        "comparison = asyncio.run(main())\n"
        "print(len(comparison.runs), asyncio.run.__module__)\n"
    )
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_LOG": "ERROR"}
    run = subprocess.run([sys.executable, "-c", code, *map(str, logs)], env=env, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["2", "asyncio.runners"]


def test_logs_of_one_task_that_differ_in_task_args_are_named_by_them(tmp_path: Path) -> None:
    """`inspect eval arith.py -T variant=baseline` and `-T variant=better`: one task, one model, the task
    argument is all that tells the runs apart, so it names them (not `arith/mockllm/model (file stem)`)."""
    from inspect_ai import Task, task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import match
    from inspect_ai.solver import generate

    @task
    def arith(variant: str = "baseline") -> Task:
        return Task(dataset=[Sample(id=q, input=f"{q}: what is 3 + 4?", target="7") for q in ("q1", "q2", "q3")],
                    solver=generate(), scorer=match(), metadata={"variant": variant})

    def reply(messages, tools, tool_choice, config) -> ModelOutput:
        output = ModelOutput.from_content("mockllm/model", "7")
        output.usage = ModelUsage(input_tokens=3, output_tokens=1, total_tokens=4)
        return output

    paths = []
    for variant in ("baseline", "better"):
        [log] = inspect_eval(arith(variant=variant), model=get_model("mockllm/model", custom_outputs=reply),
                             log_dir=str(tmp_path), display="none", max_samples=1)
        assert log.status == "success" and log.eval.task_args == {"variant": variant}
        paths.append(Path(log.location))
    from corral_core.interop.inspect_in import compare_logs

    compared = compare_logs(paths)
    assert [run.arm for run in compared.runs] == ["variant=baseline", "variant=better"]
    assert set(compared.analysis.arms) == {"variant=baseline", "variant=better"}


def test_a_long_arm_name_folds_and_every_header_is_printed_whole() -> None:
    """An Inspect log's arm can be long (`task/model (file stem)`): it folds onto more lines of its column,
    and the figures' headers keep their width (they were cut to `score [95% C…`)."""
    import io

    from rich.console import Console

    from corral_core import report

    long = "arith/mockllm/model (2026-12-01T21-49-47+00-00_arith_Yt3pXk2mQ9cZ8vWb7nL4dH)"
    document = {"name": "compare", "benchmark_id": "a vs b", "status": "inspect logs", "spec": {"k_values": [1, 2]},
                "arms": {long: {}, "arith/mockllm/model": {}}, "comparisons": []}
    out = io.StringIO()
    report.print_arms(document, Console(file=out, width=100, no_color=True))
    text = out.getvalue()
    for header in ("score [95% CI]", "success [95% CI]", "surrender [95% CI]", "errored (by fault)", "tokens"):
        assert header in text, text
    assert "…" not in text and "Yt3pXk2mQ9cZ8vWb7nL4dH" in text.replace("│", "").replace(" ", "").replace("\n", "")
