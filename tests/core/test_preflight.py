"""A run that can only produce errors is refused before any trial and before anything is stored: a model
name a hosted provider does not list (a typo, with a did-you-mean) and a provider key missing from the
environment (litellm's own check) exit 2 in words; an unlisted model with an API base runs on purpose."""

from __future__ import annotations

from pathlib import Path

import pytest

from corral_core.errors import UserError
from corral_core.spec import spec_from_dict
from corral_core.spec.preflight import check_models

ROOT = Path(__file__).resolve().parents[2]
SAMPLEMATH = ROOT / "sample_tasks" / "samplemath.yaml"


def _batch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
           *args: str) -> tuple[int, str]:
    from corral_tui.cli import main

    spec = tmp_path / "run.bench.yaml"
    spec.write_text(f"name: run\nsuite: {SAMPLEMATH}\nmodel: scripted/samplemath\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)  # no .env of the developer's is read
    code = main(["--batch", str(spec), "--db", str(tmp_path / "x.db"), "--quiet", *args])
    return code, capsys.readouterr().err


def test_batch_refuses_a_typo_under_a_known_provider_with_a_did_you_mean(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    code, stderr = _batch(tmp_path, monkeypatch, capsys, "--model", "openai/gpt-4o-mnii")
    assert code == 2, stderr
    assert "'openai/gpt-4o-mnii' is not a model litellm" in stderr and "did you mean openai/gpt-4o-mini" in stderr
    assert "give its API base" in stderr  # how to run an unlisted model on purpose
    assert "Traceback" not in stderr and not (tmp_path / "x.db").exists()


def test_batch_refuses_a_model_whose_key_is_not_in_the_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    code, stderr = _batch(tmp_path, monkeypatch, capsys, "--model", "openai/gpt-4o-mini")
    assert code == 2, stderr
    assert "needs its provider's API key in OPENAI_API_KEY, which is not set" in stderr
    assert "export OPENAI_API_KEY=<your key>" in stderr
    assert "Traceback" not in stderr and not (tmp_path / "x.db").exists()


def _spec(model: object) -> object:
    return spec_from_dict({"name": "m", "suite": str(SAMPLEMATH), "model": model}, SAMPLEMATH.parent)


def test_both_problems_of_one_model_are_named_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(UserError) as refused:
        check_models(_spec("anthropic/claude-sonet-4-5"), file=None, where="model", fix="-")
    text = str(refused.value)
    assert "2 problems" in text and "did you mean" in text and "ANTHROPIC_API_KEY" in text


def test_an_unlisted_model_runs_on_purpose_with_its_api_base(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    check_models(_spec({"id": "openai/my-finetune", "api_base": "http://127.0.0.1:9/v1"}), file=None, where="model",
                 fix="-")  # a custom deployment: its name is its own


def test_an_openai_route_to_a_local_server_needs_a_key_and_says_a_dummy_one_does(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """litellm's openai/ route goes through the OpenAI SDK, which will not call without a key, API base or
    not: 20 of 20 trials errored `Missing credentials` (issue 36). Refused before the run, with the fix."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(UserError) as refused:
        check_models(_spec({"id": "openai/local-model", "api_base": "http://127.0.0.1:9/v1"}), file=None,
                     where="model", fix="-")
    text = str(refused.value)
    assert "needs its provider's API key in OPENAI_API_KEY" in text
    assert "export OPENAI_API_KEY=dummy" in text and "http://127.0.0.1:9/v1" in text


def test_a_keyless_route_with_an_api_base_is_not_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """litellm's hosted_vllm/ and ollama/ routes call a local server without a key: no key is asked for."""
    for variable in ("OPENAI_API_KEY", "HOSTED_VLLM_API_KEY", "OLLAMA_API_KEY"):
        monkeypatch.delenv(variable, raising=False)
    for model in ("hosted_vllm/local-model", "ollama/llama3"):
        check_models(_spec({"id": model, "api_base": "http://127.0.0.1:9/v1"}), file=None, where="model", fix="-")


def test_a_named_key_variable_is_the_one_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.delenv("TEAM_OPENAI_KEY", raising=False)
    spec = _spec({"id": "openai/gpt-4o-mini", "api_key_env": "TEAM_OPENAI_KEY"})
    with pytest.raises(UserError, match="TEAM_OPENAI_KEY"):
        check_models(spec, file=None, where="model", fix="-")
    monkeypatch.setenv("TEAM_OPENAI_KEY", "sk-team")
    check_models(spec, file=None, where="model", fix="-")
