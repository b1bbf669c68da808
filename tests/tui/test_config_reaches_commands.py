"""One settings model for every command: `[defaults]` of the user's config.toml reaches each subcommand
that has a flag of the same name (the store of `history`, `export` and `plan` is the one `--batch`
recorded into; `docs` counts tokens for the configured model), `[defaults.<command>]` wins over it, and
an output file of `--batch` (`[defaults] json`) is not taken by `compare`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from corral_tui import cli

REPO = Path(__file__).resolve().parents[2]
SPEC = f"""name: configured
suite: {REPO / "sample_tasks" / "samplemath.yaml"}
agent: {{type: react, max_iterations: 4}}
model: scripted/samplemath
arms: {{verbosity: [minimal, brief]}}
trials_per_task: 1
"""


def run_main(argv: list[str]) -> int:
    try:
        return cli.main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


@pytest.fixture
def configured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, str]:
    """(the config file, the spec, the benchmark id) after `--batch` recorded into `[defaults] db`;
    the user's own store (under HOME) is somewhere else and stays empty."""
    for name in ("CORRAL_TUI_DB", "CORRAL_TUI_MODEL", "CORRAL_TUI_JSON", "XDG_DATA_HOME", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "config.toml"
    config.write_text(f'[defaults]\ndb = "{tmp_path / "configured.db"}"\nmodel = "openai/gpt-4o-mini"\n')
    monkeypatch.setenv("CORRAL_TUI_CONFIG", str(config))
    spec = tmp_path / "configured.bench.yaml"
    spec.write_text(SPEC)
    # the spec names its model; the configured one would replace it, so this run says its own
    assert run_main(["--batch", str(spec), "--model", "scripted/samplemath", "--quiet", "--json", "run.json"]) == 0
    assert (tmp_path / "configured.db").is_file()
    return config, spec, json.loads((tmp_path / "run.json").read_text())["benchmark_id"]


def test_history_and_export_read_the_store_of_defaults_db(configured: tuple[Path, Path, str],
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    _, _, benchmark = configured
    capsys.readouterr()
    assert run_main(["history"]) == 0
    assert benchmark in capsys.readouterr().out
    assert run_main(["export", benchmark, "--output", "out.json"]) == 0
    assert json.loads(Path("out.json").read_text())["benchmark_id"] == benchmark


def test_plan_reads_its_pilot_from_the_store_of_defaults_db(configured: tuple[Path, Path, str],
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    _, spec, benchmark = configured
    capsys.readouterr()
    # a pilot not in the store is refused (exit 2): found here, it is the configured store that was read
    assert run_main(["plan", str(spec), "--from", benchmark, "--effect", "0.2", "--simulations", "20"]) == 0
    assert capsys.readouterr().out.startswith("plan for configured:")
    assert run_main(["plan", str(spec), "--from", "bm_none", "--effect", "0.2"]) == 2
    assert "no benchmark 'bm_none' in the store" in capsys.readouterr().err


def test_docs_counts_tokens_for_the_model_of_defaults_and_its_own_table_wins(
        configured: tuple[Path, Path, str], capsys: pytest.CaptureFixture[str]) -> None:
    config, _, _ = configured
    suite = str(REPO / "sample_tasks" / "samplemath.yaml")
    capsys.readouterr()
    assert run_main(["docs", suite]) == 0
    assert "tokens by openai/gpt-4o-mini's tokenizer" in capsys.readouterr().out
    config.write_text(config.read_text() + '[defaults.docs]\nmodel = "gpt-4o"\n')
    assert run_main(["docs", suite]) == 0
    assert "tokens by gpt-4o's tokenizer" in capsys.readouterr().out


def test_compare_takes_its_own_json_default_not_the_batch_one(configured: tuple[Path, Path, str]) -> None:
    config, _, benchmark = configured
    assert run_main(["export", benchmark, "--format", "inspect", "--output", "logs"]) == 0
    logs = sorted(str(p) for p in Path("logs").glob("*.eval"))
    assert len(logs) == 2
    config.write_text(config.read_text() + '\njson = "batch-results.json"\n')
    assert run_main(["compare", *logs]) == 0
    assert not Path("batch-results.json").exists()  # --batch's output file is not compare's
    config.write_text(config.read_text() + '[defaults.compare]\njson = "compared.json"\n')
    assert run_main(["compare", *logs]) == 0
    assert Path("compared.json").is_file()
