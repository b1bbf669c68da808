"""`--summary-md FILE`: a batch run's results as GitHub-flavoured Markdown (a CI job summary or a PR comment).

Built from the same results document as `--json` (runner/results.py `to_dict`), so the numbers are the
ones the terminal table shows: per arm score and success with their intervals, pass@k / pass^k, errors
by fault, assisted trials apart, tokens, cost and provider retries; then the paired comparisons and the
headline. Text from the spec (names, errors) is escaped so it cannot break the table.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from corral_core.report import chain_line

__all__ = ["summary_markdown"]


def summary_markdown(document: dict[str, Any], trials: Iterable[dict[str, Any]] = ()) -> str:
    """The Markdown summary of a results document; `trials` (its rows, streamed) add each arm's provider
    retries and waits. Trials are not listed one by one: the JUnit report has them."""
    lines = [f"## corral-tui: {_cell(document.get('name'))} — benchmark `{document.get('benchmark_id')}` "
             f"({document.get('status')})", "", _headline(document), ""]
    arms = document.get("arms") or {}
    if arms:
        ks = sorted({int(k) for arm in arms.values() for k in (arm.get("pass_k") or {})})
        header = ["arm", "tasks", "trials", "score [95% CI]", "success [95% CI]",
                  *(f"pass@{k} / pass^{k}" for k in ks), "errored", "assisted", "tokens", "cost $", "LLM retries"]
        lines += ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] + ["--:"] * (len(header) - 1)) + "|"]
        retries = _retries_by_arm(trials)
        for name, arm in arms.items():
            resources = arm.get("resources") or {}
            errors = arm.get("errors_by_fault") or {}
            errored = sum(int(v) for v in errors.values())
            by_fault = ", ".join(f"{fault} {count}" for fault, count in sorted(errors.items()))
            row = [f"`{_cell(name)}`", str(arm.get("n_tasks", "-")), str(arm.get("n_trials", "-")),
                   _estimate(arm.get("average_score")), _estimate(arm.get("success_rate")),
                   *(_pass(arm, k) for k in ks), f"{errored}" + (f" ({_cell(by_fault)})" if by_fault else ""),
                   str(arm.get("n_assisted", 0)), str(resources.get("total_tokens", "-")),
                   _number(resources.get("cost"), 4), retries.get(name, "-")]
            lines.append("| " + " | ".join(row) + " |")
        lines.append("")
    comparisons = document.get("comparisons") or []
    if comparisons:
        lines += ["### Paired comparisons (unit: the task; Holm-adjusted)", ""]
        lines += [f"- **{_cell(c['arm_b'])} vs {_cell(c['arm_a'])}**: {_cell(c.get('summary'))}" for c in comparisons]
        lines.append("")
    trend = (document.get("trend") or {}).get("summary")
    if trend:
        lines += ["### Trend across ordered levels", "", f"- {_cell(trend)}", ""]
    chains = [chain_line(arm, chain) for arm, chains in (document.get("chains") or {}).items() for chain in chains]
    if chains:
        lines += ["### Chains", "", *(f"- {_cell(line)}" for line in chains), ""]
    return "\n".join(lines).rstrip() + "\n"


def _headline(document: dict[str, Any]) -> str:
    score = document.get("headline_score")
    shown = "none" if score is None else f"{score:.3f}"
    best = document.get("previous_best")
    earlier = "" if best is None else f"; best earlier run {_number(best, 3)}"
    cost = document.get("cost_total")
    spent = "" if cost is None else f", cost ${cost:.4f}"
    return (f"**Headline score {shown}** ({document.get('attempt_status') or '-'}{earlier}); "
            f"{document.get('trials_run', 0)} of {document.get('trials_total', 0)} trials run now, "
            f"{document.get('trials_errored', 0)} errored{spent}.")


def _retries_by_arm(trials: Iterable[dict[str, Any]]) -> dict[str, str]:
    """Provider retries and seconds waited (before retries and for per-minute budgets) per arm."""
    counts: dict[str, list[float]] = {}
    for trial in trials:
        entry = counts.setdefault(str(trial.get("arm")), [0, 0.0])
        entry[0] += int(trial.get("llm_retries") or 0)
        entry[1] += float(trial.get("llm_retry_wait") or 0.0) + float(trial.get("rate_limit_wait") or 0.0)
    return {arm: f"{int(n)} ({waited:.1f} s waited)" for arm, (n, waited) in counts.items()}


def _estimate(value: Any) -> str:
    if not isinstance(value, dict) or value.get("value") is None:
        return "-"
    ci = value.get("ci")
    interval = f" [{ci[0]:.2f}, {ci[1]:.2f}]" if isinstance(ci, list) and len(ci) == 2 and None not in ci else ""
    return f"{value['value']:.2f}{interval}"


def _pass(arm: dict[str, Any], k: int) -> str:
    entry = (arm.get("pass_k") or {}).get(str(k))
    if not isinstance(entry, dict):
        return "-"
    return f"{_number(entry.get('pass_at_k'), 2)} / {_number(entry.get('pass_hat_k'), 2)}"


def _number(value: Any, digits: int) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    return f"{float(value):.{digits}f}"


def _cell(value: Any) -> str:
    """Text safe inside a Markdown table cell or list item: no pipes, no line breaks, no raw HTML."""
    text = "-" if value is None else str(value)
    return (text.replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")
            .replace("\r", " ").replace("\n", " "))
