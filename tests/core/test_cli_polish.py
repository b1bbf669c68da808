"""Command-line polish (issue 12 item 7): `--version`, `serve --approve` in the spec's policy words,
and `export ... | head` ending quietly."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from corral_core.env.approval import APPROVAL_POLICIES

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "sample_tasks" / "quickstart.bench.yaml"
ENV = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_LOG": "ERROR"}


def cli(*args: str, cwd: Path, **kwargs) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "corral_tui.cli", *args], cwd=cwd, env=ENV, text=True,
                          timeout=120, **{"capture_output": True, **kwargs})


def test_version_prints_the_installed_version(tmp_path: Path) -> None:
    done = cli("--version", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"corral-tui {version('corral-tui')}"


@pytest.mark.parametrize("word", APPROVAL_POLICIES)
def test_serve_approve_takes_the_spec_and_form_policy_words(word: str) -> None:
    from corral_core.env.approval import policy_of
    from corral_core.server import PolicyGate, QueueGate
    from corral_core.server.serve import _gate, build_parser

    gate = _gate(build_parser().parse_args(["s.yaml", "--approve", word]))
    assert isinstance(gate, QueueGate if word == "ask" else PolicyGate)
    assert policy_of(gate) == word


def test_serve_approve_help_names_the_policy_words() -> None:
    from corral_core.server.serve import build_parser

    text = build_parser().format_help()
    assert all(word in text for word in APPROVAL_POLICIES)
    assert "auto-approve" not in text


def test_export_into_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    from corral_core.batch import open_store
    from corral_core.runner import BenchmarkRunner
    from corral_core.spec import load_spec

    db = tmp_path / "x.db"
    # the benchmark to export is made in this process (a batch subprocess would cost its litellm import);
    # its JSON export is far larger than a pipe buffer, so the export's first write meets the closed pipe
    engine, repository, writer = open_store(str(db))
    try:
        benchmark_id = BenchmarkRunner(load_spec(QUICKSTART), repository=repository, writer_sink=writer).run(
        ).benchmark_id
    finally:
        writer.close()
        engine.dispose()
    read_end, write_end = os.pipe()
    os.close(read_end)  # like `| head` that has already read its fill: every write fails with EPIPE
    try:
        proc = subprocess.run([sys.executable, "-m", "corral_tui.cli", "export", benchmark_id, "--db", str(db)],
                              cwd=tmp_path, env=ENV, stdout=write_end, stderr=subprocess.PIPE, text=True,
                              timeout=120)
    finally:
        os.close(write_end)
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr, proc.stderr
    assert proc.stderr == ""
    assert proc.returncode == 141


@pytest.mark.parametrize(("how", "expected"), [
    (("--model", "opnai/gpt-4o-mini"), "(--model): 'opnai' is not a provider litellm knows"),
    (("--model", "gpt-4o-mni"), "(--model): litellm cannot tell which provider serves 'gpt-4o-mni'"),
    ((), "(model): 'opnai' is not a provider litellm knows"),
])
def test_batch_refuses_a_model_litellm_cannot_route_before_the_run(tmp_path: Path, how: tuple[str, ...],
                                                                   expected: str, capsys: pytest.CaptureFixture[str],
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A misspelt provider prefix or model name (in the spec or --model) exits 2 in words before anything
    runs: no store is created, no trial errors one by one. (The command runs in this process: what is tested
    is its refusal, and a subprocess would pay litellm's import for it.)"""
    from corral_tui.cli import main

    spec = tmp_path / "typo.bench.yaml"
    model = "scripted/samplemath" if how else "opnai/gpt-4o-mini"
    spec.write_text(f"name: typo\nsuite: {ROOT / 'sample_tasks' / 'samplemath.yaml'}\nmodel: {model}\n",
                    encoding="utf-8")
    db = tmp_path / "x.db"
    monkeypatch.chdir(tmp_path)  # as the subprocess ran: a .env is looked for from here
    code = main(["--batch", str(spec), "--db", str(db), "--quiet", *how])
    stderr = capsys.readouterr().err
    assert code == 2, stderr
    assert f"{spec} {expected}" in stderr and "Fix: correct the model id" in stderr
    assert "Traceback" not in stderr and not db.exists()
