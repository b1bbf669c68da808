"""Batch and store commands from review: store problems and bad flags read as words (exit 2),
read commands create nothing, and agent options are checked before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from corral_tui.cli import main

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "sample_tasks" / "quickstart.bench.yaml"
SAMPLEMATH = ROOT / "sample_tasks" / "samplemath.yaml"


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_history_limit_is_bounded(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    for limit in ("100000000000000000000", "0", "10001"):
        code, _, err = run_cli(capsys, "history", "--db", str(tmp_path / "x.db"), "--limit", limit)
        assert code == 2 and "--limit" in err and "10000" in err


@pytest.mark.parametrize("command", [["history"], ["export", "bm_123"]])
def test_read_commands_on_a_missing_store_create_nothing(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                         command: list[str]) -> None:
    typo = tmp_path / "tpyo" / "runs.db"
    code, _, err = run_cli(capsys, *command, "--db", str(typo))
    assert code == 2 and "no store at" in err and str(typo) in err
    assert not (tmp_path / "tpyo").exists()


def test_history_of_a_default_store_that_does_not_exist_yet_creates_nothing(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    code, out, _ = run_cli(capsys, "history")
    assert code == 0 and "no benchmarks recorded yet" in out
    assert not (tmp_path / "data").exists()


@pytest.mark.parametrize("kind", ["directory", "text file"])
def test_batch_with_an_unusable_db_is_a_user_error(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                   kind: str) -> None:
    db = tmp_path / "store.db"
    if kind == "directory":
        db.mkdir()
    else:
        db.write_text("not a database\n" * 200, encoding="utf-8")
    code, _, err = run_cli(capsys, "--batch", str(QUICKSTART), "--db", str(db), "--quiet")
    assert code == 2 and "--db" in err and str(db) in err
    code, _, err = run_cli(capsys, "history", "--db", str(db))
    assert code == 2 and "--db" in err


def test_agent_options_the_agent_refuses_exit_2_before_anything_is_recorded(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    spec = tmp_path / "r.bench.yaml"
    spec.write_text(f"name: r\nsuite: {SAMPLEMATH}\nagent: {{type: reflection, options: {{max_reflections: 0}}}}\n",
                    encoding="utf-8")
    db = tmp_path / "runs.db"
    code, _, err = run_cli(capsys, "--batch", str(spec), "--db", str(db), "--quiet")
    assert code == 2 and "r.bench.yaml" in err and "max_reflections" in err
    assert not db.exists()


def test_an_unset_api_key_variable_exits_2_naming_it(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CORRAL_REVIEW_UNSET_KEY", raising=False)
    spec = tmp_path / "k.bench.yaml"
    spec.write_text(f"name: k\nsuite: {SAMPLEMATH}\n"
                    "model: {id: openai/gpt-4o-mini, api_key_env: CORRAL_REVIEW_UNSET_KEY}\n", encoding="utf-8")
    db = tmp_path / "runs.db"
    code, _, err = run_cli(capsys, "--batch", str(spec), "--db", str(db), "--quiet")
    assert code == 2 and "CORRAL_REVIEW_UNSET_KEY" in err and "k.bench.yaml" in err
    assert not db.exists()  # refused before the store was opened: nothing recorded
