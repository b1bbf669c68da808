"""`corral-tui` command line: the workbench, `--batch`, and the subcommands (`serve`, `history`, `export`,
`samples`, `completion`, ...).

One argparse parser: the workbench's and `--batch`'s flags, and a subparser per subcommand. Each
subcommand keeps its own parser in its `xxx_main(argv)` (so it has its own `--help`); its subparser
hands it everything after its name. Defaults for every flag of every command come from `CORRAL_TUI_*`
variables and the user config (corral_tui/options.py); `completion` writes shell completion from the
same parsers (corral_tui/completion.py). To add a subcommand: its name in SUBCOMMANDS, a line in
SUBCOMMAND_HELP, a branch in `_subcommand`.

Only the workbench imports Textual; batch mode, the server and the store commands run on the
engine alone. User mistakes exit 2 with one readable paragraph, never a traceback.
"""

from __future__ import annotations

import argparse
import gc
import os
import re
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from corral_core.errors import UserError

if TYPE_CHECKING:
    from corral_tui.options import CliOptions, UserConfig

SUBCOMMANDS = ("serve", "history", "export", "docs", "plan", "compare", "samples", "kinds", "completion")
SUBCOMMAND_HELP = {  # one line each in `corral-tui --help`; the rest is in `corral-tui COMMAND --help`
    "serve": "serve a suite's environments (REST and MCP) to agents running elsewhere",
    "history": "list the recorded benchmarks, newest first",
    "export": "write a recorded benchmark's results: JSON (--with-transcripts), CSV or Inspect AI logs",
    "docs": "print what an agent receives of a suite's tool documentation, and its size per level",
    "plan": "the power of a spec's paired comparison for a true effect (tasks x trials)",
    "compare": "compare runs recorded as Inspect AI logs, paired by sample id and epoch",
    "samples": "show the packaged sample suites and specs, or copy them to edit (--copy DIR)",
    "kinds": "list the scorers, breakpoint kinds, tool sources, agents and exporters installed, plugins' too",
    "completion": "print a shell completion script: corral-tui completion bash|zsh|fish",
}


def _prepare_environment() -> None:
    # litellm must not fetch its cost map from the network (it tries at import without this), and stays quiet.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("LITELLM_LOG", "ERROR")
    load_env_file()
    from corral_core.safetext import install_log_redaction, register_environment

    register_environment()  # provider keys from the environment and .env: written out as *** everywhere
    install_log_redaction()


# What a `.env` may set: provider keys and provider settings. corral-tui's own settings, tracing and
# litellm's (a callback module it would import), Python's and the loader's are not for a file found in
# some parent folder: they come from the environment or config.toml only.
DOTENV_SETTING = re.compile(r"_(API_BASE|BASE_URL|API_VERSION|ORGANIZATION|ORG_ID|PROJECT|REGION|REGION_NAME|"
                            r"ENDPOINT|DEPLOYMENT)$")
DOTENV_NEVER = ("CORRAL_TUI_", "OTEL_", "LITELLM_", "PYTHON", "LD_", "DYLD_")
DOTENV_NEVER_NAMES = frozenset({"PATH", "HOME", "SHELL", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY",
                                "http_proxy", "https_proxy", "all_proxy", "no_proxy", "SSL_CERT_FILE",
                                "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"})


def dotenv_may_set(name: str) -> bool:
    """Whether a `.env` may set `name`: a provider key (`*_API_KEY`, `*TOKEN*`, ...) or provider setting."""
    from corral_core.safetext import SECRET_NAME

    if name.upper().startswith(DOTENV_NEVER) or name in DOTENV_NEVER_NAMES:
        return False
    return bool(SECRET_NAME.search(name) or DOTENV_SETTING.search(name.upper()))


def load_env_file() -> str | None:
    """Load provider keys and provider settings from `.env` (this directory or the nearest parent with
    one), as Inspect does; variables already set in the environment win. Any other name in it (a
    `CORRAL_TUI_*` setting, `OTEL_*`, `LITELLM_*`, `PATH`...) is ignored, and said on stderr. Returns the
    file loaded, if any."""
    from dotenv import dotenv_values, find_dotenv

    path = find_dotenv(usecwd=True)
    if not path:
        return None
    ignored = []
    for name, value in dotenv_values(path).items():
        if value is None or name in os.environ:
            continue
        if dotenv_may_set(name):
            os.environ[name] = value
        else:
            ignored.append(name)
    if ignored:
        print(f"corral-tui: {path}: ignored {', '.join(sorted(ignored))}: a .env holds provider keys and settings "
              "only; set the others in the environment or config.toml.", file=sys.stderr)
    return path


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, not {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, not {value}")
    return value


def _whole_number(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 0, not {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 0, not {value}")
    return value


def _temperature(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number such as 0 or 0.7, not {text!r}") from None
    if not 0 <= value <= 2:
        raise argparse.ArgumentTypeError(f"must be between 0 and 2, not {value:g}")
    return value


def _price(text: str) -> tuple[float, float]:
    parts = text.replace("/", ",").split(",")
    try:
        prices = tuple(float(p) for p in parts)
    except ValueError:
        prices = ()
    if len(prices) != 2 or min(prices) < 0:
        raise argparse.ArgumentTypeError(f"must be two prices >= 0 in USD per million tokens, prompt then "
                                         f"completion, such as 0.15,0.6; not {text!r}")
    return prices[0], prices[1]


def _model_arg(text: str) -> tuple[str, object]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"must be KEY=VALUE such as top_p=0.9, not {text!r}")
    from corral_core.llm.types import RESERVED_PARAMS

    if key.strip() in RESERVED_PARAMS:
        raise argparse.ArgumentTypeError(f"{key.strip()} is set by corral-tui itself; use its own flag or spec key "
                                         "(--temperature, --max-retries, --model-base-url, ...)")
    import yaml

    try:
        return key.strip(), yaml.safe_load(value) if value.strip() else value
    except yaml.YAMLError:
        return key.strip(), value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="corral-tui",
        description="Terminal workbench for benchmarking LLM agents on tool-using tasks. Without a command it "
                    "opens the workbench; with --batch SPEC it runs a benchmark headless.",
        epilog="Every flag also takes its default from CORRAL_TUI_<FLAG> or the user config file "
               "(docs/install-and-config.md).",
    )
    from corral_core import __version__

    parser.add_argument("--version", action="version", version=f"corral-tui {__version__}")
    parser.add_argument("--suite", action="append", metavar="FILE",
                        help="suite YAML to open (repeatable; default: the sample suites)")
    parser.add_argument("--db", metavar="URL", help="SQLite path or SQLAlchemy URL of the store")
    parser.add_argument("--server", metavar="URL", help="use a remote environment server instead of the embedded one")
    parser.add_argument("--token", metavar="T", help="bearer token for --server")
    parser.add_argument("--model", metavar="ID", help="litellm model id (default: the suite's scripted model)")
    parser.add_argument("--model-base-url", metavar="URL",
                        help="api_base for every arm's model (e.g. http://127.0.0.1:8000/v1 for a vLLM server)")
    parser.add_argument("--max-connections", type=_positive_int, metavar="N",
                        help="at most N requests in flight per model id (default: the spec's, else no cap)")
    parser.add_argument("--temperature", type=_temperature, metavar="T",
                        help="with --batch: every arm's model temperature (default: the spec's)")
    parser.add_argument("--max-retries", type=_whole_number, metavar="N",
                        help="with --batch: transient provider failures (429, timeout, 5xx) retried per LLM call "
                             "(default: the spec's, else 4)")
    parser.add_argument("--rpm", "--requests-per-minute", dest="requests_per_minute", type=_positive_int, metavar="N",
                        help="with --batch: at most N requests started per minute per model id (default: the spec's)")
    parser.add_argument("--tpm", "--tokens-per-minute", dest="tokens_per_minute", type=_positive_int, metavar="N",
                        help="with --batch: at most N tokens (prompt + completion) per minute per model id")
    parser.add_argument("--price", type=_price, metavar="IN,OUT",
                        help="with --batch: USD per million prompt and completion tokens, for models litellm has "
                             "no price for (e.g. 0.15,0.6)")
    parser.add_argument("-M", "--model-arg", dest="model_args", action="append", type=_model_arg, default=None,
                        metavar="KEY=VALUE",
                        help="with --batch: an extra litellm parameter for every arm's model, e.g. -M top_p=0.9 "
                             "-M seed=1 (the value is read as YAML; repeatable)")
    parser.add_argument("--batch", metavar="SPEC", help="run the benchmark spec headless and exit")
    parser.add_argument("--json", metavar="FILE", help="with --batch: write full results as JSON")
    parser.add_argument("--junit", metavar="FILE", help="with --batch: write a JUnit XML report")
    parser.add_argument("--fail-under", type=float, metavar="X",
                        help="with --batch: exit 1 when a headline score is below X")
    parser.add_argument("--summary-md", metavar="FILE",
                        help="with --batch: write a Markdown summary (arms, comparisons, errors), e.g. "
                             "$GITHUB_STEP_SUMMARY in GitHub Actions")
    parser.add_argument("--resume", metavar="ID", help="with --batch: resume benchmark ID")
    parser.add_argument("--retry-errors", nargs="?", const="", metavar="ID",
                        help="with --batch: run the errored trials of finished benchmark ID (default: the newest "
                             "of this spec) again, into the same benchmark; earlier attempts stay as history")
    parser.add_argument("--executor", metavar="E",
                        help="where trials run: local (threads, the default), processes (a Dask LocalCluster on "
                             "this machine's cores) or dask://HOST:PORT (an existing Dask scheduler); in the "
                             "workbench the workers use its environment server, so approvals are asked there")
    parser.add_argument("--workers", type=_positive_int, metavar="N",
                        help="with --executor processes: worker processes (default: one per core)")
    parser.add_argument("--quiet", action="store_true", help="with --batch: no progress on stderr")
    parser.add_argument("--no-confirm", action="store_true",
                        help="workbench: end a trial (k, ctrl+t in an approval) or stop a run (x) without asking")
    parser.add_argument("--litellm-callback", action="append", metavar="NAME",
                        help="report every LLM call to this litellm callback (repeatable): an integration litellm "
                             "documents (mlflow, langfuse, wandb, ...) or module:attribute of a CustomLogger")
    _add_subcommands(parser)
    return parser


def _add_subcommands(parser: argparse.ArgumentParser) -> None:
    """A subparser per subcommand that takes everything after the name as it is (prefix_chars no flag can
    start with): the subcommand's own parser reads it, `--help` included."""
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands",
                                     description="each has its own help: corral-tui COMMAND --help")
    for name in SUBCOMMANDS:
        commands.add_parser(name, help=SUBCOMMAND_HELP.get(name, f"see corral-tui {name} --help"), add_help=False,
                            prefix_chars="\0")


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:
        return _reader_left()


def _reader_left() -> int:
    """The reader of stdout went away (`corral-tui export ID | head`): end quietly, as `cat` would.

    stdout is pointed at /dev/null so the interpreter's last flush cannot complain either."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return 141  # 128 + SIGPIPE: what a shell reports for a program the pipe ended


def _main(argv: list[str] | None) -> int:
    _prepare_environment()
    argv = list(sys.argv[1:] if argv is None else argv)
    command, _ = build_parser().parse_known_args(argv)  # which command (argparse exits 2 on an unknown one)
    try:
        if command.command is not None:
            return _run_subcommand(command.command, argv)
        options = parse_options(argv)
    except UserError as exc:
        _say(exc)
        return exc.exit_code
    if options.batch:
        from corral_core.batch import batch_main

        return _guard(lambda: batch_main(options.batch_options()))
    batch_only = options.batch_only_flags()
    if batch_only:
        print(f"corral-tui: {', '.join(batch_only)} only work with --batch SPEC.yaml.", file=sys.stderr)
        return 2
    # No garbage collection until the workbench's warm-up has frozen the start-up heap (warm_up in
    # corral_tui/services/lifecycle.py) or its start failed: the start allocates what lives as long as
    # the workbench, and each collection walked it all again.
    gc.disable()
    from corral_core.tracing import check
    from corral_tui.app import run_app

    code = _guard(check)  # OTEL_* variables without the [otel] extra: said before the workbench opens
    if code == 0 and options.litellm_callback:
        from corral_core.llm.callbacks import use_callbacks

        code = _guard(lambda: use_callbacks(options.litellm_callback))
    if code:
        gc.enable()  # no workbench, so no warm-up to end the start's pause
        return code
    code = _guard(lambda: run_app(options))
    # The workbench has closed its server, workers and store by now; what remains is about a second
    # of interpreter finalisation that litellm's import leaves behind. Quitting should feel instant.
    sys.stdout.flush()
    sys.stderr.flush()
    from corral_core.tracing import flush

    flush()  # os._exit skips atexit, where the batched spans would otherwise be exported
    os._exit(code)


def parse_options(argv: list[str], *, environ: Mapping[str, str] | None = None,
                  config: UserConfig | None = None) -> CliOptions:
    """`corral-tui`'s own flags, typed: the command line, then CORRAL_TUI_* variables, then the user config
    file (corral_tui/options.py). A wrong default is a UserError naming where it came from."""
    from corral_tui.options import CliOptions, default_tokens, load_user_config

    config = load_user_config() if config is None else config
    parser = build_parser()
    defaults = default_tokens(parser, argv, environ=environ, config=config)
    return CliOptions.from_namespace(parser.parse_args([*defaults, *argv]), config.keymap)


def _run_subcommand(name: str, argv: list[str]) -> int:
    """`corral-tui NAME ARGS`: NAME's own flags get their defaults from the environment and the config file."""
    from corral_tui.completion import parser_of
    from corral_tui.options import default_tokens, load_user_config

    if argv[0] != name:
        raise UserError(f"flags before `{name}` are not its flags: {' '.join(argv[:argv.index(name)])}.",
                        where=name, fix=f"write them after it: corral-tui {name} ... (see corral-tui {name} --help).")
    rest = argv[1:]
    parser = parser_of(lambda args: _subcommand(name, args))
    if parser is not None:
        rest = [*default_tokens(parser, rest, command=name, config=load_user_config()), *rest]
    return _subcommand(name, rest)


def command_parsers() -> dict[str, tuple[str, argparse.ArgumentParser | None]]:
    """Each subcommand's one-line help and its own parser (for completion)."""
    from corral_tui.completion import parser_of

    return {name: (SUBCOMMAND_HELP.get(name, ""), parser_of(lambda args, n=name: _subcommand(n, args)))  # type: ignore[misc]
            for name in SUBCOMMANDS}


def completion_main(argv: list[str]) -> int:
    """`corral-tui completion bash|zsh|fish`: print the completion script (corral_tui/completion.py)."""
    from corral_tui.completion import SHELLS

    parser = argparse.ArgumentParser(prog="corral-tui completion",
                                     description="Print a shell completion script for corral-tui. bash: "
                                                 "eval \"$(corral-tui completion bash)\" in ~/.bashrc; zsh: the same "
                                                 "in ~/.zshrc; fish: corral-tui completion fish > "
                                                 "~/.config/fish/completions/corral-tui.fish")
    parser.add_argument("shell", choices=SHELLS)
    args = parser.parse_args(argv)
    print(completion_script_for(args.shell), end="")
    return 0


def completion_script_for(shell: str) -> str:
    from corral_tui.completion import completion_script

    return completion_script(shell, build_parser(), command_parsers())


def _subcommand(name: str, rest: list[str]) -> int:
    if name == "serve":
        from corral_core.server.serve import serve_main

        return serve_main(rest)
    if name == "docs":
        from corral_core.docsize import docs_main
        from corral_core.spec import load_spec

        return _guard(lambda: docs_main(rest, load_spec))
    if name == "plan":
        from corral_core.plan import plan_main

        return _guard(lambda: plan_main(rest))
    if name == "compare":
        if "--tui" in rest:  # the Compare screen on the logs (corral_core cannot open a screen)
            from corral_tui.inspect_compare import compare_tui_main

            return _guard(lambda: compare_tui_main(rest))
        from corral_core.interop.inspect_in import compare_main

        return _guard(lambda: compare_main(rest))
    if name == "samples":
        from corral_tui.samples_cmd import samples_main

        return _guard(lambda: samples_main(rest))
    if name == "completion":
        return completion_main(rest)
    if name == "kinds":
        from corral_core.kinds import kinds_main

        return _guard(lambda: kinds_main(rest))
    from corral_core.batch import export_main, history_main

    return _guard(lambda: history_main(rest) if name == "history" else export_main(rest))


def _say(error: Exception) -> None:
    """Print a user error; a --db URL's password or a key echoed in it shows as ***."""
    from corral_core.safetext import redact

    print(f"corral-tui: {redact(str(error))}", file=sys.stderr)


def _guard(run: Callable[[], int | None]) -> int:
    """Run a command; user mistakes become a message and exit code 2."""
    from corral_core.errors import UserError

    try:
        return int(run() or 0)
    except UserError as exc:
        _say(exc)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
