"""LLM layer basics: lazy litellm import, data types, settings checks, request digests."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from corral_core.llm import ERROR_KINDS, LLMError, LLMToolCall, ModelSettings, Usage, request_digest
from tests.timeouts import HANG

REPO = Path(__file__).resolve().parents[2]


def test_importing_the_llm_layer_does_not_import_litellm() -> None:
    code = (
        "import sys, corral_core.llm, corral_core.llm.replay, corral_core.llm.scripted\n"
        "from corral_core.llm import ModelSettings, completion, CallContext\n"
        "print('litellm' in sys.modules, 'openai' in sys.modules)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=HANG,
                         cwd=REPO)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "False"]


def test_first_call_sets_offline_env_before_importing_litellm() -> None:
    code = (
        "import os, sys\n"
        "os.environ.pop('LITELLM_LOCAL_MODEL_COST_MAP', None); os.environ.pop('LITELLM_LOG', None)\n"
        "from corral_core.llm import ModelSettings, completion, CallContext\n"
        "r = completion(ModelSettings('scripted/samplemath'), [{'role': 'user', 'content': 'x'}],"
        " context=CallContext('add', turn=1))\n"
        "assert 'litellm' not in sys.modules  # an offline call needs no litellm\n"
        "from corral_core.llm.client import litellm_module\n"
        "litellm = litellm_module()\n"
        "print(os.environ['LITELLM_LOCAL_MODEL_COST_MAP'], os.environ['LITELLM_LOG'],"
        " litellm.suppress_debug_info, '42' in r.content)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("LITELLM_")}
    env["PYTHONPATH"] = str(REPO)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=HANG,
                         cwd=REPO)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "ERROR", "True", "True"]


def test_usage_adds_up() -> None:
    total = Usage(10, 5, 15) + Usage(3, 2, 5)
    assert total == Usage(13, 7, 20)
    assert sum([Usage(1, 1, 2), Usage(2, 2, 4)], Usage()) == Usage(3, 3, 6)
    assert Usage.from_dict({"prompt_tokens": 4, "completion_tokens": 2}) == Usage(4, 2, 6)


def test_llm_error_keeps_kind_and_message() -> None:
    error = LLMError("rate_limit", "slow down", status_code=429)
    assert (error.kind, error.message, str(error)) == ("rate_limit", "slow down", "slow down")
    copy = pickle.loads(pickle.dumps(error))  # crosses process boundaries intact
    assert (copy.kind, copy.message, copy.status_code) == ("rate_limit", "slow down", 429)
    assert "rate_limit" in ERROR_KINDS and "replay_divergence" in ERROR_KINDS
    with pytest.raises(ValueError, match="unknown LLMError kind"):
        LLMError("oops", "x")  # type: ignore[arg-type]


def test_tool_call_converts_to_an_assistant_message_entry() -> None:
    call = LLMToolCall(id="c1", name="calculator", arguments='{"a": 1}')
    assert call.to_message() == {"id": "c1", "type": "function",
                                 "function": {"name": "calculator", "arguments": '{"a": 1}'}}


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"model": ""}, "non-empty model id"),
        ({"model": "openai/x", "timeout": 0}, "timeout"),
        ({"model": "openai/x", "max_retries": -1}, "max_retries"),
        ({"model": "openai/x", "extra": {"timeout": 3}}, "set by corral-tui itself"),
        ({"model": "openai/x", "timeout": "soon"}, "seconds, greater than 0"),
    ],
)
def test_model_settings_reject_bad_values(kwargs: dict, fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment):
        ModelSettings(**kwargs)


def test_request_digest_is_canonical() -> None:
    messages = [{"role": "user", "content": "hi", "name": "u"}]
    reordered = [{"name": "u", "content": "hi", "role": "user"}]
    assert request_digest(messages) == request_digest(reordered) == request_digest(messages, [])
    assert len(request_digest(messages)) == 64
    assert request_digest(messages) != request_digest([{"role": "user", "content": "hi!", "name": "u"}])
    assert request_digest(messages) != request_digest(messages, [{"type": "function", "function": {"name": "f"}}])


def test_model_settings_coerce_numbers_from_config_text() -> None:
    settings = ModelSettings("openai/x", temperature="0", timeout="30", max_retries="2", extra=None)
    assert (settings.temperature, settings.timeout, settings.max_retries, settings.extra) == (0.0, 30.0, 2, {})


def test_preload_imports_litellm_ahead_of_the_first_call_freezes_that_heap_once_and_spaces_young_collections():
    import subprocess
    import sys

    code = ("import gc, sys, corral_core.llm as llm; assert 'litellm' not in sys.modules; "
            "assert gc.get_freeze_count() == 0; llm.preload(); frozen = gc.get_freeze_count(); "
            "later = [[i] for i in range(1000)]; llm.preload(); "
            "print('litellm' in sys.modules, frozen > 100_000, gc.get_freeze_count() == frozen); "
            "young = []; gc.callbacks.append(lambda phase, info: young.append(1) if phase == 'start' else None); "
            "live = [[i] for i in range(5000)]; print(len(young))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=HANG)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "True", "True", "0"]  # 5,000 new lists: no collection yet
