"""`corral-tui export ID --format inspect`: one Inspect AI log per arm, read back with inspect_ai itself."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest

from tests.inprocess import run_cli

ROOT = Path(__file__).resolve().parents[2]
SAMPLEMATH = ROOT / "sample_tasks" / "samplemath.yaml"


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, cwd=cwd)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict:
    folder = tmp_path_factory.mktemp("inspect-export")
    suite = folder / "samplemath.yaml"  # the sample suite, its add task carrying metadata
    suite.write_text(SAMPLEMATH.read_text().replace("environment: ../environments/",
                                                    f"environment: {ROOT / 'environments'}/")
                     .replace("    answer: 42\n", "    answer: 42\n    metadata: {topic: addition, level: 1}\n"))
    spec = folder / "two.bench.yaml"
    spec.write_text(f"name: two\nsuite: {suite}\ntasks: [add, power, compound]\nmodel: scripted/samplemath\n"
                    "agent: {type: react, max_iterations: 6}\n"
                    "arms:\n  - {name: react, verbosity: minimal}\n"
                    "  - {name: calling, verbosity: full, agent: {type: tool_calling}}\n"
                    "trials_per_task: 2\nparallel: 2\n", encoding="utf-8")
    db, out = folder / "x.db", folder / "out.json"
    run = cli("--batch", str(spec), "--db", str(db), "--json", str(out), "--quiet", cwd=folder)
    assert run.returncode == 0, run.stderr
    return {"folder": folder, "db": db, "document": json.loads(out.read_text())}


def test_export_writes_one_log_per_arm_that_inspect_reads_back(recorded: dict) -> None:
    from inspect_ai.log import read_eval_log

    document, folder = recorded["document"], recorded["folder"]
    bid = document["benchmark_id"]
    exported = cli("export", bid, "--format", "inspect", "--db", str(recorded["db"]), "--output", "logs", cwd=folder)
    assert exported.returncode == 0, exported.stderr
    files = [Path(line) for line in exported.stdout.splitlines()]
    assert len(files) == 2 and all((folder / f).is_file() and f.suffix == ".eval" for f in files)
    logs = {log.eval.task_args["arm"]: log for log in (read_eval_log(str(folder / f)) for f in files)}
    assert set(logs) == {"react", "calling"}
    assert logs["react"].eval.task_args["verbosity"] == "minimal"
    assert logs["calling"].eval.task_args["agent"] == "tool_calling"

    with sqlite3.connect(recorded["db"]) as conn:
        trials = conn.execute("select id, arm, task_id, trial_index, status, score, fault, assisted from trial "
                              "where benchmark_id=?", (bid,)).fetchall()
        messages = dict(conn.execute("select trial_id, count(*) from message group by trial_id").fetchall())
        calls = dict(conn.execute("select trial_id, count(*) from tool_call group by trial_id").fetchall())
        assistant_calls = dict(conn.execute(
            "select trial_id, sum(json_array_length(tool_calls_json)) from message where role='assistant' "
            "and tool_calls_json is not null group by trial_id").fetchall())
    assert len(trials) == 12
    for trial_id, arm, task_id, index, status, score, fault, assisted in trials:
        log = logs[arm]
        sample = next(s for s in log.samples if s.id == task_id and s.epoch == index + 1)
        corral = sample.scores["corral"]
        assert corral.value == (score or 0.0)
        assert corral.metadata["status"] == status and corral.metadata["fault"] == fault
        assert corral.metadata["assisted"] == bool(assisted)
        assert sample.metadata["trial_id"] == trial_id
        assert len(sample.messages) == messages[trial_id]
        assert len([e for e in sample.events if e.event == "tool"]) == calls.get(trial_id, 0)
        in_messages = sum(len(m.tool_calls or []) for m in sample.messages if m.role == "assistant")
        assert in_messages == (assistant_calls.get(trial_id) or 0)
    # the tool-calling arm's conversation carries its tool calls and their results
    sample = next(s for s in logs["calling"].samples if s.id == "add")
    call = next(m for m in sample.messages if m.role == "assistant" and m.tool_calls).tool_calls[0]
    assert call.function == "calculator" and call.arguments == {"operation": "+", "a": 17, "b": 25}
    assert any(m.role == "tool" and m.tool_call_id == call.id for m in sample.messages)
    assert sample.target == "42" and sample.input == "What is 17 + 25?"
    # results carry our per-arm estimates and their intervals
    for arm, log in logs.items():
        metrics = log.results.scores[0].metrics
        ours = document["arms"][arm]
        assert metrics["average_score"].value == pytest.approx(ours["average_score"]["value"])
        assert metrics["average_score"].metadata["ci"] == pytest.approx(ours["average_score"]["ci"])
        assert metrics["pass@1"].value == pytest.approx(ours["pass_k"]["1"]["pass_at_k"])
        assert log.results.total_samples == 6 and log.eval.config.epochs == 2


def test_samples_carry_a_model_event_per_llm_call_the_task_metadata_and_the_log_its_usage(recorded: dict) -> None:
    from inspect_ai.log import read_eval_log

    folder, bid = recorded["folder"], recorded["document"]["benchmark_id"]
    exported = cli("export", bid, "--format", "inspect", "--db", str(recorded["db"]), "--output", "events", cwd=folder)
    assert exported.returncode == 0, exported.stderr
    logs = [read_eval_log(str(folder / line), resolve_attachments=True) for line in exported.stdout.splitlines()]
    with sqlite3.connect(recorded["db"]) as conn:
        llm_calls = {(trial, turn): (role, n, total, content) for trial, turn, role, n, total, content in conn.execute(
            "select trial_id, turn, role, request_messages_n, total_tokens, content from llm_call").fetchall()}
        tokens = {arm: (prompt, completion) for arm, prompt, completion in conn.execute(
            "select arm, sum(prompt_tokens), sum(completion_tokens) from trial where benchmark_id=? group by arm",
            (bid,)).fetchall()}
    seen = 0
    for log in logs:
        usage = log.stats.model_usage["scripted/samplemath"]  # the viewer's TOKENS column
        assert (usage.input_tokens, usage.output_tokens) == tokens[log.eval.task_args["arm"]]
        for sample in log.samples:
            assert (sample.metadata.get("topic"), sample.metadata.get("level")) == (
                ("addition", 1) if sample.id == "add" else (None, None))
            model_events = [e for e in sample.events if e.event == "model"]
            mine = {k: v for k, v in llm_calls.items() if k[0] == sample.metadata["trial_id"]}
            assert len(model_events) == len(mine) > 0
            times = [e.timestamp for e in sample.events]
            assert times == sorted(times)  # the transcript in the order things happened
            for event in model_events:
                role, n, total, content = mine[(sample.metadata["trial_id"], event.metadata["turn"])]
                assert event.role == role == "agent" and event.output.usage.total_tokens == total
                assert event.output.completion == (content or "") and event.working_time is not None
                # what the call was sent: the conversation so far; what it answered comes next in it
                assert [m.text for m in event.input] == [m.text for m in sample.messages[:n]]
                assert sample.messages[n].role == "assistant" and sample.messages[n].text == (content or "")
                seen += 1
    assert seen == len(llm_calls)


def test_inspect_dataframes_read_the_exported_logs(recorded: dict) -> None:
    from inspect_ai.analysis import evals_df, samples_df

    document, folder = recorded["document"], recorded["folder"]
    out = folder / "frames"
    exported = cli("export", document["benchmark_id"], "--format", "inspect", "--db", str(recorded["db"]),
                   "--output", str(out), cwd=folder)
    assert exported.returncode == 0, exported.stderr
    files = sorted(str(p) for p in out.glob("*.eval"))
    evals = evals_df(files)
    assert sorted(zip(evals["task_arg_arm"], evals["task_arg_verbosity"], strict=True)) == [
        ("calling", "full"), ("react", "minimal")]
    samples = samples_df(files)
    assert len(samples) == 12 and samples["score_corral"].sum() == pytest.approx(
        sum(arm["average_score"]["value"] * 3 * 2 for arm in document["arms"].values()))


def test_export_inspect_needs_a_folder(recorded: dict) -> None:
    (recorded["folder"] / "a-file").write_text("x")
    bid = recorded["document"]["benchmark_id"]
    refused = cli("export", bid, "--format", "inspect", "--db", str(recorded["db"]), "-o", "a-file",
                  cwd=recorded["folder"])
    assert refused.returncode == 2 and "is a file; Inspect logs go into a folder" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_compare_on_the_exported_logs_reproduces_the_runs_analysis(recorded: dict) -> None:
    document, folder = recorded["document"], recorded["folder"]
    out = folder / "roundtrip"
    exported = cli("export", document["benchmark_id"], "--format", "inspect", "--db", str(recorded["db"]),
                   "--output", str(out), cwd=folder)
    assert exported.returncode == 0, exported.stderr
    react, calling = (next(out.glob(f"*-{arm}_*.eval")) for arm in ("react", "calling"))
    compared = cli("compare", str(react), str(calling), "--k", "1", "2", "--json", "compare.json", cwd=folder)
    assert compared.returncode == 0, compared.stderr
    again = json.loads((folder / "compare.json").read_text())
    assert list(again["arms"]) == ["react", "calling"] and again["unpaired"] == {}
    for arm in ("react", "calling"):
        for key in ("average_score", "success_rate"):
            assert again["arms"][arm][key] == pytest.approx(document["arms"][arm][key])
        assert again["arms"][arm]["pass_k"] == document["arms"][arm]["pass_k"]
    [theirs], [ours] = again["comparisons"], document["comparisons"]
    assert theirs["score"] == ours["score"] and theirs["verdict"] == ours["verdict"]
