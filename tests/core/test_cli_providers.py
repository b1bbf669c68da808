"""Provider settings from the command line: `.env`, --model-base-url, --max-connections, and spec keys."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from corral_core.errors import UserError
from corral_core.spec import spec_from_dict
from corral_tui.cli import load_env_file
from tests.fakes.fake_openai import FakeOpenAI, FakeReply
from tests.inprocess import run_cli

SAMPLEMATH = Path(__file__).resolve().parents[2] / "sample_tasks" / "samplemath.yaml"


def spec(**model) -> object:
    return spec_from_dict({"name": "p", "suite": str(SAMPLEMATH), "tasks": ["add"],
                           "model": {"id": "openai/fake-model", **model},
                           "arms": [{"name": "a", "verbosity": "brief"},
                                    {"name": "b", "verbosity": "full", "model": "hosted_vllm/other"}]},
                          SAMPLEMATH.parent)


def test_max_connections_is_a_model_key_of_at_least_one() -> None:
    assert spec(max_connections=3).arms[0].model.max_connections == 3
    assert spec().arms[0].model.max_connections is None and spec().arms[0].model.max_retries > 0
    with pytest.raises(UserError, match="max_connections"):
        spec(max_connections=0)


def test_overrides_reach_every_arm_and_max_connections_leaves_the_digest_alone() -> None:
    base = spec()
    changed = base.with_overrides(api_base="http://127.0.0.1:9/v1", max_connections=2)
    assert [(a.model.id, a.model.api_base, a.model.max_connections) for a in changed.arms] == [
        ("openai/fake-model", "http://127.0.0.1:9/v1", 2), ("hosted_vllm/other", "http://127.0.0.1:9/v1", 2)]
    assert base.with_overrides(max_connections=2).digest == base.digest
    assert changed.digest != base.digest  # another endpoint may be another model


def test_env_file_is_loaded_without_overriding_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    (tmp_path / ".env").write_text("CORRAL_T_FROM_FILE_KEY=file\nCORRAL_T_SET_KEY=file\n")
    inner = tmp_path / "sub"
    inner.mkdir()
    monkeypatch.chdir(inner)
    monkeypatch.setenv("CORRAL_T_SET_KEY", "shell")
    monkeypatch.delenv("CORRAL_T_FROM_FILE_KEY", raising=False)
    assert load_env_file() == str(tmp_path / ".env")
    assert os.environ["CORRAL_T_FROM_FILE_KEY"] == "file" and os.environ["CORRAL_T_SET_KEY"] == "shell"


def test_an_env_file_sets_provider_keys_and_settings_only_and_says_what_it_ignored(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: a .env in any parent folder set CORRAL_TUI_DB (results to another store), CORRAL_TUI_CONFIG,
    CORRAL_TUI_LITELLM_CALLBACK (a module imported), OTEL_EXPORTER_OTLP_ENDPOINT..., silently."""
    provider = {"OPENAI_API_KEY": "sk-dotenv-1234567890", "ANTHROPIC_API_KEY": "sk-ant-0987654321",
                "OPENAI_API_BASE": "http://127.0.0.1:9/v1", "AZURE_API_VERSION": "2024-06-01",
                "HF_TOKEN": "hf_abcdefgh12345678", "AWS_REGION_NAME": "eu-west-1"}
    refused = {"CORRAL_TUI_DB": str(tmp_path / "elsewhere.db"), "CORRAL_TUI_CONFIG": str(tmp_path / "quiet.toml"),
               "CORRAL_TUI_MODEL_BASE_URL": "http://127.0.0.1:9/v1", "CORRAL_TUI_LITELLM_CALLBACK": "evil:cb",
               "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9", "LITELLM_LOG": "DEBUG",
               "PYTHONPATH": str(tmp_path), "HTTPS_PROXY": "http://127.0.0.1:9", "CORRAL_TUI_SECRET_KEY": "x" * 12}
    (tmp_path / ".env").write_text("".join(f"{k}={v}\n" for k, v in {**provider, **refused}.items()))
    inner = tmp_path / "deep" / "er"
    inner.mkdir(parents=True)
    monkeypatch.chdir(inner)
    for name in [*provider, *refused]:
        monkeypatch.delenv(name, raising=False)
    assert load_env_file() == str(tmp_path / ".env")
    assert {name: os.environ.get(name) for name in provider} == provider
    assert {name: os.environ.get(name) for name in refused} == dict.fromkeys(refused)
    said = capsys.readouterr().err
    assert said.count("\n") == 1 and f"{tmp_path / '.env'}: ignored " in said
    assert all(name in said for name in refused) and "provider keys and settings only" in said


def test_batch_with_env_file_model_base_url_and_max_connections_survives_rate_limits(tmp_path: Path) -> None:
    (tmp_path / "p.bench.yaml").write_text(
        f"name: p\nsuite: {SAMPLEMATH}\ntasks: [add, multiply]\ntrials_per_task: 2\nparallel: 4\n"
        "model: {id: openai/fake-model, api_key_env: CORRAL_T_KEY, timeout: 20}\n")
    (tmp_path / ".env").write_text("CORRAL_T_KEY=sk-from-dotenv\n")
    env = {k: v for k, v in os.environ.items() if k != "CORRAL_T_KEY"}
    env.update(LITELLM_LOCAL_MODEL_COST_MAP="True", LITELLM_LOG="ERROR")
    replies = [FakeReply.rate_limited(), FakeReply.text("Final Answer: 42")]
    with FakeOpenAI(replies * 4, hold=False) as server:
        proc = run_cli("--batch", "p.bench.yaml", "--db", "x.db", "--json", "out.json", "--model-base-url",
                       server.base_url, "--max-connections", "1", "--quiet", cwd=tmp_path, env=env)
        keys = {r.headers.get("authorization") for r in server.received}
        peak, sent = server.max_in_flight, len(server.received)
    assert proc.returncode in (0, 1), proc.stderr
    trials = json.loads((tmp_path / "out.json").read_text())["trials"]
    assert [t["status"] for t in trials] == ["completed"] * 4, proc.stderr
    assert keys == {"Bearer sk-from-dotenv"} and sent == 8 and peak == 1
