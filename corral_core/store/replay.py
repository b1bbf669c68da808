"""The store as the recording behind `replay/<benchmark_id>` models (see corral_core.llm.replay)."""

from __future__ import annotations

from sqlalchemy import Engine

from corral_core.llm.replay import RecordedResponse
from corral_core.store.repository import Repository


class StoreReplaySource:
    """A `ReplaySource` reading the `llm_call` rows a past benchmark wrote.

    Install it for the process with ``corral_core.llm.set_replay_source(StoreReplaySource(engine))``, or
    for one run with ``corral_core.llm.replay_scope(benchmark_ids, StoreReplaySource(engine))``.
    """

    def __init__(self, engine: Engine) -> None:
        self._repository = Repository(engine)

    def lookup(
        self, benchmark_id: str, arm: str, task_id: str, trial_index: int, role: str, turn: int
    ) -> RecordedResponse | None:
        call = self._repository.llm_response(benchmark_id, arm, task_id, int(trial_index), role, int(turn))
        if call is None:
            return None
        data = {
            "content": call.content,
            "tool_calls": call.tool_calls,
            "usage": call.usage,
            "digest": call.digest,
        }
        return RecordedResponse.from_event_data(data, n_messages=call.n_messages)
