"""The command line as one parser: subcommands with their own --help, defaults from the environment and
the config file for their flags too, shell completion written from the parsers, and a subcommand added
the old way (a name in SUBCOMMANDS, a branch in `_subcommand` calling its own `xxx_main(argv)`) getting
all of it."""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path

import pytest

from corral_tui import cli

BOUND = 60.0  # seconds a bash completion run may take (a failing test's bound only)


def run_main(argv: list[str]) -> int:
    try:
        return cli.main(argv)
    except SystemExit as exc:  # argparse's --help (0) and usage errors (2)
        return int(exc.code or 0)


def test_help_lists_every_subcommand_and_each_has_its_own(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_main(["--help"]) == 0
    text = capsys.readouterr().out
    for name in cli.SUBCOMMANDS:
        assert f"    {name} " in text, name
    assert run_main(["export", "--help"]) == 0
    export_help = capsys.readouterr().out
    assert export_help.startswith("usage: corral-tui export") and "--with-transcripts" in export_help
    assert run_main(["completion", "--help"]) == 0 and "bash,zsh,fish" in capsys.readouterr().out


def test_unknown_commands_and_misplaced_flags_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_main(["hist"]) == 2 and "invalid choice: 'hist'" in capsys.readouterr().err
    assert run_main(["--db", "x.db", "history"]) == 2
    assert "flags before `history` are not its flags: --db x.db" in capsys.readouterr().err


def test_a_subcommands_flags_take_defaults_from_the_environment_and_the_config_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    seen: list[argparse.Namespace] = []

    def demo_main(argv: list[str]) -> int:
        parser = argparse.ArgumentParser(prog="corral-tui demo", description="A subcommand added the old way.")
        parser.add_argument("--db", metavar="URL")
        parser.add_argument("--level", choices=("low", "high"), default="low")
        parser.add_argument("--loud", action="store_true")
        seen.append(parser.parse_args(argv))
        return 0

    original = cli._subcommand
    monkeypatch.setattr(cli, "SUBCOMMANDS", (*cli.SUBCOMMANDS, "demo"))
    monkeypatch.setattr(cli, "_subcommand", lambda name, rest: demo_main(rest) if name == "demo"
                        else original(name, rest))
    config = tmp_path / "config.toml"
    config.write_text("[defaults]\ndb = 'top.db'\n[defaults.demo]\nlevel = 'high'\nloud = true\n")
    monkeypatch.setenv("CORRAL_TUI_CONFIG", str(config))
    monkeypatch.setenv("CORRAL_TUI_DB", "env.db")
    assert run_main(["demo"]) == 0
    assert (seen[-1].db, seen[-1].level, seen[-1].loud) == ("env.db", "high", True)
    assert capsys.readouterr().err == "corral-tui: the store is env.db (from CORRAL_TUI_DB).\n"  # never a surprise
    assert run_main(["demo", "--db", "flag.db", "--level", "low"]) == 0
    assert (seen[-1].db, seen[-1].level) == ("flag.db", "low")
    assert capsys.readouterr().err == ""  # typed: nothing to say
    config.write_text("[defaults.demo]\ndb = 'file.db'\n")
    monkeypatch.delenv("CORRAL_TUI_DB")
    assert run_main(["demo"]) == 0 and seen[-1].db == "file.db"
    assert capsys.readouterr().err == f"corral-tui: the store is file.db (from [defaults.demo] db in {config}).\n"
    assert run_main(["demo", "--help"]) == 0 and "A subcommand added the old way." in capsys.readouterr().out
    script = cli.completion_script_for("fish")
    assert "'__fish_seen_subcommand_from demo' -l level -x -a 'low high'" in script
    config.write_text("[defaults.demo]\nlevl = 'high'\n")
    assert run_main(["demo"]) == 2 and "has no flag --levl. Did you mean `level`?" in capsys.readouterr().err


def complete(script: Path, *words: str) -> list[str]:
    """What bash offers for the last word of `corral-tui WORDS` with the generated script loaded."""
    line = " ".join(f"'{w}'" for w in ("corral-tui", *words))
    program = (f'source {script}; COMP_WORDS=({line}); COMP_CWORD={len(words)}; _corral_tui; '
               'printf "%s\\n" "${COMPREPLY[@]}"')
    done = subprocess.run(["bash", "--noprofile", "--norc", "-c", program], capture_output=True, text=True,
                          timeout=BOUND)
    assert done.returncode == 0, done.stderr
    return [w for w in done.stdout.splitlines() if w]


def test_bash_completion_offers_commands_flags_and_choices(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_main(["completion", "bash"]) == 0
    script = tmp_path / "corral-tui.bash"
    script.write_text(capsys.readouterr().out)
    assert complete(script, "hi") == ["history"]
    assert complete(script, "--ma") == ["--max-connections", "--max-retries"]
    assert set(complete(script, "export", "bm_1", "--")) >= {"--format", "--with-transcripts", "--db", "--output"}
    assert complete(script, "export", "bm_1", "--format", "")[:2] == ["json", "csv"]
    assert "--limit" in complete(script, "history", "--")
    assert complete(script, "completion", "") == ["-h", "--help", "bash", "zsh", "fish"]


def test_completion_offers_the_documentation_levels_and_the_sample_specs_and_suites(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from corral_core.tools.verbosity import VALID_LEVELS

    assert run_main(["completion", "bash"]) == 0
    script = tmp_path / "corral-tui.bash"
    script.write_text(capsys.readouterr().out)
    assert complete(script, "docs", "suite.yaml", "--level", "") == list(VALID_LEVELS)  # not file names
    assert len(VALID_LEVELS) == 9 and complete(script, "docs", "suite.yaml", "--level", "pro") == ["procedural"]
    assert complete(script, "samples", "--path", "quick") == ["quickstart", "quickstart.bench.yaml"]
    assert "samplemath.yaml" in complete(script, "samples", "--path", "sample")
    assert run_main(["completion", "fish"]) == 0
    fish = capsys.readouterr().out
    assert f"'__fish_seen_subcommand_from docs' -l level -x -a '{' '.join(VALID_LEVELS)}'" in fish


def test_zsh_and_fish_scripts(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_main(["completion", "zsh"]) == 0
    zsh = capsys.readouterr().out
    assert "bashcompinit" in zsh and "complete -o default -F _corral_tui corral-tui" in zsh
    assert run_main(["completion", "fish"]) == 0
    fish = capsys.readouterr().out
    assert "complete -c corral-tui -n __fish_use_subcommand -a samples" in fish
    assert "complete -c corral-tui -n '__fish_seen_subcommand_from history' -l limit -r -F" in fish
    assert "-n __fish_use_subcommand -l rpm -l requests-per-minute -r -F" in fish
