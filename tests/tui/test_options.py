"""Defaults for every flag from CORRAL_TUI_* variables and the user's config.toml, one precedence
(command line > environment > file > built-in), typed options out, and readable refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from corral_core.errors import UserError
from corral_tui.cli import main, parse_options
from corral_tui.config import config_from_args
from corral_tui.options import UserConfig, load_user_config

SAMPLEMATH = Path(__file__).resolve().parents[2] / "sample_tasks" / "samplemath.yaml"


def write_config(tmp_path: Path, text: str) -> UserConfig:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return load_user_config(path)


def test_command_line_beats_environment_beats_file(tmp_path: Path) -> None:
    config = write_config(tmp_path, '[defaults]\ndb = "file.db"\nmodel = "openai/from-file"\nmax-connections = 3\n'
                                    'quiet = true\nsuite = ["a.yaml", "b.yaml"]\n')
    env = {"CORRAL_TUI_MODEL": "openai/from-env", "CORRAL_TUI_RPM": "30"}
    options = parse_options(["--db", "flag.db"], environ=env, config=config)
    assert (options.db, options.model, options.max_connections, options.requests_per_minute, options.quiet) == (
        "flag.db", "openai/from-env", 3, 30, True)
    assert options.suite == ("a.yaml", "b.yaml")
    assert parse_options(["--suite", "c.yaml"], environ=env, config=config).suite == ("c.yaml",)  # typed wins whole


def test_switches_and_repeatable_flags_from_the_environment() -> None:
    env = {"CORRAL_TUI_QUIET": "yes", "CORRAL_TUI_MODEL_ARG": "top_p=0.9 'stop=[a, b]'", "CORRAL_TUI_PRICE": "1,2"}
    options = parse_options([], environ=env, config=UserConfig())
    assert options.quiet and options.price == (1.0, 2.0)
    assert options.model_args == (("top_p", 0.9), ("stop", ["a", "b"]))
    assert not parse_options([], environ={"CORRAL_TUI_QUIET": "0"}, config=UserConfig()).quiet


def test_the_keymap_and_defaults_reach_the_workbench_config(tmp_path: Path) -> None:
    config = write_config(tmp_path, f'[defaults]\nsuite = "{SAMPLEMATH}"\nexecutor = "processes"\nworkers = 2\n'
                                    f'db = "{tmp_path / "w.db"}"\n[keymap]\n"workbench.step" = "n"\n')
    workbench = config_from_args(parse_options([], environ={}, config=config))
    assert workbench.keymap == {"workbench.step": "n"}
    assert (workbench.suite_paths, workbench.executor, workbench.workers, workbench.db_url) == (
        [SAMPLEMATH], "processes", 2, str(tmp_path / "w.db"))


@pytest.mark.parametrize(("text", "words"), [
    ("[defaults]\nmodle = 'x'\n", "has no flag --modle. Did you mean `model`?"),
    ("[default]\n", "unknown section [default]"),
    ("[defaults\n", "not valid TOML"),
    ("[keymap]\n'workbench.step' = 3\n", "must be keys as text"),
    ("[defaults]\nquiet = 'maybe'\n", "quiet must be true or false"),
])
def test_a_wrong_config_file_is_refused_naming_the_file(tmp_path: Path, text: str, words: str) -> None:
    with pytest.raises(UserError, match="config.toml") as info:
        parse_options([], environ={}, config=write_config(tmp_path, text))
    assert words in str(info.value)


def test_a_wrong_environment_default_exits_2_naming_its_source(monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("CORRAL_TUI_RPM", "0")
    assert main(["--batch", "x.bench.yaml"]) == 2
    err = capsys.readouterr().err
    assert "CORRAL_TUI_RPM='0': --rpm must be a whole number >= 1, not 0" in err and "Traceback" not in err
    monkeypatch.setenv("CORRAL_TUI_RPM", "5")
    monkeypatch.setenv("CORRAL_TUI_QUIET", "perhaps")
    assert main(["--batch", "x.bench.yaml"]) == 2
    assert "CORRAL_TUI_QUIET='perhaps' is not a switch value" in capsys.readouterr().err
    monkeypatch.delenv("CORRAL_TUI_QUIET")
    monkeypatch.setenv("CORRAL_TUI_FORMAT", "xml")  # a subcommand's flag with choices
    assert main(["export", "bm_1"]) == 2
    assert "CORRAL_TUI_FORMAT='xml': --format must be one of json, csv" in capsys.readouterr().err


def test_the_config_file_comes_from_the_user_config_folder_or_corral_tui_config(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    (tmp_path / "corral-tui").mkdir()
    (tmp_path / "corral-tui" / "config.toml").write_text("[defaults]\nmodel = 'openai/xdg'\n")
    assert parse_options([], environ={}).model == "openai/xdg"
    other = tmp_path / "other.toml"
    other.write_text("[defaults]\nmodel = 'openai/named'\n")
    monkeypatch.setenv("CORRAL_TUI_CONFIG", str(other))
    assert parse_options([], environ={}).model == "openai/named"
    monkeypatch.setenv("CORRAL_TUI_CONFIG", str(tmp_path / "missing.toml"))
    with pytest.raises(UserError, match="named by CORRAL_TUI_CONFIG does not exist"):
        parse_options([], environ={})


@pytest.mark.anyio
async def test_a_keymap_from_the_config_file_rebinds_the_workbench(tmp_path: Path) -> None:
    from corral_tui.screens.history import HistoryScreen
    from tests.tui.helpers import SIZE, make_app, wait_for, wait_ready

    config = write_config(tmp_path, '[keymap]\n"app.history" = "f6"\n')
    options = parse_options([], environ={}, config=config)
    app = make_app(tmp_path, keymap=dict(options.keymap))
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await pilot.press("f6")
        await wait_for(pilot, lambda: isinstance(app.screen, HistoryScreen), "the history screen on f6")


def test_an_unclosed_quote_in_an_environment_value_is_a_user_error(capsys: pytest.CaptureFixture[str],
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: `No closing quotation`, a traceback from shlex."""
    monkeypatch.setenv("CORRAL_TUI_MODEL_ARG", 'top_p="0.9')
    assert main(["--batch", "nothing.bench.yaml"]) == 2
    said = capsys.readouterr().err
    assert said.startswith("corral-tui: CORRAL_TUI_MODEL_ARG") and "No closing quotation" in said
    assert "Traceback" not in said and said.count("\n") == 1
