"""A recorded benchmark as Inspect AI logs: one `.eval` log per arm, built with inspect_ai's own
classes (the `[inspect]` extra) so `read_eval_log`, `inspect view` and `evals_df` read them.

Per arm: the arm's factors (verbosity, model, agent) are the log's `task_args`; each trial is a sample
(id = task id, epoch = trial index + 1) with its conversation as chat messages, each tool call the
environment ran as a tool event, and one score `corral` whose metadata keeps our status, fault,
assisted and success; the results carry our per-arm estimates with their intervals.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import datetime
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
                   stats=EvalStats(started_at=info.created_at.isoformat(), completed_at=finished.isoformat()))


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
        scores={SCORER: score}, model_usage={model: usage},
        events=[_tool_event(event, entry.ts) for entry in timeline
                if (event := entry.event()) is not None and event.kind is EventKind.TOOL_CALL],
        metadata={"trial_id": trial.id, "arm": trial.arm, "verbosity": trial.verbosity, "agent": trial.agent,
                  "episode_id": trial.episode_id, "iterations": trial.iterations},
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
