"""Results as files and text: JSON, JUnit XML, CSV, and the terminal tables batch mode prints.

No Textual here: batch mode and the export command use these; rich renders the tables.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import math
import operator
import os
import sys
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO
from xml.etree import ElementTree as ET

from rich.console import Console
from rich.table import Table
from rich.text import Text

from corral_core.domain import Fault, TrialStatus
from corral_core.errors import UserError
from corral_core.safetext import redact
from corral_core.trial_result import TrialResult, exported_columns

# The CSV export's header: every report row key (runner.results.ROW_KEYS) but CSV_LEAVES_OUT, in the order a
# person reads them, then each exported field TrialResult declares after these (`csv_columns`): a new column goes
# last, so older readers keep theirs (tests/core/test_trial_shapes.py).
EARLIER_CSV_COLUMNS = (
    "trial_id", "benchmark_id", "arm", "task_id", "trial_index", "episode_id", "agent", "model", "verbosity",
    "status", "score", "success", "answer", "explanation", "surrendered", "error", "fault", "prompt_tokens",
    "completion_tokens", "total_tokens", "cost", "duration", "tool_duration", "iterations", "assisted",
    "started_at", "finished_at", "llm_retries", "llm_retry_wait", "rate_limit_wait",
)
CSV_LEAVES_OUT = ("parent_trial_id", "fork_iteration")  # a fork's lineage: the JSON export carries it


def csv_columns(record: type = TrialResult) -> tuple[str, ...]:
    """EARLIER_CSV_COLUMNS, then the export's column of each exported field `record` declares that they lack."""
    return (*EARLIER_CSV_COLUMNS, *(c for c in exported_columns(record) if c not in EARLIER_CSV_COLUMNS))


CSV_COLUMNS = csv_columns()
NOT_MEASURED = frozenset({TrialStatus.SKIPPED, TrialStatus.CANCELLED, TrialStatus.RUNNING})


def check_writable(path: str | None, flag: str) -> None:
    """Fail before a long run, not after it, when an output file cannot be written."""
    if not path or path == "-":
        return
    folder = Path(path).expanduser().resolve().parent
    if not folder.is_dir():
        raise UserError(f"the folder {str(folder)!r} for {path!r} does not exist.", where=flag,
                        fix="create the folder first or write the file somewhere else.")


def write_text(path: str, text: str) -> None:
    text = redact(text)  # no secret we read is ever written out (corral_core.safetext)
    if path == "-":
        print(text)
        return
    try:
        Path(path).expanduser().write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UserError(f"cannot write {path!r}: {exc.strerror}.", fix="choose a writable path.") from None


def to_json(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False, default=str)


class JsonStream:
    """A list in a document that `write_json` writes item by item, never holding it whole. Its items
    are encoded as `to_json` would, except that dates and datetimes are written in ISO 8601 (as the
    export's rows always were). `flat`: every item is a dict of plain values, encoded faster. `keys`:
    every item is the values of such a dict, in the order of these keys (written as that dict)."""

    def __init__(self, items: Iterable[Any], *, flat: bool = False, keys: Sequence[str] | None = None) -> None:
        self.items = items
        self.flat = flat or keys is not None
        self.keys = tuple(keys) if keys is not None else None


def _iso(value: Any) -> Any:
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


def write_json(path: str, document: dict[str, Any]) -> None:
    """`write_text(path, to_json(document))`, the same bytes, with each `JsonStream` value written as its
    items come: a million trial rows take the memory of one. A file is written whole or not at all."""
    marker = f"\u0000stream-{uuid.uuid4().hex}-"
    streams: dict[str, JsonStream] = {}

    def mark(value: Any) -> Any:
        if isinstance(value, JsonStream):
            key = f"{marker}{len(streams)}"
            streams[key] = value
            return key
        if isinstance(value, dict):
            return {k: mark(v) for k, v in value.items()}
        return value

    text = to_json(mark(document))
    with _output(path) as out:
        for piece in _split_marks(text, streams):
            if isinstance(piece, str):
                out.write(piece)
            else:
                _write_items(out, *piece)
        if path == "-":
            out.write("\n")  # as print() in write_text


def _split_marks(text: str, streams: dict[str, JsonStream]) -> Iterator[str | tuple[JsonStream, str]]:
    """The document's text around each stream's mark, and (items, the mark's line indent) for each."""
    while streams:
        at, key = min((text.index(json.dumps(key)), key) for key in streams)
        yield text[:at]
        line_start = text.rfind("\n", 0, at) + 1
        yield streams.pop(key), " " * (len(text[line_start:at]) - len(text[line_start:at].lstrip(" ")))
        text = text[at + len(json.dumps(key)):]
    yield text


def _write_items(out: _Redacting, stream: JsonStream, indent: str) -> None:
    """A JSON list as json.dumps(indent=2) prints it at `indent`, one item at a time."""
    inner = indent + "  "
    if stream.keys is not None:
        _write_keyed_items(out, stream.items, stream.keys, indent)
        return
    flat = _flat_encoder(",\n" + inner + "  ")
    first = True
    for item in stream.items:
        out.write("[\n" + inner if first else ",\n" + inner)
        first = False
        if stream.flat and item:  # a dict of plain values: the C encoder, laid out as indent=2 would
            out.write("{\n" + inner + "  " + flat(item)[1:-1] + "\n" + inner + "}")
        else:
            text = json.dumps(item, indent=2, ensure_ascii=False, allow_nan=False, default=_iso)
            out.write(text.replace("\n", "\n" + inner))
    out.write("[]" if first else "\n" + indent + "]")


def _write_keyed_items(out: _Redacting, items: Iterable[Sequence[Any]], keys: Sequence[str], indent: str) -> None:
    """`_write_items` of dicts of plain values given as their values in `keys` order, without making the
    dicts: each item's values are encoded as one list by the C encoder, whose separator (a comma, a
    newline and the indent) is never inside an encoded value (strings escape newlines), so the text
    splits into the values, each then written after its key (a million trial rows in an export)."""
    inner = indent + "  "
    separator = ",\n" + inner + "  "
    encode = _flat_encoder(separator)
    named = [json.dumps(key, ensure_ascii=False) + ": " for key in keys]
    head, tail, join, add = "{\n" + inner + "  ", "\n" + inner + "}", separator.join, operator.add
    before = "[\n" + inner
    for values in items:
        parts = encode(values)[1:-1].split(separator)
        if len(parts) != len(named):
            raise ValueError(f"{len(parts)} values for {len(named)} keys")
        out.write(before + head + join(map(add, named, parts)) + tail)
        before = ",\n" + inner
    out.write("[]" if before.startswith("[") else "\n" + indent + "]")


def _flat_encoder(item_separator: str) -> Callable[[Any], str]:
    """json.dumps of a dict of plain values with these separators (ensure_ascii and allow_nan off, dates
    in ISO 8601): CPython's C encoder made once, not once per item as JSONEncoder.encode does (a million
    trial rows in an export)."""
    make = getattr(json.encoder, "c_make_encoder", None)
    strings = getattr(json.encoder, "c_encode_basestring", None)
    if make is None or strings is None:  # no C accelerator: the same text, slower
        return json.JSONEncoder(ensure_ascii=False, allow_nan=False, default=_iso,
                                separators=(item_separator, ": ")).encode
    encode = make({}, _iso, strings, None, ": ", item_separator, False, False, False)
    return lambda item: "".join(encode(item, 0))


# A spreadsheet reads a cell that begins with one of these as a formula (`=HYPERLINK(...)` in an agent's
# answer would run when the export is opened): OWASP's rule is to start such a text cell with a quote.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(value: Any) -> Any:
    """`value`, or a text cell that a spreadsheet would run as a formula with `'` put before it."""
    if type(value) is str and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def write_csv_values(path: str, rows: Iterable[Sequence[Any]], *, raw: bool = False) -> None:
    """`write_text(path, trials_csv(rows, raw=raw).rstrip("\\n"))`, the same bytes, of rows given as their
    CSV_COLUMNS values in order, dates already text (None is written empty, as `trials_csv` writes it):
    the csv module's C writer does every cell (a million rows in an export), a block of rows at a time.
    Text cells a spreadsheet would run as formulas are neutralised (`spreadsheet_safe`) unless `raw`."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    ended = ""  # the newline of the block before, written once another line follows it
    rows = iter(rows) if raw else ([spreadsheet_safe(value) for value in row] for row in rows)
    with _output(path) as out:
        while True:
            writer.writerows(itertools.islice(rows, 1000))
            if buffer.tell() == 0:
                break
            out.write(ended + buffer.getvalue()[:-1])
            ended = "\n"
            buffer.seek(0)
            buffer.truncate()
        if path == "-":
            out.write("\n")


class _Redacting:
    """A text stream whose every write has the registered secrets masked (corral_core.safetext.redact)."""

    def __init__(self, out: TextIO) -> None:
        self.out = out

    def write(self, text: str) -> int:
        return self.out.write(redact(text))

    def flush(self) -> None:
        self.out.flush()


@contextmanager
def _output(path: str) -> Iterator[_Redacting]:
    """stdout for "-"; else a temporary file beside `path`, renamed over it once complete."""
    if path == "-":
        yield _Redacting(sys.stdout)
        sys.stdout.flush()
        return
    target = Path(path).expanduser()
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    try:
        with partial.open("w", encoding="utf-8") as out:
            yield _Redacting(out)
        os.replace(partial, target)
    except OSError as exc:
        raise UserError(f"cannot write {path!r}: {exc.strerror}.", fix="choose a writable path.") from None
    finally:
        partial.unlink(missing_ok=True)


# --- JUnit ---------------------------------------------------------------------------------------

ERRORED = frozenset({TrialStatus.ERROR, TrialStatus.TIMEOUT})


def junit_xml(name: str, rows: Sequence[dict[str, Any]], arm_order: Sequence[str],
              task_order: Sequence[str] = (), arms: dict[str, Any] | None = None) -> str:
    """One <testsuite> per arm and one <testcase> per task of it (the task is the unit of analysis).

    A testcase is an <error> when any of its trials errored or timed out (whose fault is named: that
    measured the infrastructure, not the agent); otherwise it passes only when at least one trial
    succeeded without a person's help, and is a <failure> when none did; it is <skipped> when none of
    its trials was measured. system-out lists every trial. `arms` (the results document's per-arm
    metrics) adds each suite's score and success rate with their intervals as properties and the
    task's success interval to failure messages. The <testsuites> root carries name, tests,
    failures, errors and time (the JUnit schema has no `skipped` there).
    """
    by_arm: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        by_arm[row["arm"]][row["task_id"]].append(row)
    root = ET.Element("testsuites", name=name)
    totals = {"tests": 0, "failures": 0, "errors": 0}
    root_time = 0.0
    arm_names = [a for a in arm_order if a in by_arm] + sorted(a for a in by_arm if a not in arm_order)
    rank = {task: i for i, task in enumerate(task_order)}
    for arm in arm_names:
        metrics = (arms or {}).get(arm) or {}
        suite = ET.SubElement(root, "testsuite", name=f"{name}.{arm}")
        _junit_properties(suite, metrics)
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        suite_time = 0.0
        for task_id, trials in sorted(by_arm[arm].items(), key=lambda item: (rank.get(item[0], len(rank)), item[0])):
            trials.sort(key=lambda r: r.get("trial_index") or 0)
            elapsed = math.fsum(float(r.get("duration") or 0.0) for r in trials)
            suite_time += elapsed
            case = ET.SubElement(suite, "testcase", classname=f"{name}.{arm}", name=task_id, time=f"{elapsed:.3f}")
            counts["tests"] += 1
            outcome = _junit_outcome(case, trials, ((metrics.get("tasks") or {}).get(task_id) or {}))
            if outcome:
                counts[outcome] += 1
            ET.SubElement(case, "system-out").text = "\n".join(_trial_line(r) for r in trials)
        for key, value in counts.items():
            suite.set(key, str(value))
        suite.set("time", f"{suite_time:.3f}")
        root_time += suite_time
        for key in totals:
            totals[key] += counts[key]
    for key, value in totals.items():
        root.set(key, str(value))
    root.set("time", f"{root_time:.3f}")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _junit_properties(suite: ET.Element, metrics: dict[str, Any]) -> None:
    if not metrics:
        return
    properties = ET.SubElement(suite, "properties")
    for key, label in (("average_score", "score"), ("success_rate", "success rate")):
        estimate = metrics.get(key) or {}
        if estimate.get("value") is None:
            continue
        value = f"{_est(estimate, 3)} ({estimate.get('method') or 'no interval'}, {estimate.get('n_tasks')} tasks)"
        ET.SubElement(properties, "property", name=label, value=value)


def _junit_outcome(case: ET.Element, trials: list[dict[str, Any]], task: dict[str, Any]) -> str | None:
    """Add the testcase's error / failure / skipped element; returns which (None when it passes)."""
    statuses = ", ".join(f"{s} {n}" for s, n in _count(r.get("status") for r in trials))
    measured = [r for r in trials if r.get("status") not in NOT_MEASURED]
    errored = [r for r in measured if r.get("status") in ERRORED]
    if not measured:
        ET.SubElement(case, "skipped", message=f"no trial was measured ({statuses})")
        return "skipped"
    if errored:
        faults = ", ".join(f"{fault} {n}" for fault, n in _count(_fault(r) for r in errored))
        first = next((str(r.get("error")) for r in errored if r.get("error")), "")
        element = ET.SubElement(case, "error", message=f"{len(errored)} of {len(trials)} trials errored or timed "
                                                       f"out, by fault: {faults} ({statuses})", type=_fault(errored[0]))
        element.text = first[:2000]
        return "errors"
    unassisted = [r for r in measured if not r.get("assisted")]
    if any(r.get("success") for r in unassisted):
        return None
    assisted_wins = sum(1 for r in measured if r.get("assisted") and r.get("success"))
    ci = task.get("success_ci")
    interval = f"; task success rate 0.00 [{ci[0]:.2f}, {ci[1]:.2f}] (Wilson over its trials)" if ci else ""
    note = f"; {assisted_wins} assisted success(es) do not count" if assisted_wins else ""
    ET.SubElement(case, "failure", type="NoSuccess",
                  message=f"0/{len(unassisted)} unassisted trials succeeded{interval}{note} ({statuses})")
    return "failures"


def _fault(row: dict[str, Any]) -> str:
    return str(row.get("fault") or (Fault.TIMEOUT if row.get("status") == TrialStatus.TIMEOUT else Fault.UNKNOWN))


def _count(values: Iterable[Any]) -> list[tuple[str, int]]:
    counts: dict[str, int] = {}
    for value in values:
        counts[str(value)] = counts.get(str(value), 0) + 1
    return sorted(counts.items())


def _counted(index: Any) -> Any:
    """A 0-based trial index as a person counts it (from 1)."""
    return index + 1 if isinstance(index, int) else index


def _trial_line(row: dict[str, Any]) -> str:
    score = row.get("score")
    shown = "-" if score is None else f"{score:.4g}"
    text = f"trial {_counted(row.get('trial_index'))}: {row.get('status')} score={shown}"
    if row.get("answer") is not None:
        text += f" answer={str(row['answer'])[:200]!r}"
    if row.get("error"):
        text += f" error={str(row['error'])[:300]!r}"
    return text


# --- CSV -----------------------------------------------------------------------------------------


def trials_csv(rows: Sequence[dict[str, Any]], *, raw: bool = False) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_COLUMNS, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in rows:
        values = {key: _csv_value(row.get(key)) for key in CSV_COLUMNS}
        writer.writerow(values if raw else {key: spreadsheet_safe(value) for key, value in values.items()})
    return buffer.getvalue()


def _csv_value(value: Any) -> Any:
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return "" if value is None else value


# --- terminal tables -------------------------------------------------------------------------------


def _est(estimate: dict[str, Any] | None, digits: int = 2) -> str:
    """`0.80 [0.25, 1.00]`: the value and the interval that was computed (often asymmetric)."""
    if not estimate or estimate.get("value") is None:
        return "-"
    value = f"{estimate['value']:.{digits}f}"
    ci = estimate.get("ci")
    if ci:
        value += f" [{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]"
    return value


def _num(value: Any, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _shown_ks(document: dict[str, Any]) -> list[int]:
    ks = (document.get("spec") or {}).get("k_values") or [1]
    return [ks[0], ks[len(ks) // 2], ks[-1]] if len(ks) > 3 else list(ks)  # the JSON has them all


def _pass_k(m: dict[str, Any], k: int) -> str:
    entry = (m.get("pass_k") or {}).get(str(k)) or {}
    if entry.get("pass_at_k") is None:
        return f"- ({entry.get('n_tasks', 0)})"
    return f"{entry['pass_at_k']:.2f} / {entry['pass_hat_k']:.2f} ({entry.get('n_tasks')})"


def _errors(m: dict[str, Any]) -> str:
    faults = m.get("errors_by_fault") or {}
    total = sum(faults.values())
    return f"{total} ({', '.join(f'{f} {n}' for f, n in faults.items())})" if total else "0"


def _assisted(m: dict[str, Any]) -> str:
    assisted = m.get("assisted") or {}
    n = assisted.get("n_assisted") or 0
    return f"{n}: score {_num((assisted.get('assisted_average_score') or {}).get('value'))}" if n else "0"


def _cost(m: dict[str, Any]) -> str:
    return money_text((m.get("resources") or {}).get("cost"))


def _cost_per_trial(m: dict[str, Any]) -> str:
    cost, trials = (m.get("resources") or {}).get("cost"), m.get("n_trials") or 0
    return "-" if cost is None or not trials else money_text(cost / trials)


def _trials(m: dict[str, Any]) -> str:
    """The trials the arm's figures are computed over, and how many errored (whose fault: next table)."""
    errored = sum((m.get("errors_by_fault") or {}).values())
    return f"{m.get('n_trials')} ({errored} errored)" if errored else str(m.get("n_trials"))


Column = tuple[str, Callable[[dict[str, Any]], str]]


def quality_columns(document: dict[str, Any]) -> list[Column]:
    """The first per-arm table: (header, cell of an arm's metrics dict). Add a column here."""
    return [
        ("tasks", lambda m: str(m.get("n_tasks"))),
        ("trials", _trials),
        ("score [95% CI]", lambda m: _est(m.get("average_score"))),
        ("success [95% CI]", lambda m: _est(m.get("success_rate"))),
        *[(f"pass@{k} / pass^{k} (tasks)", lambda m, k=k: _pass_k(m, k)) for k in _shown_ks(document)],
    ]


def conduct_columns(document: dict[str, Any]) -> list[Column]:
    """The second per-arm table: how the trials went and what they cost. Add a column here."""
    arms = (document.get("arms") or {}).values()
    columns: list[Column] = [
        ("surrender [95% CI]", lambda m: _est(m.get("surrender_rate"))),
        ("errored (by fault)", _errors),
        ("assisted (apart)", _assisted),
        ("tokens", lambda m: str((m.get("resources") or {}).get("total_tokens", 0))),
    ]
    if any((m.get("resources") or {}).get("cost") is not None for m in arms):
        columns += [("cost", _cost), ("per trial", _cost_per_trial)]
    columns.append(("duration s", lambda m: _num((m.get("resources") or {}).get("duration_total"), 1)))
    return columns


def _arm_table(title: str | None, arms: dict[str, Any], columns: list[Column]) -> Table:
    table = Table(title=Text(title) if title else None)
    # a long arm name (an Inspect log's `task/model variant=...`) folds onto more lines; the figures and
    # their headers keep their width, so no header is cut to `score [95% C…`
    table.add_column("arm", justify="left", overflow="fold", min_width=min(12, max(map(len, arms), default=3)))
    for header, _ in columns:
        table.add_column(header, justify="right", no_wrap=True, min_width=len(header))
    for name, m in arms.items():
        table.add_row(Text(name), *[cell(m) for _, cell in columns])
    return table


def _methods_line(arms: dict[str, Any]) -> str | None:
    methods: dict[str, set[str]] = {}
    for m in arms.values():
        for key, label in (("average_score", "score"), ("success_rate", "success"), ("surrender_rate", "surrender")):
            method = (m.get(key) or {}).get("method")
            if method:
                methods.setdefault(label, set()).add(method)
    if not methods:
        return None
    parts = "; ".join(f"{label}: {', '.join(sorted(found))}" for label, found in methods.items())
    return (f"intervals ({parts}). Unit of analysis: the task (a chain counts once, by its weighted workflow "
            "score); see docs/benchmarks.md, \"What the metrics mean\".")


def _rate(value: Any, ci: Any, n: int) -> str:
    interval = f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else ""
    return f"{_num(value)}{interval} (n={n})"


def _calibration_line(arm: str, c: dict[str, Any]) -> str:
    tp, fp, fn = (int(c.get(key) or 0) for key in ("true_positive", "false_positive", "false_negative"))
    return (f"surrender calibration ({arm}, {c.get('n_tasks', 0)} tasks; 95% Wilson over trials, not clustered by "
            f"task): precision {_rate(c.get('precision'), c.get('precision_ci'), tp + fp)}, recall "
            f"{_rate(c.get('recall'), c.get('recall_ci'), tp + fn)} "
            f"(surrendered on unsolvable {c.get('true_positive')}, on solvable {c.get('false_positive')}; kept "
            f"going on unsolvable {c.get('false_negative')}, on solvable {c.get('true_negative')}); left out: "
            f"{c.get('n_excluded_errors', 0)} errored and {c.get('n_excluded_timeouts', 0)} timed-out trial(s)")


def _pass_k_notes(arm: str, m: dict[str, Any]) -> list[str]:
    notes = []
    for k, entry in sorted((m.get("pass_k") or {}).items(), key=lambda item: int(item[0])):
        excluded = entry.get("tasks_excluded") or []
        if excluded:
            shown = ", ".join(excluded[:10]) + (f" and {len(excluded) - 10} more" if len(excluded) > 10 else "")
            notes.append(f"pass@{k} / pass^{k} ({arm}) cover {entry.get('n_tasks')} task(s); left out with fewer "
                         f"than {k} trials: {shown}")
    return notes


def chain_line(arm: str, chain: dict[str, Any]) -> str:
    links = ", ".join(f"{t} {_rate(s.get('success_rate'), s.get('success_ci'), int(s.get('attempted') or 0))}"
                      for t, s in (chain.get("links") or {}).items())
    weights = ", ".join(f"{t} {w:.3g}" for t, w in (chain.get("weights") or {}).items())
    note = f"; {chain['weights_note']}" if chain.get("weights_note") else ""
    return (f"chain ({arm}): workflow score {_est(chain.get('workflow_score'))} (weights {weights}{note}; skipped "
            f"links score 0), end-to-end {_est(chain.get('end_to_end'))}, partial completion "
            f"{_est(chain.get('partial_completion'))} over {chain.get('n_episodes')} episode(s); per link, "
            f"success once reached (95% Wilson over the episodes that reached it): {links}{_chain_errors(chain)}")


def _chain_errors(chain: dict[str, Any]) -> str:
    """The episodes a link's infrastructure error set apart (not failures), by fault."""
    count = int(chain.get("n_errored_episodes") or 0)
    if not count:
        return ""
    faults = ", ".join(f"{fault} {n}" for fault, n in (chain.get("errored_faults") or {}).items())
    return f"; {count} episode(s) set apart as errored ({faults}), not counted as failures"


def print_results(document: dict[str, Any], console: Console) -> None:
    """The per-arm table, comparison lines, calibration, chain lines and the headline of a results document."""
    print_arms(document, console)
    headline = document.get("headline_score")
    best = document.get("previous_best")
    direction = (document.get("spec") or {}).get("direction") or "maximize"
    cost = document.get("cost_total")
    attempt = (document.get("attempt") or {}).get("text") or ""
    console.print(f"headline score {_num(headline, 3)} ({document.get('attempt_status') or 'not classified'}"
                  f"{f': {attempt}' if attempt else ''}; "
                  f"best earlier run of this spec ({direction}): {_num(best, 3) if best is not None else 'none'}); "
                  f"{document.get('trials_run', 0)} trials run now, {document.get('trials_errored', 0)} errored; "
                  f"tokens {_run_tokens(document.get('arms') or {})}"
                  + (f", cost {money_text(cost)}" if cost is not None else ""), highlight=False, markup=False,
                  soft_wrap=True)


def _run_tokens(arms: dict[str, Any]) -> int:
    return sum(int((m.get("resources") or {}).get("total_tokens") or 0) for m in arms.values())


def print_arms(document: dict[str, Any], console: Console) -> None:
    """The per-arm tables, comparison lines, calibration and chain lines of a results document."""
    arms: dict[str, Any] = document.get("arms") or {}
    title = f"{document.get('name')} — benchmark {document.get('benchmark_id')} ({document.get('status')})"
    console.print(_arm_table(title, arms, quality_columns(document)))
    console.print(_arm_table(None, arms, conduct_columns(document)))

    def say(text: str) -> None:
        console.print(text, highlight=False, markup=False, soft_wrap=True)

    methods = _methods_line(arms)
    if methods:
        say(methods)
    for name, m in arms.items():
        for note in _pass_k_notes(name, m):
            say(note)
    for comparison in document.get("comparisons") or []:
        say(f"{comparison['arm_b']} vs {comparison['arm_a']}: {comparison['summary']}")
    trend = document.get("trend") or {}
    if trend.get("summary"):
        say(trend["summary"])
    for line in (document.get("costs") or {}).get("summary") or []:
        say(line)
    for line in (document.get("selection") or {}).get("summary") or []:
        say(line)
    for name, m in arms.items():
        if m.get("surrender_calibration"):
            say(_calibration_line(name, m["surrender_calibration"]))
    for arm, chains in (document.get("chains") or {}).items():
        for chain in chains:
            say(chain_line(arm, chain))


def planned_trials(benchmark: Any) -> int | None:
    """Trials the benchmark's spec plans (arms x tasks x trials per task), when the store knows its
    task list (recorded when the run starts, and again with the metrics at its end)."""
    spec = (benchmark.metrics or {}).get("spec") or {}
    tasks = spec.get("tasks")
    if not isinstance(tasks, list) or not tasks:
        return None
    return max(1, len(benchmark.arms)) * len(tasks) * max(1, int(benchmark.trials_per_task or 1))


def trials_done_text(benchmark: Any) -> str:
    """Finished of planned trials and how many errored ("6/8, 2 errored"); "6/7+" (what the store holds)
    for a run recorded before the plan was kept."""
    planned = planned_trials(benchmark)
    done = f"{benchmark.finished_count}/{benchmark.trial_count}+" if planned is None else \
        f"{benchmark.finished_count}/{planned}"
    errored = getattr(benchmark, "errored_count", 0)
    return f"{done}, {errored} errored" if errored else done


def money_text(cost: float | None) -> str:
    """$0.000137, $0.0120, $1.23: three significant digits below a dollar, cents above; - when unknown."""
    if cost is None:
        return "-"
    if cost >= 1:
        return f"${cost:,.2f}"
    if cost <= 0:
        return "$0"
    return f"${cost:.{2 - math.floor(math.log10(cost))}f}"


def history_table(benchmarks: Sequence[Any]) -> Table:
    table = Table(title="benchmarks (newest first)")
    for column in ("id", "name", "status", "attempt", "headline", "trials done/planned", "tokens", "cost",
                   "created (UTC)", "digest"):
        table.add_column(column)
    for b in benchmarks:
        table.add_row(b.id, Text(b.spec_name), b.status, b.attempt_status or "-", _num(b.headline_score, 3),
                      trials_done_text(b), str(b.total_tokens), money_text(b.cost_total),
                      b.created_at.strftime("%Y-%m-%d %H:%M:%S"), b.spec_digest[:10])
    return table


def plain_console(file: TextIO) -> Console:
    """A console for results: colours only on a terminal, and wide enough for the table elsewhere."""
    console = Console(file=file)
    if not console.is_terminal:
        console = Console(file=file, width=160, no_color=True, highlight=False, markup=False)
    return console
