"""A litellm CustomLogger that keeps what it is told, for the callback pass-through tests."""

from __future__ import annotations

import threading
from typing import Any

from litellm.integrations.custom_logger import CustomLogger


class RecordingLogger(CustomLogger):
    def __init__(self) -> None:
        super().__init__()
        self.models: list[str] = []
        self.changed = threading.Condition()

    def log_success_event(self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any) -> None:
        with self.changed:
            self.models.append(str(kwargs.get("model")))
            self.changed.notify_all()

    def wait_for(self, count: int, timeout: float) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: len(self.models) >= count, timeout)


RECORDER = RecordingLogger()
