"""The `replay/<benchmark_id>` model: answers with the LLM responses a past benchmark recorded.

Recordings come from a pluggable `ReplaySource`: one installed for the process (`set_replay_source`),
or one scoped to a run (`replay_scope`, which the runner uses: its sources go when the run ends).
`JsonlReplaySource` reads LLM_RESPONSE (and LLM_REQUEST) event dicts, one JSON object per line;
`write_replay_jsonl` writes them from events. The store offers its own source. A request whose digest
differs from the recorded one fails with LLMError kind "replay_divergence": the agent no longer asks what it asked then.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from corral_core.errors import UserError
from corral_core.llm.types import CallContext, LLMError, LLMToolCall, Usage, shown_turn

_REQUEST, _RESPONSE = "llm_request", "llm_response"


@dataclass
class RecordedResponse:
    """One recorded LLM answer; `n_messages` (when known) explains digest mismatches."""

    content: str | None
    tool_calls: list[LLMToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    digest: str | None = None
    n_messages: int | None = None

    @classmethod
    def from_event_data(cls, data: dict[str, Any], n_messages: int | None = None) -> RecordedResponse:
        """Build from LLM_RESPONSE event data ({content, tool_calls:[{id,name,arguments}], usage, digest})."""
        calls = []
        for index, call in enumerate(data.get("tool_calls") or []):
            arguments = call.get("arguments", "{}")
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments, ensure_ascii=False)
            calls.append(LLMToolCall(id=str(call.get("id") or f"call_replay_{index}"), name=str(call.get("name")),
                                     arguments=arguments))
        return cls(content=data.get("content"), tool_calls=calls, usage=Usage.from_dict(data.get("usage")),
                   digest=data.get("digest") or None, n_messages=n_messages)


@runtime_checkable
class ReplaySource(Protocol):
    """Where replay finds recordings, keyed by benchmark, arm, task, trial, role and turn."""

    def lookup(self, benchmark_id: str, arm: str, task_id: str, trial_index: int, role: str,
               turn: int) -> RecordedResponse | None: ...


_source: ReplaySource | None = None
_source_lock = threading.Lock()


def set_replay_source(source: ReplaySource | None) -> ReplaySource | None:
    """Install the source `replay/...` models read from (None removes it); returns the previous one."""
    global _source
    with _source_lock:
        previous, _source = _source, source
    return previous


def get_replay_source(benchmark_id: str | None = None) -> ReplaySource | None:
    """The source `replay/<benchmark_id>` reads: the innermost run's scope for that benchmark, else the
    process-wide one, if any."""
    with _source_lock:
        scoped = _scoped.get(benchmark_id or "")
        return scoped[-1] if scoped else _source


_scoped: dict[str, list[ReplaySource]] = {}  # benchmark id -> the sources of the runs replaying it, newest last


@contextlib.contextmanager
def replay_scope(benchmark_ids: Iterable[str], source: ReplaySource) -> Iterator[None]:
    """`replay/<id>` models of these benchmarks read `source` while the block runs; after it (even when it
    raises) they read what they read before. Runs that overlap (a workbench's run and a fork) each keep theirs."""
    ids = sorted(set(benchmark_ids))
    with _source_lock:
        for benchmark_id in ids:
            _scoped.setdefault(benchmark_id, []).append(source)
    try:
        yield
    finally:
        with _source_lock:
            for benchmark_id in ids:
                stack = _scoped[benchmark_id]
                del stack[max(i for i, s in enumerate(stack) if s is source)]
                if not stack:
                    del _scoped[benchmark_id]


ReplayKey = tuple[str, str, str, int, str, int]


class JsonlReplaySource:
    """Recordings from a JSONL file of event dicts (Event.to_dict() shape), read once at creation."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._records: dict[ReplayKey, RecordedResponse] = {}
        self._load()

    def __len__(self) -> int:
        return len(self._records)

    def lookup(self, benchmark_id: str, arm: str, task_id: str, trial_index: int, role: str,
               turn: int) -> RecordedResponse | None:
        return self._records.get((benchmark_id, arm, task_id, int(trial_index), role, int(turn)))

    def _load(self) -> None:
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise UserError(f"cannot read replay file ({exc.strerror}).", file=self.path,
                            fix="pass the path of a JSONL file written by write_replay_jsonl.") from None
        requests: dict[tuple[Any, str, int], int] = {}
        responses: list[tuple[ReplayKey, Any, dict[str, Any]]] = []
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except json.JSONDecodeError as exc:
                raise UserError(f"not a JSON object ({exc.msg}).", file=self.path, where=f"line {number}",
                                fix="one event dict per line, as written by write_replay_jsonl.") from None
            if not isinstance(event, dict):
                raise UserError("not a JSON object.", file=self.path, where=f"line {number}",
                                fix="one event dict per line, as written by write_replay_jsonl.")
            kind, data = event.get("kind"), event.get("data") or {}
            if kind == _REQUEST:
                requests[(event.get("trial_id"), str(data.get("role", "agent")), int(data.get("turn", 0)))] = int(
                    data.get("n_messages") or 0)
            elif kind == _RESPONSE:
                key = (str(event.get("benchmark_id") or ""), str(data.get("arm") or ""),
                       str(event.get("task_id") or ""), int(data.get("trial_index") or 0),
                       str(data.get("role") or "agent"), int(data.get("turn") or 0))
                responses.append((key, event.get("trial_id"), data))
        for key, trial_id, data in responses:
            n_messages = requests.get((trial_id, key[4], key[5])) or None
            self._records[key] = RecordedResponse.from_event_data(data, n_messages=n_messages)


def write_replay_jsonl(events: Iterable[Any], path: str | Path) -> int:
    """Write the LLM_REQUEST/LLM_RESPONSE events (Event objects or their dicts) as JSONL; returns lines written."""
    written = 0
    with Path(path).open("w", encoding="utf-8") as out:
        for event in events:
            record = event.to_dict() if hasattr(event, "to_dict") else dict(event)
            kind = record.get("kind")
            kind = getattr(kind, "value", kind)
            if kind not in (_REQUEST, _RESPONSE):
                continue
            record["kind"] = kind
            out.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
            written += 1
    return written


def replay_turn(benchmark_id: str, context: CallContext, digest: str | None,
                n_messages: int | None) -> RecordedResponse:
    """The recorded answer for this call, or LLMError("replay_divergence") saying what differs."""
    source = get_replay_source(benchmark_id)
    where = (f"task '{context.task_id}', arm '{context.arm}', trial {context.trial_index}, "
             f"{context.role} turn {shown_turn(context.turn)}")
    if source is None:
        raise LLMError("replay_divergence", f"replay/{benchmark_id}: no replay source is installed, so {where} "
                                            "cannot be replayed. Fix: call set_replay_source(...) (e.g. a "
                                            "JsonlReplaySource or the store's source) before running.")
    recorded = source.lookup(benchmark_id, context.arm, context.task_id, context.trial_index, context.role,
                             context.turn)
    if recorded is None:
        raise LLMError("replay_divergence", f"replay/{benchmark_id}: nothing recorded for {where}. The run asks "
                                            "for a call the recorded run did not make. Fix: replay with the same "
                                            f"tasks, arms and trials as benchmark {benchmark_id}.")
    if recorded.digest and digest and recorded.digest != digest:
        if recorded.n_messages and n_messages is not None and recorded.n_messages != n_messages:
            what = f"{n_messages} messages now vs {recorded.n_messages} recorded"
        else:
            count = f" ({n_messages})" if n_messages is not None else ""
            what = f"same message count{count} but different message text or tools"
        raise LLMError("replay_divergence", f"replay/{benchmark_id}: the request for {where} differs from the "
                                            f"recording: {what} (digest {digest[:12]} vs {recorded.digest[:12]}). "
                                            "Fix: replay with the same agent, prompts, tools and verbosity.")
    return recorded
