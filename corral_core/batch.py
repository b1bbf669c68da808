"""Headless runs for CI: `corral-tui --batch SPEC.yaml`, `history` and `export`. Never imports Textual.

Progress goes to stderr (a live rich display on a terminal, a line per tenth of the run
elsewhere); results go to stdout and to the --json / --junit files.

Exit codes: 0 ok; 1 a trial ended in error or timeout, or the headline score is below
--fail-under; 2 bad input (spec, suite, flags: one readable message) or a store that cannot be
read or refuses writes (the run stops; what it recorded is resumable), or a Dask scheduler lost mid-run
(the benchmark is `interrupted`, the trials it had not finished stay unrun; resume on a working
cluster); 130 interrupted by Ctrl-C,
143 stopped by SIGTERM (either way the run can be resumed with --resume ID: the first signal
cancels the running trials and starts no more, a second one aborts at once); 3 lost ownership:
another process took the benchmark over while this one was silent past its heartbeat (paused,
suspended), so this run stopped at once and wrote nothing more (status `lost_ownership`; the other
process finishes the benchmark).
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from corral_core import report
from corral_core.errors import StoreError, UserError
from corral_core.events import Event, EventKind, EventSink

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from corral_core.store import Repository, StoreWriter

EXIT_OK, EXIT_FAILED, EXIT_INTERRUPTED = 0, 1, 130  # 2 (bad input) is UserError.exit_code, see corral_tui.cli
EXIT_INFRASTRUCTURE = 2  # the run's Dask scheduler or cluster was lost: interrupted, resumable (like a bad store)
EXIT_LOST_OWNERSHIP = 3  # another process claimed the benchmark; this run stopped (BenchmarkResult.lost_ownership)
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
MAX_HISTORY_LIMIT = 10_000


class BatchProgress:
    """An event sink drawing per-arm progress (trials done / total, running mean score) on stderr,
    and a line for each breakpoint hit."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.live = console.is_terminal
        self._lock = threading.Lock()
        self._arms: dict[str, dict[str, float]] = {}
        self._tasks: dict[str, TaskID] = {}
        self._progress: Progress | None = None
        self._done = self._total = 0
        self._next_line = 0.1

    def emit(self, event: Event) -> None:
        kind = event.kind
        if kind is EventKind.TRIAL_FINISHED:
            self._finished(event)
        elif kind is EventKind.BENCHMARK_STARTED:
            self._started(event)
        elif kind is EventKind.BREAKPOINT_HIT:  # batch pauses nothing: it says so and the store keeps it
            data = event.data
            self.console.print(f"breakpoint {data.get('breakpoint')} hit in trial {event.trial_id} "
                               f"({event.task_id}): {data.get('reason')} (recorded, not paused)", highlight=False,
                               markup=False)

    def _started(self, event: Event) -> None:
        data = event.data
        with self._lock:
            for arm in data.get("arms", []):
                self._arms[arm["name"]] = {"done": arm["done"], "total": arm["total"], "score": arm["score_sum"]}
            self._total = int(data.get("total_trials") or 0)
            self._done = sum(int(a["done"]) for a in self._arms.values())
            note = " (resumed)" if data.get("resumed") else ""
            self.console.print(f"benchmark {event.benchmark_id}{note}: {data.get('pending_trials')} of "
                               f"{self._total} trials to run, {data.get('parallel')} at a time", highlight=False)
            if self.live:
                self._progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                          TextColumn("mean score {task.fields[mean]}"), TimeElapsedColumn(),
                                          console=self.console, transient=False)
                for name, arm in self._arms.items():
                    self._tasks[name] = self._progress.add_task(name, total=arm["total"], completed=int(arm["done"]),
                                                                mean=self._mean(arm))
                self._progress.start()

    @staticmethod
    def _mean(arm: dict[str, float]) -> str:
        return f"{arm['score'] / arm['done']:.3f}" if arm["done"] else "-"

    def _finished(self, event: Event) -> None:
        name = str(event.data.get("arm"))
        with self._lock:
            arm = self._arms.setdefault(name, {"done": 0, "total": 0, "score": 0.0})
            arm["done"] += 1
            arm["score"] += float(event.data.get("score") or 0.0)
            self._done += 1
            if self._progress is not None and name in self._tasks:
                self._progress.update(self._tasks[name], completed=arm["done"], mean=self._mean(arm))
            elif not self.live and self._total and self._done >= self._next_line * self._total:
                self._next_line = int(self._done * 10 / self._total) / 10 + 0.1
                arms = ", ".join(f"{n} {a['done']:.0f}/{a['total']:.0f} mean {self._mean(a)}"
                                 for n, a in self._arms.items())
                self.console.print(f"{self._done}/{self._total} trials: {arms}", highlight=False)

    def stop(self) -> None:
        with self._lock:
            if self._progress is not None:
                self._progress.stop()
                self._progress = None


class LiveRunNotice:
    """An event sink saying on stderr (even with --quiet) why a run did not resume a live one, and
    the run's other notices (e.g. a server without trial routes run one trial per task at a time)."""

    def __init__(self, console: Console) -> None:
        self.console = console

    def emit(self, event: Event) -> None:
        if event.kind is not EventKind.BENCHMARK_STARTED:
            return
        for notice in event.data.get("notices") or []:
            self.console.print(f"note: {notice}", highlight=False)
        for live in event.data.get("live_elsewhere") or []:
            self.console.print(f"benchmark {live['benchmark_id']} of this spec is running right now in process "
                               f"{live['pid']} on {live['host']}; starting a new benchmark "
                               f"{event.benchmark_id} instead of resuming it.", highlight=False)


def open_store(db: str | None) -> tuple[Engine, Repository, StoreWriter]:
    """(engine, Repository, started StoreWriter) for --db, or the default store (created if missing)."""
    from corral_core.store import StoreWriter

    engine, repository = open_repository(db)
    return engine, repository, StoreWriter(engine).start()


def open_repository(db: str | None, *, create: bool = True) -> tuple[Engine, Repository]:
    """(engine, Repository) for --db or the default store. create=False (read commands): a missing
    store is a UserError and nothing is created."""
    from corral_core.store import Repository, default_db_path, init_db, make_engine

    engine = make_engine(db if db else default_db_path(), create=create)
    try:
        init_db(engine)
    except BaseException:
        engine.dispose()
        raise
    return engine, Repository(engine)


@dataclass(frozen=True)
class BatchOptions:
    """What `corral-tui --batch` was asked to do (built by corral_tui.cli from flags, environment and file)."""

    batch: str  # the spec file
    db: str | None = None
    server: str | None = None
    token: str | None = None
    model: str | None = None  # every arm on this model id
    model_base_url: str | None = None
    max_connections: int | None = None
    temperature: float | None = None
    max_retries: int | None = None
    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None
    price: tuple[float, float] | None = None  # USD per million prompt / completion tokens
    model_args: dict[str, Any] = field(default_factory=dict)  # -M KEY=VALUE: litellm parameters
    json: str | None = None
    junit: str | None = None
    summary_md: str | None = None
    fail_under: float | None = None
    resume: str | None = None
    retry_errors: str | None = None  # "" : the newest benchmark of the spec; None: not asked
    executor: str | None = None
    workers: int | None = None
    quiet: bool = False
    litellm_callback: tuple[str, ...] = ()  # --litellm-callback: report every LLM call to these litellm callbacks

    def model_settings(self) -> dict[str, Any]:
        """The model keys the flags set on every arm's model (spec.with_overrides)."""
        settings: dict[str, Any] = {
            "api_base": self.model_base_url, "max_connections": self.max_connections,
            "temperature": self.temperature, "max_retries": self.max_retries,
            "requests_per_minute": self.requests_per_minute, "tokens_per_minute": self.tokens_per_minute,
            "price": None if self.price is None else {"input": self.price[0], "output": self.price[1]},
            "extra": dict(self.model_args) or None}
        return {key: value for key, value in settings.items() if value is not None}

    def command_flags(self) -> list[str]:
        """The flags that choose what runs (store, server, model settings), as a command line repeats them."""
        parts: list[str] = []
        for flag, value in (("--db", self.db), ("--server", self.server), ("--model", self.model),
                            ("--model-base-url", self.model_base_url), ("--max-connections", self.max_connections),
                            ("--temperature", self.temperature), ("--max-retries", self.max_retries),
                            ("--rpm", self.requests_per_minute), ("--tpm", self.tokens_per_minute),
                            ("--price", None if self.price is None else f"{self.price[0]:g},{self.price[1]:g}")):
            if value is not None and value != "":
                parts += [flag, str(value)]
        for key, value in self.model_args.items():
            parts += ["-M", f"{key}={value}"]
        for callback in self.litellm_callback or ():
            parts += ["--litellm-callback", callback]
        return parts


def batch_main(args: BatchOptions) -> int:
    """Run the spec in `args.batch` headless; see the module docstring for exit codes."""
    from corral_core.spec import load_spec
    from corral_core.spec.preflight import check_models

    spec = load_spec(args.batch)  # before the runner's imports (seconds): a bad spec is refused at once
    from corral_core.tracing import check

    check()  # OTEL_* variables without the [otel] extra: exit 2 now, not a failed trial later
    from corral_core.runner import BenchmarkRunner

    if args.model:
        spec = spec.with_overrides(model=args.model)
    settings = args.model_settings()
    if settings:
        spec = spec.with_overrides(**settings)
    callbacks = tuple(args.litellm_callback or ())  # argparse append: None when the flag is not given
    if callbacks:
        from dataclasses import replace

        from corral_core.llm.callbacks import check_callback

        for name in callbacks:
            check_callback(name)
        spec = replace(spec, litellm_callbacks=tuple(dict.fromkeys((*spec.litellm_callbacks, *callbacks))))
    check_models(spec, file=spec.source, where="--model" if args.model else "model",
                 fix="correct the model id (a litellm id such as openai/gpt-4o-mini); `scripted/<script>` runs "
                     "offline.")
    retry = args.retry_errors
    if retry is not None and args.resume:
        raise UserError("--resume and --retry-errors cannot be used together.", where="--retry-errors",
                        fix="--resume ID finishes an interrupted run; --retry-errors ID re-runs the errored "
                            "trials of a finished one. Pick one.")
    report.check_writable(args.json, "--json")
    report.check_writable(args.junit, "--junit")
    report.check_writable(args.summary_md, "--summary-md")
    err = Console(stderr=True)
    if not err.is_terminal:
        err = Console(stderr=True, soft_wrap=True, no_color=True, highlight=False)
    progress = None if args.quiet else BatchProgress(err)
    executor = args.executor or spec.executor
    hint = processes_hint(executor, spec.parallel, os.cpu_count() or 1)
    if hint and not args.quiet:
        err.print(hint, highlight=False, markup=False)
    engine, repository, writer = open_store(args.db)
    sinks: list[EventSink] = [LiveRunNotice(err), *([progress] if progress is not None else [])]
    runner = BenchmarkRunner(spec, repository=repository, writer_sink=writer, sink=sinks,
                             server_url=args.server, token=args.token,
                             executor=executor, workers=args.workers)
    cancel = threading.Event()
    stop = _StopSignals(cancel, err).install()
    try:
        resume_id = args.resume if retry is None else retry or _newest_of_spec(repository, spec)
        result = runner.run(resume_id=resume_id, cancel_event=cancel, retry_errors=retry is not None)
    except KeyboardInterrupt:  # a second signal: aborted at once, still resumable
        if runner.benchmark_id is None:
            raise
        err.print(f"aborted. Resume with: {_resume_command(args, runner.benchmark_id)}", highlight=False)
        return stop.exit_code
    except StoreError as exc:
        if exc.benchmark_id is None:
            raise
        resume = _resume_command(args, exc.benchmark_id)
        raise StoreError(exc.problem, where=exc.where, fix=f"{exc.fix}; then resume with: {resume}") from None
    finally:
        if progress is not None:
            progress.stop()
        writer.close()
        engine.dispose()  # closes the pooled connections; the result's trials below read with fresh ones
        stop.restore()
    document = result.to_dict(include_trials=False)
    if not result.lost_ownership:  # a lost run has no results of its own: the new owner gives them
        report.print_results(document, report.plain_console(sys.stdout))
    if args.json:  # the trials are streamed from the store into the file, never held whole
        report.write_json(args.json, {**document, "trials": report.JsonStream(result.json_rows())})
    if args.junit:
        report.write_text(args.junit, report.junit_xml(spec.name, list(result.json_rows()),
                                                         [a.name for a in spec.arms], spec.task_ids, document["arms"]))
    if args.summary_md:
        from corral_core.summary import summary_markdown

        report.write_text(args.summary_md, summary_markdown(document, result.json_rows()))
    return _exit_code(result, args.fail_under, _resume_command(args, result.benchmark_id), err, stop.exit_code)


PROCESSES_HINT_AT = 64  # trials in flight from which a local run is told about the processes executor


def processes_hint(executor: str, parallel: int, cores: int) -> str | None:
    """A note for a run with many trials in flight in one process on a machine with more cores."""
    if executor != "local" or parallel < PROCESSES_HINT_AT or cores < 2:
        return None
    return (f"note: {parallel} trials in flight on the local executor share this one process (one core of "
            f"Python work); --executor processes runs them in one worker process per core ({cores} here): "
            "see docs/scale.md.")


def _newest_of_spec(repository: Repository, spec: Any, pages: int = 20, size: int = 50) -> str:
    """The newest benchmark of this spec (same digest) in the store: what `--retry-errors` without an id retries."""
    for page_number in range(pages):
        page = repository.list_benchmarks(offset=page_number * size, limit=size)
        for info in page.items:
            if info.spec_digest == spec.digest:
                return str(info.id)
        if not page.has_more:
            break
    raise UserError(f"the store has no benchmark of the spec {spec.name!r} (digest {spec.digest[:12]}) to retry.",
                    file=spec.source, where="--retry-errors",
                    fix="run it first, or name the benchmark: --retry-errors BENCHMARK_ID (see `corral-tui history`).")


class _StopSignals:
    """Ctrl-C and SIGTERM: the first stops the run gracefully (resumable), a second aborts at once."""

    def __init__(self, cancel: threading.Event, err: Console) -> None:
        self.cancel = cancel
        self.err = err
        self.received: int | None = None
        self._previous: dict[int, Any] = {}

    @property
    def exit_code(self) -> int:
        """128 + the signal that stopped the run (130 for Ctrl-C, 143 for SIGTERM)."""
        return 128 + self.received if self.received is not None else EXIT_INTERRUPTED

    def install(self) -> _StopSignals:
        if threading.current_thread() is threading.main_thread():  # only it may set handlers
            self._previous = {sig: signal.signal(sig, self._handle) for sig in STOP_SIGNALS}
        return self

    def restore(self) -> None:
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)
        self._previous = {}

    def _handle(self, signum: int, frame: Any) -> None:
        if self.cancel.is_set():
            raise KeyboardInterrupt
        self.received = signum
        self.cancel.set()
        again = "press Ctrl-C again" if signum == signal.SIGINT else f"send {signal.Signals(signum).name} again"
        self.err.print(f"stopping: running trials are cancelled ({again} to abort at once)")


def _resume_command(args: BatchOptions, benchmark_id: str) -> str:
    """The command line that resumes this run: the same spec, store, server and model settings."""
    return shlex.join(["corral-tui", "--batch", args.batch, *args.command_flags(), "--resume", benchmark_id])


def _exit_code(result: Any, fail_under: float | None, resume_command: str, err: Console,
               interrupted_code: int = EXIT_INTERRUPTED) -> int:
    if result.lost_ownership:
        err.print(f"lost ownership of benchmark {result.benchmark_id}: another process took it over while this "
                  f"one was silent past its heartbeat, so this run stopped after {result.trials_run} trial(s) and "
                  "wrote nothing more; that process finishes the benchmark (see `corral-tui history`).",
                  highlight=False)
        return EXIT_LOST_OWNERSHIP
    if result.stopped_by:  # infrastructure lost mid-run: nothing it did not finish was recorded as a result
        err.print(f"interrupted: {result.stopped_by}; the trials it had not finished were left unrun. Once the "
                  f"cluster works again, resume with: {resume_command}", highlight=False)
        return EXIT_INFRASTRUCTURE
    if result.interrupted:
        err.print(f"interrupted. Resume with: {resume_command}", highlight=False)
        return interrupted_code
    code = EXIT_OK
    if result.errored:
        retry = resume_command.rsplit(" --resume ", 1)[0] + f" --retry-errors {result.benchmark_id}"
        err.print(f"{result.errored} trial(s) ended in error or timeout; see the table and the trial rows. "
                  f"Run the errored ones again with: {retry}", highlight=False)
        code = EXIT_FAILED
    if fail_under is not None and (result.headline_score is None or result.headline_score < fail_under):
        shown = "none" if result.headline_score is None else f"{result.headline_score:.3f}"
        err.print(f"headline score {shown} is below --fail-under {fail_under:g}.", highlight=False)
        code = EXIT_FAILED
    return code


def _with_transcripts(repository: Repository, rows: Any, page: int = 500) -> Any:
    """The export's trial rows as dicts, each with its messages and tool calls (read a page of trials at a time)."""
    from itertools import islice

    from corral_core.runner.results import ROW_KEYS

    trial_at = ROW_KEYS.index("trial_id")
    rows = iter(rows)
    while chunk := list(islice(rows, page)):
        transcripts = repository.transcripts([values[trial_at] for values in chunk])
        for values in chunk:
            yield {**dict(zip(ROW_KEYS, values, strict=True)), **transcripts[values[trial_at]]}


# --- history and export ------------------------------------------------------------------------------


def _store_parser(prog: str, description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--db", metavar="URL", help="SQLite path or SQLAlchemy URL (default: the user store)")
    return parser


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    try:
        return parser.parse_args(argv)
    except SystemExit as exc:  # argparse printed its message; --help exits 0
        if exc.code in (0, None):
            raise
        raise UserError("invalid arguments (see the usage above).", where=parser.prog,
                        fix=f"run `{parser.prog} --help`.") from None


def history_main(argv: list[str]) -> int:
    """`corral-tui history [--db URL] [--limit N]`: the newest benchmarks as a table."""
    parser = _store_parser("corral-tui history", "List recorded benchmarks, newest first.")
    parser.add_argument("--limit", type=int, default=20, metavar="N",
                        help=f"how many to show (default 20, at most {MAX_HISTORY_LIMIT})")
    args = _parse(parser, argv)
    if not 1 <= args.limit <= MAX_HISTORY_LIMIT:
        raise UserError(f"--limit must be between 1 and {MAX_HISTORY_LIMIT}, not {args.limit}.", where="--limit")
    console = report.plain_console(sys.stdout)
    if args.db is None and not _default_store_exists():
        console.print("no benchmarks recorded yet; run one with `corral-tui --batch SPEC.yaml`.")
        return EXIT_OK
    engine, repository = open_repository(args.db, create=False)
    try:
        page = repository.list_benchmarks(limit=args.limit)
    finally:
        engine.dispose()
    if not page.items:
        console.print("no benchmarks recorded yet; run one with `corral-tui --batch SPEC.yaml`.")
        return EXIT_OK
    console.print(report.history_table(page.items))
    if page.has_more:
        console.print(f"(more with --limit {min(args.limit * 2, MAX_HISTORY_LIMIT)})")
    return EXIT_OK


def _default_store_exists() -> bool:
    from corral_core.store import default_db_path

    return default_db_path().is_file()


def export_main(argv: list[str]) -> int:
    """`corral-tui export ID --format json|csv [--db URL] [--output FILE] [--with-transcripts]`."""
    from corral_core.runner.results import ROW_KEYS, stored_trial_values

    parser = _store_parser("corral-tui export", "Write a recorded benchmark's results as JSON, its trials as CSV, "
                                                "or one Inspect AI log per arm (--format inspect).")
    parser.add_argument("benchmark_id", metavar="BENCHMARK_ID")
    parser.add_argument("--format", choices=("json", "csv", "inspect"), default="json")
    parser.add_argument("--output", "-o", metavar="FILE", default=None,
                        help="file to write (default: stdout); with --format inspect, a folder (default: inspect-logs)")
    parser.add_argument("--with-transcripts", action="store_true",
                        help="JSON only: each trial also carries its messages and tool calls (what the agent and "
                             "the model said, the tools' arguments and results)")
    args = _parse(parser, argv)
    if args.with_transcripts and args.format != "json":
        raise UserError("--with-transcripts needs --format json.", where="--with-transcripts",
                        fix="CSV and Inspect logs have their own shape; export JSON for the transcripts.")
    if args.format == "inspect":
        args.output = args.output or "inspect-logs"
        if Path(args.output).exists() and not Path(args.output).is_dir():
            raise UserError(f"--output {args.output} is a file; Inspect logs go into a folder.", where="--output")
    else:
        args.output = args.output or "-"
        report.check_writable(args.output, "--output")
    engine, repository = open_repository(args.db, create=False)
    try:
        info = repository.get_benchmark(args.benchmark_id)
        if info is None:
            raise UserError(f"no benchmark {args.benchmark_id!r} in the store.", where="export",
                            fix="list benchmarks with `corral-tui history` (with the same --db).")
        if args.format == "inspect":
            from corral_core.interop.inspect_out import write_inspect_logs

            for path in write_inspect_logs(repository, info, Path(args.output)):
                print(path)
            return EXIT_OK
        threshold = float(((info.metrics or {}).get("spec") or {}).get("pass_threshold") or 0.0)
        if args.format == "csv":  # streamed: one page at a time
            report.write_csv_values(args.output, stored_trial_values(repository, args.benchmark_id, threshold,
                                                                     report.CSV_COLUMNS, iso_times=True))
            return EXIT_OK
        rows = stored_trial_values(repository, args.benchmark_id, threshold, ROW_KEYS, iso_times=True)
        document = dict(info.metrics or {})
        document.update(benchmark_id=info.id, name=info.spec_name, status=info.status,
                        spec_digest=info.spec_digest, headline_score=info.headline_score,
                        attempt_status=info.attempt_status, created_at=info.created_at.isoformat(),
                        finished_at=info.finished_at.isoformat() if info.finished_at else None,
                        spec_yaml=info.spec_yaml,
                        trials=report.JsonStream(_with_transcripts(repository, rows)) if args.with_transcripts
                        else report.JsonStream(rows, keys=ROW_KEYS))
        if not (info.metrics or {}).get("arms"):
            document["note"] = "the benchmark never finished, so it has no metrics; resume it to compute them."
        report.write_json(args.output, document)
        return EXIT_OK
    finally:
        engine.dispose()

