"""litellm callbacks from the spec (`litellm_callbacks:`) or the CLI (`--litellm-callback`) see every LLM call."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from corral_core.errors import UserError
from corral_core.events import EventKind, ListSink
from corral_core.llm import callbacks
from corral_core.runner import BenchmarkRunner
from corral_core.spec import spec_from_dict
from tests.core.data.recording_logger import RECORDER
from tests.fakes.fake_openai import FakeOpenAI, FakeReply
from tests.timeouts import HANG

ROOT = Path(__file__).resolve().parents[2]
SAMPLEMATH = ROOT / "sample_tasks" / "samplemath.yaml"
LOGGER = "tests.core.data.recording_logger:RECORDER"


@pytest.fixture
def clean_callbacks() -> Iterator[None]:
    callbacks.reset()
    RECORDER.models.clear()
    yield
    callbacks.reset()


def test_a_spec_callback_sees_every_llm_call(clean_callbacks: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CORRAL_T_KEY", "sk-test")
    with FakeOpenAI([FakeReply.text("Final Answer: 42")], repeat_last=True) as server:
        spec = spec_from_dict({"name": "cb", "suite": str(SAMPLEMATH), "tasks": ["add"], "trials_per_task": 2,
                               "model": {"id": "openai/fake-model", "api_base": server.base_url,
                                         "api_key_env": "CORRAL_T_KEY", "max_retries": 0},
                               "litellm_callbacks": [LOGGER]}, ROOT)
        sink = ListSink()
        BenchmarkRunner(spec, sink=sink).run()
    calls = len(sink.of_kind(EventKind.LLM_RESPONSE))
    assert calls == 2
    assert RECORDER.wait_for(calls, HANG), RECORDER.models  # litellm logs on its own thread
    assert RECORDER.models == ["fake-model"] * calls
    assert callbacks.applied() == {LOGGER: RECORDER}
    assert spec.digest == spec_from_dict({**spec.data, "litellm_callbacks": None}, ROOT).digest  # not a result


def test_integration_names_go_to_litellm_as_it_documents(clean_callbacks: None) -> None:
    from corral_core.llm.client import _litellm

    litellm = _litellm()
    callbacks.use_callbacks(["mlflow", "wandb"])
    assert "mlflow" in litellm.callbacks  # a CustomLogger-compatible integration
    assert "wandb" in litellm.success_callback and "wandb" in litellm.failure_callback  # the older style
    callbacks.reset()
    assert "mlflow" not in litellm.callbacks and "wandb" not in litellm.success_callback


def test_a_callback_that_does_not_load_is_refused_in_words(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"litellm_callbacks.*litellm callback 'nowhere:THING' cannot be loaded"):
        spec_from_dict({"name": "cb", "suite": str(SAMPLEMATH), "model": "scripted/samplemath",
                        "litellm_callbacks": ["nowhere:THING"]}, ROOT)
    spec = tmp_path / "s.bench.yaml"
    spec.write_text(f"name: cb\nsuite: {SAMPLEMATH}\nmodel: scripted/samplemath\n", encoding="utf-8")
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_LOG": "ERROR"}
    run = subprocess.run([sys.executable, "-m", "corral_tui.cli", "--batch", str(spec), "--db", str(tmp_path / "x.db"),
                          "--litellm-callback", "nowhere:THING"], env=env, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 2 and "litellm callback 'nowhere:THING' cannot be loaded" in run.stderr
    assert "Traceback" not in run.stderr


def test_scripted_and_replay_calls_reach_a_callback_as_provider_calls_do(clean_callbacks: None,
                                                                         tmp_path: Path) -> None:
    """Offline models take the same litellm path, success logging included: a CustomLogger sees every
    scripted/ call (named in the spec) and every replay/ call (given as --litellm-callback is)."""
    from corral_core.batch import open_store

    engine, repository, writer = open_store(str(tmp_path / "runs.db"))
    try:
        base = {"suite": str(SAMPLEMATH), "tasks": ["add"], "trials_per_task": 2}
        sink = ListSink()
        recorded = BenchmarkRunner(spec_from_dict({**base, "name": "cb-scripted", "model": "scripted/samplemath",
                                                   "litellm_callbacks": [LOGGER]}, ROOT),
                                   sink=sink, repository=repository, writer_sink=writer).run()
        scripted_calls = len(sink.of_kind(EventKind.LLM_RESPONSE))
        assert scripted_calls >= 2
        assert RECORDER.wait_for(scripted_calls, HANG), RECORDER.models  # litellm logs on its own thread
        assert RECORDER.models == ["samplemath"] * scripted_calls
        writer.flush()
        RECORDER.models.clear()
        callbacks.reset()
        callbacks.use_callbacks([LOGGER])  # what --litellm-callback does
        sink = ListSink()
        BenchmarkRunner(spec_from_dict({**base, "name": "cb-replay", "model": f"replay/{recorded.benchmark_id}"},
                                       ROOT), sink=sink, repository=repository, writer_sink=writer).run()
        replay_calls = len(sink.of_kind(EventKind.LLM_RESPONSE))
        assert replay_calls == scripted_calls
        assert RECORDER.wait_for(replay_calls, HANG), RECORDER.models
        assert RECORDER.models == [recorded.benchmark_id] * replay_calls
    finally:
        writer.close()
        engine.dispose()
