"""Through the runner and the store: a run that only errored is stored as `errored`, never `first`, and
the next run is compared with the last run that measured the agent."""

from __future__ import annotations

from pathlib import Path

import pytest

from corral_core.llm import retry
from tests.core.test_retry_errors import KEY_ENV, make_spec, run
from tests.fakes.fake_openai import FakeOpenAI, FakeReply


@pytest.fixture(autouse=True)
def fake_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test")
    monkeypatch.setattr(retry, "sleep", lambda seconds: None)


def test_an_errored_run_is_never_first_nor_the_best_earlier_run(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    broken = FakeReply(status=400, error_message="malformed request")
    ok = FakeReply.text("Final Answer: 42")  # right for `add` only: a headline of 1/3
    with FakeOpenAI([broken] * 6) as server:
        spec = make_spec(server)
        errored = run(spec, db)
        server.push(*[ok] * 6)
        measured = run(spec, db)
        server.push(*[ok] * 6)
        again = run(spec, db)
    assert errored.attempt_status == "errored" and errored.errored == 6
    assert errored.attempt is not None and "6 of 6 attempted trials errored" in errored.attempt.text
    # errored trials are missing, so the errored run has no headline, and it is not the run compared with
    assert errored.headline_score is None
    assert measured.attempt_status == "first" and measured.previous_best is None
    assert again.attempt is not None and again.attempt.previous_id == measured.benchmark_id
    assert again.attempt_status == "no_change" and again.attempt.n_earlier == 1
    assert again.to_dict()["attempt"]["text"].startswith("no detectable change")
