"""The LLM layer: `completion()` over litellm, plus the offline `scripted/` and `replay/` models.

Importing this package does not import litellm; the first `completion()` call does.
"""

from corral_core.llm.client import completion, preload
from corral_core.llm.known import missing_credentials, model_problem, unlisted_problem
from corral_core.llm.replay import (
    JsonlReplaySource,
    RecordedResponse,
    ReplaySource,
    get_replay_source,
    replay_scope,
    set_replay_source,
    write_replay_jsonl,
)
from corral_core.llm.scripted import SCRIPTS_ENV, find_script, script_dirs
from corral_core.llm.types import (
    ERROR_KINDS,
    CallContext,
    LLMError,
    LLMResult,
    LLMToolCall,
    ModelSettings,
    Usage,
    request_digest,
)

__all__ = [
    "ERROR_KINDS",
    "SCRIPTS_ENV",
    "CallContext",
    "JsonlReplaySource",
    "LLMError",
    "LLMResult",
    "LLMToolCall",
    "ModelSettings",
    "RecordedResponse",
    "ReplaySource",
    "Usage",
    "completion",
    "find_script",
    "get_replay_source",
    "missing_credentials",
    "model_problem",
    "preload",
    "replay_scope",
    "request_digest",
    "script_dirs",
    "set_replay_source",
    "unlisted_problem",
    "write_replay_jsonl",
]
