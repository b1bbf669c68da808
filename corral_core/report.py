"""Results as files and text: JSON, JUnit XML, CSV, and the terminal tables batch mode prints.

No Textual here: batch mode and the export command use these; rich renders the tables.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, TextIO
from xml.etree import ElementTree as ET

from rich.console import Console
from rich.table import Table
from rich.text import Text

from corral_core.errors import UserError

CSV_COLUMNS = (
    "trial_id", "benchmark_id", "arm", "task_id", "trial_index", "episode_id", "agent", "model", "verbosity",
    "status", "score", "success", "answer", "explanation", "surrendered", "error", "prompt_tokens",
    "completion_tokens", "total_tokens", "cost", "duration", "tool_duration", "iterations", "assisted",
    "started_at", "finished_at",
)
NOT_MEASURED = frozenset({"skipped", "cancelled", "running"})


def check_writable(path: str | None, flag: str) -> None:
    """Fail before a long run, not after it, when an output file cannot be written."""
    if not path or path == "-":
        return
    folder = Path(path).expanduser().resolve().parent
    if not folder.is_dir():
        raise UserError(f"the folder {str(folder)!r} for {path!r} does not exist.", where=flag,
                        fix="create the folder first or write the file somewhere else.")


def write_text(path: str, text: str) -> None:
    if path == "-":
        print(text)
        return
    try:
        Path(path).expanduser().write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UserError(f"cannot write {path!r}: {exc.strerror}.", fix="choose a writable path.") from None


def to_json(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False, default=str)


# --- JUnit ---------------------------------------------------------------------------------------


def junit_xml(name: str, rows: Sequence[dict[str, Any]], arm_order: Sequence[str],
              task_order: Sequence[str] = ()) -> str:
    """One <testsuite> per arm and one <testcase> per task of it.

    A testcase fails when no trial of the task succeeded in that arm; it is skipped when none of
    its trials was measured (all skipped or cancelled). system-out lists every trial's status,
    score and answer.
    """
    by_arm: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        by_arm[row["arm"]][row["task_id"]].append(row)
    root = ET.Element("testsuites", name=name)
    totals = {"tests": 0, "failures": 0, "skipped": 0}
    arms = [a for a in arm_order if a in by_arm] + sorted(a for a in by_arm if a not in arm_order)
    for arm in arms:
        suite = ET.SubElement(root, "testsuite", name=f"{name}.{arm}")
        counts = {"tests": 0, "failures": 0, "skipped": 0}
        suite_time = 0.0
        rank = {task: i for i, task in enumerate(task_order)}
        for task_id, trials in sorted(by_arm[arm].items(), key=lambda item: (rank.get(item[0], len(rank)), item[0])):
            trials.sort(key=lambda r: r.get("trial_index") or 0)
            elapsed = math.fsum(float(r.get("duration") or 0.0) for r in trials)
            suite_time += elapsed
            case = ET.SubElement(suite, "testcase", classname=f"{name}.{arm}", name=task_id, time=f"{elapsed:.3f}")
            counts["tests"] += 1
            successes = sum(1 for r in trials if r.get("success"))
            measured = [r for r in trials if r.get("status") not in NOT_MEASURED]
            statuses = ", ".join(f"{s} {n}" for s, n in _count(r.get("status") for r in trials))
            if not measured:
                ET.SubElement(case, "skipped", message=f"no trial was measured ({statuses})")
                counts["skipped"] += 1
            elif successes == 0:
                ET.SubElement(case, "failure", message=f"0/{len(trials)} trials succeeded ({statuses})",
                              type="NoSuccess")
                counts["failures"] += 1
            ET.SubElement(case, "system-out").text = "\n".join(_trial_line(r) for r in trials)
        suite.set("tests", str(counts["tests"]))
        suite.set("failures", str(counts["failures"]))
        suite.set("errors", "0")
        suite.set("skipped", str(counts["skipped"]))
        suite.set("time", f"{suite_time:.3f}")
        for key in totals:
            totals[key] += counts[key]
    for key, value in totals.items():
        root.set(key, str(value))
    root.set("errors", "0")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _count(values: Iterable[Any]) -> list[tuple[str, int]]:
    counts: dict[str, int] = {}
    for value in values:
        counts[str(value)] = counts.get(str(value), 0) + 1
    return sorted(counts.items())


def _trial_line(row: dict[str, Any]) -> str:
    score = row.get("score")
    text = f"trial {row.get('trial_index')}: {row.get('status')} score={'-' if score is None else f'{score:.4g}'}"
    if row.get("answer") is not None:
        text += f" answer={str(row['answer'])[:200]!r}"
    if row.get("error"):
        text += f" error={str(row['error'])[:300]!r}"
    return text


# --- CSV -----------------------------------------------------------------------------------------


def trials_csv(rows: Sequence[dict[str, Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_COLUMNS, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({key: _csv_value(row.get(key)) for key in CSV_COLUMNS})
    return buffer.getvalue()


def _csv_value(value: Any) -> Any:
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return "" if value is None else value


# --- terminal tables -------------------------------------------------------------------------------


def _est(estimate: dict[str, Any] | None, digits: int = 2, *, interval: bool = False) -> str:
    """`0.80 ± 0.12` for a mean's symmetric CI; `0.80 [0.55-0.93]` for a proportion's (Wilson)."""
    if not estimate or estimate.get("value") is None:
        return "-"
    value = f"{estimate['value']:.{digits}f}"
    ci = estimate.get("ci")
    if ci and interval:
        value += f" [{ci[0]:.{digits}f}-{ci[1]:.{digits}f}]"
    elif ci:
        value += f" ± {(ci[1] - ci[0]) / 2:.{digits}f}"
    return value


def _num(value: Any, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def print_results(document: dict[str, Any], console: Console) -> None:
    """The per-arm table, comparison lines, chain lines and the headline of a results document."""
    arms: dict[str, Any] = document.get("arms") or {}
    ks = (document.get("spec") or {}).get("k_values") or [1]
    if len(ks) > 3:  # the table shows three; the JSON has them all
        ks = [ks[0], ks[len(ks) // 2], ks[-1]]
    title = f"{document.get('name')} — benchmark {document.get('benchmark_id')} ({document.get('status')})"
    table = Table(title=Text(title))
    for column in ("arm", "trials", "score ± CI", "success [CI]", *[f"pass@{k}" for k in ks],
                   *[f"pass^{k}" for k in ks], "surrender", "errors", "tokens", "duration s"):
        table.add_column(column, justify="left" if column == "arm" else "right")
    for name, m in arms.items():
        pass_k = m.get("pass_k") or {}
        resources = m.get("resources") or {}
        table.add_row(
            Text(name), str(m.get("n_trials")), _est(m.get("average_score")),
            _est(m.get("success_rate"), interval=True),
            *[_num((pass_k.get(str(k)) or {}).get("pass_at_k")) for k in ks],
            *[_num((pass_k.get(str(k)) or {}).get("pass_hat_k")) for k in ks],
            _num((m.get("surrender_rate") or {}).get("value")), _num((m.get("error_rate") or {}).get("value")),
            str(resources.get("total_tokens", 0)), _num(resources.get("duration_total"), 1),
        )
    console.print(table)
    for comparison in document.get("comparisons") or []:
        console.print(f"{comparison['arm_b']} vs {comparison['arm_a']}: {comparison['summary']}",
                      highlight=False, markup=False)
    for arm, chains in (document.get("chains") or {}).items():
        for chain in chains:
            links = ", ".join(f"{t} {_num(s.get('success_rate'))}" for t, s in (chain.get("links") or {}).items())
            end_to_end = _est(chain.get("end_to_end"), interval=True)
            console.print(f"chain ({arm}): end-to-end {end_to_end}, partial completion "
                          f"{_est(chain.get('partial_completion'))}; per link: {links}", highlight=False, markup=False)
    headline = document.get("headline_score")
    best = document.get("previous_best")
    console.print(f"headline score {_num(headline, 3)} ({document.get('attempt_status') or 'not classified'}; "
                  f"best earlier run of this spec: {_num(best, 3) if best is not None else 'none'}); "
                  f"{document.get('trials_run', 0)} trials run now, {document.get('trials_errored', 0)} errored",
                  highlight=False, markup=False)


def history_table(benchmarks: Sequence[Any]) -> Table:
    table = Table(title="benchmarks (newest first)")
    for column in ("id", "name", "status", "attempt", "headline", "trials", "created (UTC)", "digest"):
        table.add_column(column)
    for b in benchmarks:
        table.add_row(b.id, Text(b.spec_name), b.status, b.attempt_status or "-", _num(b.headline_score, 3),
                      f"{b.finished_count}/{b.trial_count}", b.created_at.strftime("%Y-%m-%d %H:%M:%S"),
                      b.spec_digest[:10])
    return table


def plain_console(file: TextIO) -> Console:
    """A console for results: colours only on a terminal, and wide enough for the table elsewhere."""
    console = Console(file=file)
    if not console.is_terminal:
        console = Console(file=file, width=160, no_color=True, highlight=False, markup=False)
    return console
