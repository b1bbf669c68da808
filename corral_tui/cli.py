"""`corral-tui` command line: the workbench, `--batch`, `serve`, `history`, `export`, `docs`, `plan`
and `compare`.

Only the workbench imports Textual; batch mode, the server and the store commands run on the
engine alone. User mistakes exit 2 with one readable paragraph, never a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys

SUBCOMMANDS = ("serve", "history", "export", "docs", "plan", "compare", "samples")


def _prepare_environment() -> None:
    # litellm must not fetch its cost map from the network (it tries at import without this), and stays quiet.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("LITELLM_LOG", "ERROR")
    load_env_file()


def load_env_file() -> str | None:
    """Load provider keys and settings from `.env` (this directory or the nearest parent with one), as
    Inspect does; variables already set in the environment win. Returns the file loaded, if any."""
    from dotenv import find_dotenv, load_dotenv

    path = find_dotenv(usecwd=True)
    if not path:
        return None
    load_dotenv(path, override=False)
    return path


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, not {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, not {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="corral-tui",
        description="Terminal workbench for benchmarking LLM agents on tool-using tasks.",
        epilog="Subcommands: `corral-tui serve SUITE.yaml`, `corral-tui history`, "
        "`corral-tui export BENCHMARK_ID --format json|csv|inspect`, "
        "`corral-tui docs SUITE [--level L | --diff L1 L2]`, "
        "`corral-tui plan SPEC --effect E`, `corral-tui compare A.eval B.eval`.",
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
    parser.add_argument("--batch", metavar="SPEC", help="run the benchmark spec headless and exit")
    parser.add_argument("--json", metavar="FILE", help="with --batch: write full results as JSON")
    parser.add_argument("--junit", metavar="FILE", help="with --batch: write a JUnit XML report")
    parser.add_argument("--fail-under", type=float, metavar="X",
                        help="with --batch: exit 1 when a headline score is below X")
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
    return parser


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
    if argv and argv[0] in SUBCOMMANDS:
        return _subcommand(argv[0], argv[1:])
    args = build_parser().parse_args(argv)
    if args.batch:
        from corral_core.batch import batch_main

        return _guard(lambda: batch_main(args))
    batch_only = [flag for flag, value in (("--json", args.json), ("--junit", args.junit),
                                            ("--fail-under", args.fail_under), ("--resume", args.resume),
                                            ("--retry-errors", args.retry_errors is not None)) if value]
    if batch_only:
        print(f"corral-tui: {', '.join(batch_only)} only work with --batch SPEC.yaml.", file=sys.stderr)
        return 2
    from corral_tui.app import run_app

    if args.litellm_callback:
        from corral_core.llm.callbacks import use_callbacks

        code = _guard(lambda: use_callbacks(args.litellm_callback))
        if code:
            return code
    code = _guard(lambda: run_app(args))
    # The workbench has closed its server, workers and store by now; what remains is about a second
    # of interpreter finalisation that litellm's import leaves behind. Quitting should feel instant.
    sys.stdout.flush()
    sys.stderr.flush()
    from corral_core.tracing import flush

    flush()  # os._exit skips atexit, where the batched spans would otherwise be exported
    os._exit(code)


def _subcommand(name: str, rest: list[str]) -> int:
    if name == "serve":
        from corral_core.server.serve import serve_main

        return serve_main(rest)
    if name == "docs":
        from corral_core.docsize import docs_main

        return _guard(lambda: docs_main(rest))
    if name == "plan":
        from corral_core.plan import plan_main

        return _guard(lambda: plan_main(rest))
    if name == "compare":
        from corral_core.interop.inspect_in import compare_main

        return _guard(lambda: compare_main(rest))
    if name == "samples":
        from corral_tui.samples_cmd import samples_main

        return _guard(lambda: samples_main(rest))
    from corral_core.batch import export_main, history_main

    return _guard(lambda: history_main(rest) if name == "history" else export_main(rest))


def _guard(run) -> int:
    """Run a command; user mistakes become a message and exit code 2."""
    from corral_core.errors import UserError

    try:
        return int(run() or 0)
    except UserError as exc:
        print(f"corral-tui: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
