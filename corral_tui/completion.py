"""`corral-tui completion bash|zsh|fish`: a shell completion script written from the parsers themselves.

Each subcommand keeps its own argparse parser inside its `xxx_main(argv)` (see cli.py); `parser_of`
reads that parser without running the command (argparse's parse step is intercepted and the parser
handed back), so a subcommand added later is completed with its flags without any list to update.
The scripts complete subcommand names, each command's flags, the choices of flags that have them,
and file names for flags that take a value. zsh uses the bash script through bashcompinit.

    eval "$(corral-tui completion bash)"                          # ~/.bashrc
    eval "$(corral-tui completion zsh)"                           # ~/.zshrc
    corral-tui completion fish > ~/.config/fish/completions/corral-tui.fish
"""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

SHELLS = ("bash", "zsh", "fish")
PROG = "corral-tui"


def _known_values() -> dict[str, tuple[str, ...]]:
    """Values of flags that are a known set without being argparse `choices` (their commands parse them
    leniently, e.g. any letter case): offered as choices are. `docs --level` takes the nine levels."""
    from corral_core.tools.verbosity import VALID_LEVELS

    return {"--level": VALID_LEVELS}


class _Caught(Exception):
    def __init__(self, parser: argparse.ArgumentParser) -> None:
        super().__init__("parser caught")
        self.parser = parser


def parser_of(command_main: Callable[[list[str]], Any]) -> argparse.ArgumentParser | None:
    """The argparse parser `command_main(argv)` builds, caught at its first parse, before it does anything
    else; None when it parses otherwise (then only its name is completed)."""
    original = argparse.ArgumentParser.parse_known_args

    def catch(self: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> Any:
        raise _Caught(self)

    argparse.ArgumentParser.parse_known_args = catch  # type: ignore[method-assign]
    try:
        command_main([])
    except _Caught as caught:
        return caught.parser
    except Exception:  # a command that does work before parsing: no flags to complete
        return None
    finally:
        argparse.ArgumentParser.parse_known_args = original  # type: ignore[method-assign]
    return None


@dataclass(frozen=True)
class _Option:
    options: tuple[str, ...]
    help: str
    takes_value: bool
    choices: tuple[str, ...]


def _options(parser: argparse.ArgumentParser | None) -> list[_Option]:
    if parser is None:
        return []
    found = []
    known = _known_values()
    for action in parser._actions:  # argparse's list of arguments (what shtab reads too)
        if not action.option_strings:
            continue
        choices = tuple(str(c) for c in action.choices) if action.choices else \
            next((known[o] for o in action.option_strings if o in known and action.nargs != 0), ())
        found.append(_Option(tuple(action.option_strings), (action.help or "").replace("%%", "%"),
                             action.nargs != 0, choices))
    return found


def _positional_choices(parser: argparse.ArgumentParser | None) -> tuple[str, ...]:
    if parser is None:
        return ()
    return tuple(str(c) for a in parser._actions if not a.option_strings and a.choices and
                 not isinstance(a, argparse._SubParsersAction) for c in a.choices)


def completion_script(shell: str, top: argparse.ArgumentParser,
                      commands: Mapping[str, tuple[str, argparse.ArgumentParser | None]]) -> str:
    """The completion script for `shell`; `commands` maps each subcommand to (one-line help, its parser)."""
    if shell == "fish":
        return _fish(top, commands)
    script = _bash(top, commands)
    if shell == "zsh":
        return "autoload -U +X compinit && compinit\nautoload -U +X bashcompinit && bashcompinit\n" + script
    return script


def _bash(top: argparse.ArgumentParser, commands: Mapping[str, tuple[str, argparse.ArgumentParser | None]]) -> str:
    names = " ".join(commands)
    cases: list[str] = []
    choice_cases: list[str] = []
    value_flags: set[str] = set()
    for command, parser in [("", top), *((name, p) for name, (_, p) in commands.items())]:
        options = _options(parser)
        words = [o for option in options for o in option.options] + list(_positional_choices(parser))
        if not command:
            words += list(commands)
        label = shlex.quote(command) if command else '""'
        cases.append(f"    {label}) words={shlex.quote(' '.join(words))} ;;")
        for option in options:
            if option.choices:
                for flag in option.options:
                    choice_cases.append(f"    {flag}) COMPREPLY=($(compgen -W {shlex.quote(' '.join(option.choices))} "
                                        '-- "$cur")); return ;;')
            elif option.takes_value:
                value_flags.update(option.options)
    return f"""# {PROG} completion for bash (generated by `{PROG} completion bash`)
_corral_tui() {{
  local cur="${{COMP_WORDS[COMP_CWORD]}}" prev="${{COMP_WORDS[COMP_CWORD-1]}}" command="" words="" w
  for w in "${{COMP_WORDS[@]:1:COMP_CWORD-1}}"; do
    case " {names} " in *" $w "*) command="$w"; break ;; esac
  done
  case "$prev" in
{chr(10).join(dict.fromkeys(choice_cases))}
    {'|'.join(sorted(value_flags)) or '--no-such-flag'}) COMPREPLY=($(compgen -f -- "$cur")); return ;;
  esac
  case "$command" in
{chr(10).join(cases)}
  esac
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}}
complete -o default -F _corral_tui {PROG}
"""


def _fish(top: argparse.ArgumentParser, commands: Mapping[str, tuple[str, argparse.ArgumentParser | None]]) -> str:
    lines = [f"# {PROG} completion for fish (generated by `{PROG} completion fish`)", f"complete -c {PROG} -f"]
    for name, (text, _) in commands.items():
        lines.append(f"complete -c {PROG} -n __fish_use_subcommand -a {name} -d {shlex.quote(text)}")
    for command, parser in [("", top), *((name, p) for name, (_, p) in commands.items())]:
        condition = "__fish_use_subcommand" if not command else f"'__fish_seen_subcommand_from {command}'"
        for option in _options(parser):
            parts = [f"complete -c {PROG} -n {condition}"]
            for flag in option.options:
                parts.append(f"-l {flag[2:]}" if flag.startswith("--") else f"-s {flag[1:]}")
            if option.choices:
                parts.append(f"-x -a {shlex.quote(' '.join(option.choices))}")
            elif option.takes_value:
                parts.append("-r -F")
            if option.help:
                parts.append(f"-d {shlex.quote(option.help.split('. ')[0][:80])}")
            lines.append(" ".join(parts))
        choices = _positional_choices(parser)
        if choices and command:
            lines.append(f"complete -c {PROG} -n {condition} -a {shlex.quote(' '.join(choices))}")
    return "\n".join(lines) + "\n"
