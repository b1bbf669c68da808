"""A recorded benchmark as Inspect AI logs: one `.eval` log per arm, built with inspect_ai's own
classes (the `[inspect]` extra) so `read_eval_log`, `inspect view` and `evals_df` read them.

Per arm: the arm's factors (verbosity, model, agent) are the log's `task_args`; each trial is a sample
(id = task id, epoch = trial index + 1) with its conversation as chat messages, the task's metadata
from its suite, and in time order a model event per LLM call (input messages, output, usage, time) and
a tool event per tool call the environment ran; one score `corral` whose metadata keeps our status,
fault, assisted and success. The log's stats total the usage per model (`stats.model_usage`, what the
viewer's list shows as tokens); the results carry our per-arm estimates with their intervals.

A model event's input is the conversation the call was sent, rebuilt from the stored messages (the
first `n` of them, n recorded with the call) for the agent's own calls; the store keeps no request of
an extractor's, planner's or reflection's call, so theirs is empty and its metadata says so.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

from corral_core.domain import BenchmarkStatus, ToolStatus
from corral_core.env import TaskSpec, load_suite
from corral_core.errors import UserError
from corral_core.events import EventKind, MessageData, ToolCallEvent
from corral_core.interop import off_the_loop, require
from corral_core.metrics import success
from corral_core.metrics.records import RETIRED_STATUS
from corral_core.store.models import BenchmarkInfo, TimelineEntry, TrialInfo

SCORER = "corral"
AGENT_ROLE = "agent"  # the role of an agent's own calls (BaseAgent.llm_role), whose request is its conversation


def write_inspect_logs(repository: Any, info: BenchmarkInfo, output_dir: Path) -> list[Path]:
    """Write one Inspect log per arm of `info` into `output_dir`; returns the files in arm order."""
    log_module = require("inspect_ai.log", "inspect", "`export --format inspect`")
    output_dir.mkdir(parents=True, exist_ok=True)
    tasks = _tasks_of(info)
    by_arm: dict[str, list[TrialInfo]] = {arm.name: [] for arm in info.arms}
    for trial in repository.iter_trials(info.id):
        if trial.status != RETIRED_STATUS:
            by_arm.setdefault(trial.arm, []).append(trial)
    threshold = float(((info.metrics or {}).get("spec") or {}).get("pass_threshold") or 0.0)
    written = []
    for arm_name, trials in by_arm.items():
        samples = [_sample(trial, repository.timeline(trial.id), tasks.get(trial.task_id), threshold)
                   for trial in sorted(trials, key=lambda t: (t.task_id, t.trial_index))]
        log = _eval_log(info, arm_name, samples, tasks)
        path = output_dir / f"{_stamp(info.created_at)}_{_slug(info.spec_name)}-{_slug(arm_name)}_{info.id}.eval"
        off_the_loop(partial(log_module.write_eval_log, log, str(path), format="eval"))
        written.append(path)
    if not written:
        raise UserError(f"benchmark {info.id!r} has no arms with trials to export.", where="export")
    return written


def _tasks_of(info: BenchmarkInfo) -> dict[str, TaskSpec]:
    """The benchmark's tasks (prompt and expected answer), from its suites where they still load."""
    tasks: dict[str, TaskSpec] = {}
    for path in info.suites:
        try:
            tasks.update(load_suite(path).tasks)
        except (UserError, OSError):
            continue  # a sample then shows its first user message as input and no target
    return tasks


def _eval_log(info: BenchmarkInfo, arm_name: str, samples: list[Any], tasks: dict[str, TaskSpec]) -> Any:
    from inspect_ai.log import EvalConfig, EvalDataset, EvalLog, EvalPlan, EvalSpec, EvalStats

    arm = next((a for a in info.arms if a.name == arm_name), None)
    metrics = info.metrics or {}
    arm_metrics = (metrics.get("arms") or {}).get(arm_name) or {}
    task_ids = sorted({s.id for s in samples})
    model = (arm.model if arm and arm.model else info.model) or "unknown"
    finished = info.finished_at or info.created_at
    spec = EvalSpec(
        run_id=info.id, eval_id=f"{info.id}-{_slug(arm_name)}", created=info.created_at.isoformat(),
        task=info.spec_name, task_id=f"{info.id}/{arm_name}", task_display_name=f"{info.spec_name} ({arm_name})",
        task_args={"arm": arm_name, "verbosity": arm.verbosity if arm else None, "model": model,
                   "agent": (arm.agent if arm and arm.agent else info.agent)},
        dataset=EvalDataset(name=info.spec_name, samples=len(task_ids), sample_ids=list(task_ids)),
        model=model, config=EvalConfig(epochs=info.trials_per_task),
        metadata={"corral_tui": {"benchmark_id": info.id, "spec_digest": info.spec_digest, "arm": arm_name,
                                 "status": info.status, "attempt_status": info.attempt_status}},
    )
    return EvalLog(status="success" if info.status == BenchmarkStatus.FINISHED else "cancelled", eval=spec,
                   plan=EvalPlan(name=info.agent or "corral"),
                   results=_results(arm_metrics, samples), samples=samples,
                   stats=EvalStats(started_at=info.created_at.isoformat(), completed_at=finished.isoformat(),
                                   model_usage=_usage_totals(samples)))


def _usage_totals(samples: list[Any]) -> dict[str, Any]:
    """The samples' usage summed per model (ModelUsage adds up its tokens and costs)."""
    totals: dict[str, Any] = {}
    for sample in samples:
        for model, usage in (sample.model_usage or {}).items():
            totals[model] = totals[model] + usage if model in totals else usage
    return totals


def _results(arm: dict[str, Any], samples: list[Any]) -> Any:
    """Our per-arm estimates as Inspect metrics: the value, and its interval and method in metadata."""
    from inspect_ai.log import EvalMetric, EvalResults, EvalScore

    metrics: dict[str, EvalMetric] = {}

    def add(name: str, estimate: dict[str, Any] | None) -> None:
        if estimate and estimate.get("value") is not None:
            ci = estimate.get("ci")
            metrics[name] = EvalMetric(name=name, value=float(estimate["value"]), metadata={
                "ci": list(ci) if ci else None, "method": estimate.get("method"), "n": estimate.get("n"),
                "n_tasks": estimate.get("n_tasks")})

    add("average_score", arm.get("average_score"))
    add("success_rate", arm.get("success_rate"))
    add("surrender_rate", arm.get("surrender_rate"))
    add("error_rate", arm.get("error_rate"))
    for k, entry in (arm.get("pass_k") or {}).items():
        for key, label in (("pass_at_k", f"pass@{k}"), ("pass_hat_k", f"pass^{k}")):
            if isinstance(entry, dict) and entry.get(key) is not None:
                metrics[label] = EvalMetric(name=label, value=float(entry[key]),
                                            metadata={"n_tasks": entry.get("n_tasks")})
    scored = [s for s in samples if s.scores]
    return EvalResults(total_samples=len(samples), completed_samples=len(scored),
                       scores=[EvalScore(name=SCORER, scorer=SCORER, metrics=metrics)] if metrics else [])


def _sample(trial: TrialInfo, timeline: list[TimelineEntry], task: TaskSpec | None, threshold: float) -> Any:
    from inspect_ai.log import EvalSample
    from inspect_ai.model import ModelOutput, ModelUsage
    from inspect_ai.scorer import Score

    messages = list(_messages(event.data for entry in timeline
                              if (event := entry.event()) is not None and event.kind is EventKind.MESSAGE))
    events: list[Any] = []
    for entry in timeline:
        if entry.kind == "llm_call":
            events.append(_model_event(entry, messages, trial.model))
        elif (event := entry.event()) is not None and event.kind is EventKind.TOOL_CALL:
            events.append(_tool_event(event, entry.ts))
    first_user = next((m.text for m in messages if m.role == "user"), "")
    prompt = task.prompt if task is not None else first_user
    model = trial.model or "unknown"
    score = Score(value=float(trial.score) if trial.score is not None else 0.0, answer=trial.answer,
                  explanation=trial.explanation, metadata={
                      "status": trial.status, "fault": trial.fault, "assisted": trial.assisted,
                      "surrendered": trial.surrendered, "success": success(trial, threshold),
                      "error": trial.error, "scored": trial.score is not None})
    usage = ModelUsage(input_tokens=trial.prompt_tokens, output_tokens=trial.completion_tokens,
                       total_tokens=trial.total_tokens, total_cost=trial.cost)
    return EvalSample(
        id=trial.task_id, epoch=trial.trial_index + 1,
        input=prompt if isinstance(prompt, str) else json.dumps(prompt),
        target="" if task is None or task.answer is None else str(task.answer),
        messages=messages, output=ModelOutput.from_content(model, trial.answer or ""),
        scores={SCORER: score}, model_usage={model: usage}, events=events,
        metadata={**(task.metadata if task is not None else {}), "trial_id": trial.id, "arm": trial.arm,
                  "verbosity": trial.verbosity, "agent": trial.agent, "episode_id": trial.episode_id,
                  "iterations": trial.iterations},
        started_at=_iso(trial.started_at), completed_at=_iso(trial.finished_at),
        total_time=trial.duration, working_time=trial.duration,
    )


def _messages(rows: Iterator[MessageData]) -> Iterator[Any]:
    """Stored chat messages (OpenAI shapes) as Inspect chat messages."""
    from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageTool, ChatMessageUser
    from inspect_ai.tool import ToolCall

    for row in rows:
        role, content = row.get("role"), row.get("content") or ""
        if role == "system":
            yield ChatMessageSystem(content=content)
        elif role == "assistant":
            calls = [ToolCall(id=str(c.get("id") or ""), function=str((c.get("function") or {}).get("name") or ""),
                              arguments=_arguments((c.get("function") or {}).get("arguments")))
                     for c in row.get("tool_calls") or []]
            yield ChatMessageAssistant(content=content, tool_calls=calls or None)
        elif role == "tool":
            yield ChatMessageTool(content=content, tool_call_id=row.get("tool_call_id"), function=row.get("name"))
        else:
            yield ChatMessageUser(content=content)


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    try:
        parsed = json.loads(raw) if isinstance(raw, str) else {}
    except json.JSONDecodeError:
        return {"_raw": raw}
    return parsed if isinstance(parsed, dict) else {"_value": parsed}


def _model_event(entry: TimelineEntry, conversation: list[Any], trial_model: str | None) -> Any:
    """One LLM call: what it was sent (the agent's calls), what it answered, its usage and time."""
    from inspect_ai.event import ModelEvent
    from inspect_ai.model import ChatCompletionChoice, ChatMessageAssistant, GenerateConfig, ModelOutput, ModelUsage
    from inspect_ai.tool import ToolCall

    data = entry.data
    model = str(data.get("model") or trial_model or "unknown")
    sent = data.get("request_messages_n")
    rebuilt = data.get("role") == AGENT_ROLE and isinstance(sent, int) and 0 < sent <= len(conversation)
    calls = [ToolCall(id=str(c.get("id") or f"call_{i}"), function=str(c.get("name") or ""),
                      arguments=_arguments(c.get("arguments")))
             for i, c in enumerate(data.get("tool_calls") or [])]
    duration = data.get("duration")
    usage = ModelUsage(input_tokens=int(data.get("prompt_tokens") or 0),
                       output_tokens=int(data.get("completion_tokens") or 0),
                       total_tokens=int(data.get("total_tokens") or 0), total_cost=data.get("cost"))
    output = ModelOutput(model=model, usage=usage, time=duration, choices=[ChatCompletionChoice(
        message=ChatMessageAssistant(content=data.get("content") or "", tool_calls=calls or None, model=model),
        stop_reason="tool_calls" if calls else "stop")])
    started = entry.ts - timedelta(seconds=duration) if isinstance(duration, (int, float)) else entry.ts
    return ModelEvent(model=model, role=str(data.get("role") or ""), input=conversation[:sent] if rebuilt else [],
                      tools=[], tool_choice="auto" if calls else "none", config=GenerateConfig(), output=output,
                      timestamp=started, completed=entry.ts, working_time=duration,
                      metadata={"role": data.get("role"), "turn": data.get("turn"), "digest": data.get("digest"),
                                "input": "the conversation sent" if rebuilt else "not recorded for this role"})


def _tool_event(event: ToolCallEvent, ts: datetime) -> Any:
    """A tool call the environment ran, with our status, risk and approval in its metadata."""
    from inspect_ai.event import ToolEvent
    from inspect_ai.tool import ToolCallError

    data = event.data
    failed = data.get("status") not in (ToolStatus.SUCCESS, None)
    error = ToolCallError(type="unknown", message=str(data.get("error_message") or data.get("status"))) \
        if failed else None
    return ToolEvent(id=f"call-{data.get('seq')}", function=str(data.get("tool_name") or ""),
                     arguments=_arguments(data.get("arguments")), result=data.get("result") or "", error=error,
                     timestamp=ts, working_time=data.get("duration"), failed=failed or None,
                     metadata={"status": data.get("status"), "risk": data.get("risk"),
                               "approval": data.get("approval"), "iteration": data.get("iteration")})


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _stamp(value: datetime) -> str:
    """Inspect's log-name time stamp (2026-11-26T17-05-00+00-00)."""
    return value.strftime("%Y-%m-%dT%H-%M-%S+00-00")


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._]+", "-", text).strip("-") or "arm"
