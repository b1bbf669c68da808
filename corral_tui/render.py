"""Rich renderables for what the panes show: messages, tool calls, hook events, timeline entries.

Pure functions of plain data (events, dicts): no widgets, no I/O. Long texts are capped so one
huge tool result never costs more than a bounded amount of rendering.
"""

from __future__ import annotations

import json
import re
from typing import Any

from rich.console import Group, RenderableType
from rich.json import JSON
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from corral_core import safetext
from corral_core.domain import ControlState, Decider, ToolStatus, TrialStatus
from corral_core.events import (
    BreakpointHitData,
    Event,
    EventKind,
    MessageData,
    ToolCallData,
    TrialFinishedData,
    stored_event,
)
from corral_core.report import money_text
from corral_tui.config import Redactor

MAX_TEXT = 4_000  # characters of one message or result shown
MAX_ROWS = 50  # rows of a table-rendered result
MAX_JSON = 20_000  # characters of JSON pretty-printed (larger is shown as plain text)
ROLE_STYLES = {"system": "dim", "user": "cyan", "assistant": "green", "tool": "magenta"}
_TAGS = re.compile(r"<(thought|action|action_input|final_answer|surrender)>(.*?)</\1>", re.DOTALL | re.IGNORECASE)
_TAG_LABELS = {"thought": ("Thought", "italic"), "action": ("Action", "bold yellow"),
               "action_input": ("Input", ""), "final_answer": ("Answer", "bold green"),
               "surrender": ("Surrender", "bold red")}
# trial, tool-call and control statuses and approval verdicts (a StrEnum member is its string: the keys
# match what the events and the store hold)
STATUS_STYLES = {ToolStatus.SUCCESS: "green", TrialStatus.COMPLETED: "green", "approved": "green",
                 ToolStatus.REJECTED: "red", TrialStatus.ERROR: "red", ToolStatus.EXECUTION_ERROR: "red",
                 ToolStatus.INVALID_ARGS: "red", ToolStatus.INVALID_TOOL: "red",
                 ToolStatus.BLOCKED: "red", TrialStatus.TIMEOUT: "red", TrialStatus.SURRENDERED: "yellow",
                 ControlState.PAUSED: "yellow", ControlState.STEPPING: "yellow", TrialStatus.CANCELLED: "red",
                 TrialStatus.RUNNING: "cyan", TrialStatus.ITERATION_LIMIT: "yellow"}


def clip(text: Any, limit: int = MAX_TEXT) -> str:
    """A message or result for a pane: the first `limit` characters and how many were cut."""
    return safetext.clip(text, limit)


def status_text(status: str | None) -> Text:
    status = status or "-"
    return Text(status, style=STATUS_STYLES.get(status, ""))


def parse_json(text: Any) -> Any:
    """The JSON value of `text`, or None when it is not JSON (or too large to pretty-print)."""
    if isinstance(text, (dict, list)):
        return text
    if not isinstance(text, str) or len(text) > MAX_JSON:
        return None
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{":
        return None
    try:
        return json.loads(stripped)
    except ValueError:
        return None


def json_block(value: Any) -> RenderableType:
    """Pretty, highlighted JSON for a value (or for text that holds JSON)."""
    data = parse_json(value) if isinstance(value, str) else value
    if data is None:
        return Text(clip(value))
    try:
        return JSON.from_data(data, indent=2, default=str)
    except (TypeError, ValueError):
        return Text(clip(value))


def message_body(content: Any, react_tags: bool = True) -> RenderableType:
    """A message's content: ReAct tags as labelled parts (the model's own replies only), JSON
    highlighted, the rest as text."""
    if isinstance(content, list):
        content = "\n".join(str(part.get("text", part)) if isinstance(part, dict) else str(part) for part in content)
    text = clip(content)
    if parse_json(text) is not None:
        return json_block(text)
    if not react_tags:
        if text.startswith("Observation:") and parse_json(text[12:]) is not None:
            return Group(Text("Observation:", style="bold"), json_block(text[12:]))
        return Text(text)
    parts: list[RenderableType] = []
    last = 0
    for match in _TAGS.finditer(text):
        if text[last:match.start()].strip():
            parts.append(Text(text[last:match.start()].strip()))
        tag, body = match.group(1).lower(), match.group(2).strip()
        label, style = _TAG_LABELS[tag]
        if tag == "action_input" and parse_json(body) is not None:
            parts.append(Group(Text(f"{label}:", style="bold"), json_block(body)))
        else:
            parts.append(Text.assemble((f"{label}: ", "bold"), (body, style)))
        last = match.end()
    rest = text[last:].strip()
    if rest.startswith("Observation:") and parse_json(rest[12:]) is not None:
        parts.append(Group(Text("Observation:", style="bold"), json_block(rest[12:])))
    elif rest:
        parts.append(Text(rest))
    return Group(*parts) if parts else Text("(empty)", style="dim")


def message_block(data: MessageData) -> RenderableType:
    role = str(data.get("role", "?"))
    header = Text.assemble((f"{role}", f"bold {ROLE_STYLES.get(role, '')}"),
                           (f" ({data['name']})" if data.get("name") else "", "dim"))
    parts: list[RenderableType] = [header]
    if data.get("content"):
        parts.append(message_body(data["content"], react_tags=role == "assistant"))
    for call in data.get("tool_calls") or []:
        function = call.get("function", call) if isinstance(call, dict) else {}
        parts.append(Text.assemble(("→ call ", "bold yellow"), (str(function.get("name", "?")), "yellow")))
        parts.append(json_block(function.get("arguments", "")))
    return Group(*parts)


def tool_result(result: Any, render: str | None) -> RenderableType:
    """A tool's result drawn by its render hint: table, json, code or text."""
    if result is None or result == "":
        return Text("(no result)", style="dim")
    hint = (render or "text").lower()
    if hint == "table":
        table = rows_table(parse_json(result))
        if table is not None:
            return table
    if hint in ("json", "table") and parse_json(result) is not None:
        return json_block(result)
    if hint == "code":
        from rich.syntax import Syntax  # Pygments, with the first code result: not before the first frame

        return Syntax(clip(result), "python", theme="ansi_dark", word_wrap=True)
    return Text(clip(result))


def rows_table(data: Any) -> Table | None:
    """A rich Table from JSON rows: a list of objects (or {"rows": [...]}); None if not that shape."""
    if isinstance(data, dict):
        data = data.get("rows") or data.get("items") or data.get("results")
    if not isinstance(data, list) or not data or not all(isinstance(row, dict) for row in data):
        return None
    columns = list(dict.fromkeys(key for row in data[:MAX_ROWS] for key in row))
    table = Table(*columns, show_edge=False, header_style="bold")
    for row in data[:MAX_ROWS]:
        table.add_row(*(clip(row.get(col, ""), 80) for col in columns))
    if len(data) > MAX_ROWS:
        table.caption = f"{len(data) - MAX_ROWS} more rows"
    return table


def tool_call_block(data: ToolCallData, redact: Redactor) -> RenderableType:
    """One tool call: tool, status, duration, risk and approval, its arguments and its result."""
    status = str(data.get("status", "?"))
    header = Text.assemble(
        (str(data.get("tool_name", "?")), "bold"), "  ", status_text(status),
        ("  " + redact.duration(data.get("duration")), "dim"),
        (f"  risk {data.get('risk', 'safe')}", "yellow" if data.get("risk") == "confirm" else "dim"),
        (f"  {data['approval']}" if data.get("approval") else "", "dim"),
    )
    parts: list[RenderableType] = [header, json_block(data.get("arguments") or {})]
    if data.get("error_message"):
        parts.append(Text(clip(data["error_message"]), style="red"))
    if data.get("result") is not None:
        parts.append(tool_result(data.get("result"), data.get("render")))
    return Group(*parts)


def iteration_number(value: Any) -> str:
    """The 1-based number the UI shows for an event's 0-based `iteration` ("?" when absent)."""
    try:
        return str(int(value) + 1)
    except (TypeError, ValueError):
        return "?"


def hook_line(event: Event) -> Text | None:
    """The hooks pane's line for an event, or None when it is not a hook-type event."""
    if event.kind is EventKind.HOOK_FIRED:
        fired = event.data
        flags = [name for name in ("skip_current_step",) if fired.get(name)]
        if fired.get("should_continue") is False:
            flags.append("stop")
        return Text.assemble(("hook ", "dim"), (str(fired.get("hook")), "bold"),
                             f" at {fired.get('point')} (iteration {iteration_number(fired.get('iteration'))})",
                             (f" [{', '.join(flags)}]" if flags else "", "yellow"))
    if event.kind is EventKind.HOOK_ERROR:
        failed = event.data
        return Text(f"hook {failed.get('hook')} failed at {failed.get('point')}: {failed.get('error')}", style="red")
    if event.kind is EventKind.INTERVENTION_APPLIED:
        applied = event.data
        return Text(f"intervention ({applied.get('source')}) before iteration "
                    f"{iteration_number(applied.get('iteration'))}: {clip(applied.get('text'), 200)}",
                    style="bold magenta")
    if event.kind is EventKind.INTERVENTION_UNDELIVERED:
        lost = event.data
        return Text(f"intervention NOT delivered ({lost.get('reason')}): {clip(lost.get('text'), 200)}",
                    style="bold red")
    if event.kind is EventKind.CONTROL_STATE:
        control = event.data
        why = f" ({control['reason']})" if control.get("reason") else ""
        return Text(f"control: {control.get('state')} at iteration {iteration_number(control.get('iteration'))}{why}",
                    style="yellow")
    if event.kind is EventKind.BREAKPOINT_HIT:
        return breakpoint_line(event.data)
    if event.kind is EventKind.APPROVAL_ASKED:
        asked = event.data
        return Text(f"approval asked for {asked.get('tool_name')} (risk {asked.get('risk')})", style="yellow")
    if event.kind is EventKind.APPROVAL_DECIDED:
        decided = event.data
        reason = (f" ({decided.get('reason')})" if decided.get("reason") else "", "dim")
        if decided.get("decided_by") == Decider.CANCELLED:
            return Text.assemble("approval: ", status_text(Decider.CANCELLED), f" {decided.get('tool_name')}", reason)
        verdict = "approved" if decided.get("approved") else "rejected"
        return Text.assemble("approval: ", status_text(verdict),
                             f" {decided.get('tool_name')} by {decided.get('decided_by')}", reason)
    return None


def breakpoint_line(data: BreakpointHitData) -> Text:
    """A breakpoint hit: which one, where, why, and whether the trial waits for the operator."""
    outcome = "paused: c continues, s steps" if data.get("paused") else "recorded, not paused"
    return Text.assemble(("breakpoint ", "bold red"), (str(data.get("breakpoint")), "bold"),
                         f" hit at iteration {iteration_number(data.get('iteration'))}: {data.get('reason')}",
                         (f" ({outcome})", "red"))


def iteration_item(event: Event, redact: Redactor) -> RenderableType | None:
    """The iterations pane's item for an event: iteration rules, messages, interventions, the end."""
    if event.kind is EventKind.ITERATION_STARTED:
        started = event.data
        who = f" ({started['agent']})" if started.get("agent") else ""
        return Rule(f"iteration {iteration_number(started.get('iteration'))}{who}", style="dim")
    if event.kind is EventKind.MESSAGE:
        return message_block(event.data)
    if event.kind is EventKind.INTERVENTION_APPLIED:
        return Text(f"intervention: {clip(event.data.get('text'), 500)}", style="bold magenta")
    if event.kind is EventKind.INTERVENTION_UNDELIVERED:
        lost = event.data
        return Text(f"intervention NOT delivered ({lost.get('reason')}): {clip(lost.get('text'), 500)}",
                    style="bold red")
    if event.kind is EventKind.BREAKPOINT_HIT:
        return breakpoint_line(event.data)
    if event.kind is EventKind.LLM_RESPONSE:
        from corral_core.llm.types import shown_turn  # the llm package, with the first model reply

        response = event.data
        usage = response.get("usage") or {}
        return Text(f"llm {response.get('role', '')} turn {shown_turn(response.get('turn'))}: "
                    f"{usage.get('total_tokens', 0)} tokens, {redact.duration(response.get('duration'))}", style="dim")
    if event.kind is EventKind.AGENT_FINISHED:
        finished = event.data
        return Text.assemble(("finished: ", "bold"), status_text(str(finished.get("status"))),
                             f"  answer {clip(finished.get('answer'), 200)!r}" if finished.get("answer") else "",
                             (f"  {clip(finished.get('error'), 200)}" if finished.get("error") else "", "red"))
    if event.kind is EventKind.TRIAL_FINISHED:
        return trial_end_line(event.data)
    return None


def trial_end_line(data: TrialFinishedData) -> Text:
    """A finished trial's final state: status, iterations, score, answer, and its error with whose fault."""
    iterations = data.get("iterations")
    text = Text.assemble(("trial ", "bold"), status_text(str(data.get("status"))),
                         f" after {iterations} iteration{'s' if iterations != 1 else ''}" if iterations else "",
                         f"  score {format_score(data.get('score'))}",
                         ("  (assisted)" if data.get("assisted") else "", "magenta"))
    if data.get("answer") is not None:
        text.append(f"  answer {clip(data.get('answer'), 200)!r}")
    if data.get("error"):
        fault = f" [{data['fault']} fault]" if data.get("fault") else ""
        text.append(f"\n{clip(data.get('error'), 1_000)}{fault}", style="red")
    return text


def format_score(value: Any) -> str:
    return "-" if value is None else f"{float(value):.2f}"


def format_tokens(value: int) -> str:
    """900, 1.2k, 12k, 1.2M: token counts in five characters."""
    if value < 1_000:
        return str(value)
    if value < 10_000:
        return f"{value / 1_000:.1f}k"
    if value < 1_000_000:
        return f"{value // 1_000}k"
    return f"{value / 1_000_000:.1f}M"


def format_cost(value: float | None) -> str:
    """$0.000137, $0.0120, $1.23: a cheap model's trial costs a few hundredths of a cent, so below a
    dollar three significant digits are kept (corral_core.report.money_text); - when there is no price."""
    return money_text(value)


def timeline_item(kind: str, summary: str, data: dict[str, Any], redact: Redactor) -> RenderableType:
    """A stored timeline entry, drawn like the live panes draw the same thing (from the event it was written
    from)."""
    event = stored_event(kind, data)
    if event is None:
        return Text(summary, style="bold")
    if event.kind is EventKind.MESSAGE:
        return message_block(event.data)
    if event.kind is EventKind.TOOL_CALL:
        return tool_call_block(event.data, redact)
    if event.kind is EventKind.ITERATION_STARTED:
        return Text(f"iteration {iteration_number(event.data.get('iteration'))}", style="bold")
    line = hook_line(event)
    if line is not None:
        return line
    return Text(summary, style="dim" if event.kind is EventKind.LLM_RESPONSE else "bold")
