"""Settings from three places, one precedence: the command line, then `CORRAL_TUI_*` environment variables,
then the user config file, then each flag's built-in default.

Every flag of every command can be given a default without typing it:

- an environment variable `CORRAL_TUI_<FLAG>` (`--max-connections` -> `CORRAL_TUI_MAX_CONNECTIONS`),
  for any command that has that flag (`CORRAL_TUI_DB` reaches the workbench, `--batch`, `history`,
  `export`...); a switch takes 1/true/yes/on or 0/false/no/off; a repeatable flag takes several values
  separated by spaces (shell quoting holds: `CORRAL_TUI_MODEL_ARG="top_p=0.9 seed=1"`);
- the TOML file `config.toml` in the user config folder (platformdirs; `CORRAL_TUI_CONFIG` names
  another): `[defaults]` holds flags of `corral-tui` itself by long name, and reaches every subcommand
  with a flag of that name too (`db` reaches `history`, `export`, `plan`); `[defaults.<command>]` a
  subcommand's (winning over `[defaults]` there), `[keymap]` the workbench's key bindings (binding id
  -> keys).

The defaults become flags placed before the ones typed, and are read by the same parser: a wrong value
is refused with the same words as on the command line, naming where it came from. The result is
typed: `CliOptions` (the workbench and `--batch`), never an argparse namespace read by `getattr`.
"""

from __future__ import annotations

import argparse
import os
import shlex
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from corral_core.errors import UserError

if TYPE_CHECKING:  # the engine's batch module is imported when a batch runs
    from corral_core.batch import BatchOptions

ENV_PREFIX = "CORRAL_TUI_"
CONFIG_ENV = "CORRAL_TUI_CONFIG"
CONFIG_NAME = "config.toml"
# a default of these flags that came from the environment or the config file is said on stderr: where a
# run's results go should never be a surprise
ANNOUNCED_FLAGS = {"db": "the store"}
TRUE_WORDS, FALSE_WORDS = {"1", "true", "yes", "on"}, {"0", "false", "no", "off", ""}
CONFIG_SECTIONS = ("defaults", "keymap")
# [defaults] flags a subcommand with a flag of the same name does not take from there: output files (a
# `json` for --batch's results would have `compare` overwrite them); [defaults.<command>] sets them
NOT_SHARED = frozenset({"json"})


def user_config_path() -> Path:
    """The user config file: $CORRAL_TUI_CONFIG, else config.toml in the platform's user config folder."""
    named = os.environ.get(CONFIG_ENV)
    if named:
        return Path(named).expanduser()
    import platformdirs

    return Path(platformdirs.user_config_dir("corral-tui", appauthor=False)) / CONFIG_NAME


@dataclass(frozen=True)
class UserConfig:
    """The user config file, read: flag defaults per command ("" is `corral-tui` itself) and the keymap."""

    path: Path | None = None
    defaults: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    keymap: Mapping[str, str] = field(default_factory=dict)


def load_user_config(path: Path | None = None) -> UserConfig:
    """Read the user config (a missing file is an empty config); a malformed one is a UserError naming it."""
    path = path or user_config_path()
    if not path.is_file():
        if os.environ.get(CONFIG_ENV):
            raise UserError(f"the config file {str(path)!r} named by {CONFIG_ENV} does not exist.", where=CONFIG_ENV,
                            fix="create it, or unset the variable to use the default location.")
        return UserConfig()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"cannot read the config file: {exc}.", file=str(path)) from None
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"the config file is not valid TOML: {exc}.", file=str(path),
                        fix="see docs/install-and-config.md for its layout.") from None
    unknown = sorted(set(data) - set(CONFIG_SECTIONS))
    if unknown:
        raise UserError(f"unknown section [{unknown[0]}] in the config file.", file=str(path),
                        fix="the sections are [defaults], [defaults.<command>] and [keymap].")
    defaults_section = _table(data.get("defaults", {}), "[defaults]", path)
    defaults: dict[str, dict[str, Any]] = {"": {}}
    for key, value in defaults_section.items():
        if isinstance(value, dict):
            defaults[key] = dict(value)
        else:
            defaults[""][key] = value
    keymap = _table(data.get("keymap", {}), "[keymap]", path)
    bad = next((k for k, v in keymap.items() if not isinstance(v, str)), None)
    if bad is not None:
        raise UserError(f"[keymap] {bad} must be keys as text, such as \"n\" or \"ctrl+n,f8\".", file=str(path))
    return UserConfig(path, defaults, dict(keymap))


def _table(value: Any, name: str, path: Path) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise UserError(f"{name} must be a table.", file=str(path),
                        fix=f"write it as a section: {name}, then `key = value` lines.")
    return dict(value)


# --------------------------------------------------------------------------------------- defaults
@dataclass(frozen=True)
class _Flag:
    name: str  # the long option without dashes, e.g. "max-connections"
    options: tuple[str, ...]
    takes_value: bool
    repeatable: bool
    action: argparse.Action


def _flags(parser: argparse.ArgumentParser) -> list[_Flag]:
    """The parser's optional flags with a long name (argparse keeps them in `_actions`, as shtab reads them)."""
    flags = []
    for action in parser._actions:
        longs = [o for o in action.option_strings if o.startswith("--")]
        if not longs or isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
            continue
        flags.append(_Flag(longs[0][2:], tuple(action.option_strings), action.nargs != 0,
                           isinstance(action, (argparse._AppendAction, argparse._ExtendAction)), action))
    return flags


def _given(flag: _Flag, argv: Sequence[str]) -> bool:
    for token in argv:
        if token == "--":
            return False
        for option in flag.options:
            if token == option or (option.startswith("--") and token.startswith(option + "=")) or \
                    (len(option) == 2 and token.startswith(option) and not token.startswith("--")):
                return True
    return False


def default_tokens(parser: argparse.ArgumentParser, argv: Sequence[str], *, command: str = "",
                   environ: Mapping[str, str] | None = None, config: UserConfig | None = None) -> list[str]:
    """Flags to put before `argv`: for each flag of `parser` not typed in `argv`, the environment's value
    (CORRAL_TUI_<FLAG>) or else the config file's: [defaults.<command>], else [defaults], which holds
    `corral-tui`'s own flags and reaches every subcommand that has a flag of the same name (`db` reaches
    `history`, `export` and `plan`; `model` reaches `docs`), as the environment's variables do, output
    files (NOT_SHARED) aside."""
    environ = os.environ if environ is None else environ
    section = dict((config.defaults if config else {}).get(command, {}))
    shared = {k: v for k, v in (config.defaults if config else {}).get("", {}).items()
              if k.replace("_", "-") not in NOT_SHARED} if command else {}
    flags = _flags(parser)
    known = {f.name for f in flags} | {f.name.replace("-", "_") for f in flags}
    unknown = sorted(k for k in section if k not in known and not isinstance(section[k], dict))
    if unknown and config is not None:
        from corral_core.spec.checks import did_you_mean

        where = f"[defaults.{command}]" if command else "[defaults]"
        raise UserError(f"{where} {unknown[0]}: `corral-tui{' ' + command if command else ''}` has no flag "
                        f"--{unknown[0]}.{did_you_mean(unknown[0], sorted(f.name for f in flags))}",
                        file=str(config.path), fix=f"use one of: {', '.join(sorted(f.name for f in flags))}.")
    tokens: list[str] = []
    for flag in flags:
        if _given(flag, argv):
            continue
        variable = ENV_PREFIX + flag.name.upper().replace("-", "_")
        if variable in environ:
            tokens += _checked(flag, _from_env(flag, variable, environ[variable]), f"{variable}={environ[variable]!r}",
                               variable)
            _announce(flag, environ[variable], variable)
            continue
        value, table = section.get(flag.name, section.get(flag.name.replace("-", "_"))), command
        if value is None:  # [defaults] reaches every command with the flag, as CORRAL_TUI_<FLAG> does
            value, table = shared.get(flag.name, shared.get(flag.name.replace("-", "_"))), ""
        if value is not None:
            where = f"[defaults{'.' + table if table else ''}] {flag.name}"
            tokens += _checked(flag, _from_file(flag, value, table, config), f"{where} = {value!r}",
                               str(config.path) if config and config.path else where)
            _announce(flag, value, f"{where} in {config.path}" if config and config.path else where)
    return tokens


def _announce(flag: _Flag, value: Any, source: str) -> None:
    if flag.name in ANNOUNCED_FLAGS:
        import sys

        from corral_core.safetext import redact

        print(f"corral-tui: {ANNOUNCED_FLAGS[flag.name]} is {redact(str(value))} (from {source}).", file=sys.stderr)


def _checked(flag: _Flag, tokens: list[str], source: str, where: str) -> list[str]:
    """The tokens, once each value passed the flag's own type and choices: a wrong default is refused
    naming where it came from, before the command's parser sees it."""
    for token in tokens:
        if "=" not in token:
            continue
        text = token.split("=", 1)[1]
        action = flag.action
        try:
            value = action.type(text) if callable(action.type) else text
        except (argparse.ArgumentTypeError, TypeError, ValueError) as exc:
            raise UserError(f"{source}: --{flag.name} {exc or 'is not a valid value'}.", where=where,
                            fix="correct or unset it (the command line wins over the environment and the file).") \
                from None
        if action.choices is not None and value not in action.choices:
            raise UserError(f"{source}: --{flag.name} must be one of {', '.join(map(str, action.choices))}.",
                            where=where, fix="correct or unset it.")
    return tokens


def _from_env(flag: _Flag, variable: str, text: str) -> list[str]:
    option = "--" + flag.name
    if not flag.takes_value:
        word = text.strip().lower()
        if word not in TRUE_WORDS | FALSE_WORDS:
            raise UserError(f"{variable}={text!r} is not a switch value.", where=variable,
                            fix="use 1, true, yes or on (or 0, false, no, off).")
        return [option] if word in TRUE_WORDS else []
    if flag.repeatable:
        try:
            values = shlex.split(text)
        except ValueError as exc:  # an unclosed quote
            raise UserError(f"{variable}={text!r}: {exc}.", where=variable,
                            fix="close the quote, or quote the whole value: "
                                f"{variable}=\"top_p=0.9 seed=1\".") from None
        return [f"{option}={value}" for value in values]
    return [f"{option}={text}"]


def _from_file(flag: _Flag, value: Any, command: str, config: UserConfig | None) -> list[str]:
    option = "--" + flag.name
    if not flag.takes_value:
        if not isinstance(value, bool):
            raise UserError(f"[defaults{'.' + command if command else ''}] {flag.name} must be true or false.",
                            file=str(config.path if config else ""))
        return [option] if value else []
    values = value if isinstance(value, list) and flag.repeatable else [value]
    return [f"{option}={_text(v)}" for v in values]


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, dict)):
        import json

        return json.dumps(value)
    return str(value)


# ------------------------------------------------------------------------------------ typed options
@dataclass(frozen=True)
class CliOptions:
    """`corral-tui`'s own flags (the workbench and `--batch`), typed, with the keymap of the user config."""

    suite: tuple[str, ...] = ()
    db: str | None = None
    server: str | None = None
    token: str | None = None
    model: str | None = None
    model_base_url: str | None = None
    max_connections: int | None = None
    temperature: float | None = None
    max_retries: int | None = None
    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None
    price: tuple[float, float] | None = None
    model_args: tuple[tuple[str, Any], ...] = ()
    batch: str | None = None
    json: str | None = None
    junit: str | None = None
    summary_md: str | None = None
    fail_under: float | None = None
    resume: str | None = None
    retry_errors: str | None = None
    executor: str | None = None
    workers: int | None = None
    quiet: bool = False
    litellm_callback: tuple[str, ...] = ()  # --litellm-callback: litellm callbacks for every LLM call
    no_confirm: bool = False  # --no-confirm: the workbench ends a trial or stops a run without asking
    keymap: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_namespace(cls, args: argparse.Namespace, keymap: Mapping[str, str] | None = None) -> CliOptions:
        """Every flag of the parser becomes its field: a flag added to the parser without its field here
        fails loudly (TypeError) at the first parse, in every test that runs the CLI."""
        values = dict(vars(args))
        values.pop("command", None)  # the subcommand's name: a subcommand never gets here
        values.update(suite=tuple(values.get("suite") or ()), model_args=tuple(values.get("model_args") or ()),
                      litellm_callback=tuple(values.get("litellm_callback") or ()), keymap=dict(keymap or {}))
        return cls(**values)

    def batch_only_flags(self) -> list[str]:
        """The flags given that only `--batch` reads (the workbench refuses them)."""
        return [flag for flag, value in (
            ("--json", self.json), ("--junit", self.junit), ("--summary-md", self.summary_md),
            ("--fail-under", self.fail_under is not None), ("--resume", self.resume),
            ("--retry-errors", self.retry_errors is not None), ("--temperature", self.temperature is not None),
            ("--max-retries", self.max_retries is not None), ("--rpm", self.requests_per_minute),
            ("--tpm", self.tokens_per_minute), ("--price", self.price), ("-M", self.model_args)) if value]

    def batch_options(self) -> BatchOptions:
        from corral_core.batch import BatchOptions

        assert self.batch is not None
        return BatchOptions(
            batch=self.batch, db=self.db, server=self.server, token=self.token, model=self.model,
            model_base_url=self.model_base_url, max_connections=self.max_connections, temperature=self.temperature,
            max_retries=self.max_retries, requests_per_minute=self.requests_per_minute,
            tokens_per_minute=self.tokens_per_minute, price=self.price, model_args=dict(self.model_args),
            json=self.json, junit=self.junit, summary_md=self.summary_md, fail_under=self.fail_under,
            resume=self.resume, retry_errors=self.retry_errors, executor=self.executor, workers=self.workers,
            quiet=self.quiet, litellm_callback=self.litellm_callback)
