"""Provider settings a researcher sets from the command line or the spec, against the fake OpenAI server:
-M / --temperature / --max-retries reach the request, requests- and tokens-per-minute budgets make calls
wait (seen through a fake clock: no test waits for real time), retries and waits are stored per trial and
exported, and a price per model gives a cost where litellm has none."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest

from corral_core.events import EventKind, ListSink
from corral_core.llm import retry
from corral_core.runner import BenchmarkRunner
from corral_core.spec import spec_from_dict
from corral_tui.cli import main
from tests.fakes.fake_openai import FakeOpenAI, FakeReply

SAMPLEMATH = Path(__file__).resolve().parents[2] / "sample_tasks" / "samplemath.yaml"
KEY_ENV = "CORRAL_TEST_FAKE_KEY"


class FakeClock:
    """Time that moves only when the code under test sleeps: waits are counted, never taken."""

    def __init__(self) -> None:
        self.now = 1_000.0
        self.slept: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


@pytest.fixture(autouse=True)
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setenv(KEY_ENV, "sk-test")
    monkeypatch.setattr(retry, "sleep", fake.sleep)
    monkeypatch.setattr(retry, "clock", lambda: fake.now)
    retry.reset_rate_limiters()
    yield fake
    retry.reset_rate_limiters()


def run(server: FakeOpenAI, tasks: list[str], trials: int = 1, **model: Any) -> list[dict[str, Any]]:
    spec = spec_from_dict({"name": "budgets", "suite": str(SAMPLEMATH), "tasks": tasks, "trials_per_task": trials,
                           "parallel": 1, "model": {"id": "openai/fake-model", "api_base": server.base_url,
                                                    "api_key_env": KEY_ENV, "timeout": 10, **model}},
                          SAMPLEMATH.parent)
    sink = ListSink()
    BenchmarkRunner(spec, sink=sink).run()
    return [e.data for e in sink.of_kind(EventKind.TRIAL_FINISHED)]


def test_requests_per_minute_makes_the_third_call_wait_half_a_minute(clock: FakeClock) -> None:
    with FakeOpenAI([FakeReply.text("Final Answer: 42")], repeat_last=True) as server:
        trials = run(server, ["add"], trials=4, requests_per_minute=2)
        sent = len(server.received)
    assert [t["status"] for t in trials] == ["completed"] * 4
    # a budget of 2 requests a minute: the first two go at once, each later one waits 30 s for a refill
    assert sent >= 4 and clock.slept == [30.0] * (sent - 2)
    assert sum(t["rate_limit_wait"] for t in trials) == pytest.approx(30.0 * (sent - 2))
    assert trials[0]["rate_limit_wait"] == 0.0 and trials[-1]["rate_limit_wait"] > 0


def test_tokens_per_minute_makes_the_call_after_an_overspend_wait(clock: FakeClock) -> None:
    with FakeOpenAI([FakeReply.text("Final Answer: 42", usage=(40, 10))], repeat_last=True) as server:
        trials = run(server, ["add"], trials=4, tokens_per_minute=100)
        sent = len(server.received)
    # 50 tokens a call, 100 a minute: calls 1-3 start (the third overspends by 50), the fourth waits 30 s
    assert sent == 4 and clock.slept == [30.0]
    assert [t["rate_limit_wait"] for t in trials] == [0.0, 0.0, 0.0, 30.0]


def test_limiter_without_limits_is_none_and_budgets_refill_with_time(clock: FakeClock) -> None:
    assert retry.rate_limiter("m", None, None, None) is None
    limiter = retry.rate_limiter("m", None, 60, None)
    assert limiter is not None and limiter is retry.rate_limiter("m", None, 60, None)  # one per model and limits
    assert [limiter.acquire() for _ in range(60)] == [0.0] * 60
    clock.now += 10  # ten seconds: ten requests of the budget are back
    assert [limiter.acquire() for _ in range(10)] == [0.0] * 10
    assert limiter.acquire() == pytest.approx(1.0)


def test_retries_and_their_waits_are_stored_per_trial_and_exported(tmp_path: Path, clock: FakeClock,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    spec_file = tmp_path / "p.bench.yaml"
    spec_file.write_text(f"name: p\nsuite: {SAMPLEMATH}\ntasks: [add]\nparallel: 1\n"
                         f"model: {{id: openai/fake-model, api_key_env: {KEY_ENV}, timeout: 10}}\n")
    replies = [FakeReply.rate_limited(retry_after="3"), FakeReply.server_error(status=503, retry_after="2"),
               FakeReply.text("Final Answer: 42")]
    with FakeOpenAI(replies) as server:
        code = main(["--batch", str(spec_file), "--db", str(tmp_path / "s.db"), "--quiet", "--model-base-url",
                     server.base_url, "--json", str(tmp_path / "run.json"), "--temperature", "0.25",
                     "--max-retries", "3", "-M", "top_p=0.5", "-M", "seed=7", "-M", "stop=[END]"])
        bodies = server.requests
    assert code == 0, capsys.readouterr().err
    assert {(b["temperature"], b["top_p"], b["seed"], tuple(b["stop"])) for b in bodies} == {(0.25, 0.5, 7, ("END",))}
    [trial] = json.loads((tmp_path / "run.json").read_text())["trials"]
    assert (trial["llm_retries"], trial["llm_retry_wait"], trial["rate_limit_wait"]) == (2, 5.0, 0.0)
    assert clock.slept == [3.0, 2.0]  # the provider's Retry-After, honoured
    benchmark_id = json.loads((tmp_path / "run.json").read_text())["benchmark_id"]
    capsys.readouterr()
    assert main(["export", benchmark_id, "--db", str(tmp_path / "s.db"), "--format", "csv"]) == 0
    [stored] = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert (stored["llm_retries"], stored["llm_retry_wait"], stored["rate_limit_wait"]) == ("2", "5.0", "0.0")


def test_max_retries_from_the_command_line_is_what_the_run_gives_up_after(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    spec_file = tmp_path / "p.bench.yaml"
    spec_file.write_text(f"name: p\nsuite: {SAMPLEMATH}\ntasks: [add]\n"
                         f"model: {{id: openai/fake-model, api_key_env: {KEY_ENV}, max_retries: 5}}\n")
    with FakeOpenAI([FakeReply.rate_limited()], repeat_last=True) as server:
        code = main(["--batch", str(spec_file), "--db", str(tmp_path / "s.db"), "--quiet", "--model-base-url",
                     server.base_url, "--json", str(tmp_path / "run.json"), "--max-retries", "1"])
        sent = len(server.received)
    [trial] = json.loads((tmp_path / "run.json").read_text())["trials"]
    assert code == 1 and sent == 2 and trial["llm_retries"] == 1 and "gave up after 1 retries" in trial["error"]
    assert "--max-retries 1" in capsys.readouterr().err  # the command that re-runs it keeps the setting


def test_a_price_per_model_gives_a_cost_where_litellm_has_none() -> None:
    reply = FakeReply.text("Final Answer: 42", usage=(1000, 100))
    with FakeOpenAI([reply], repeat_last=True, model="no-such-priced-model") as server:
        unpriced = run(server, ["add"], id="openai/no-such-priced-model")
        priced = run(server, ["add"], id="openai/no-such-priced-model", price={"input": 0.5, "output": 2.0})
        calls = len(server.received) // 2
    assert [t["cost"] for t in unpriced] == [None]
    assert priced[0]["cost"] == pytest.approx(calls * (1000 * 0.5 + 100 * 2.0) / 1e6)


@pytest.mark.parametrize(("price", "words"), [({"input": 1}, "has no `output`"), ({"input": -1, "output": 1},
                                                                                     "cannot be negative"),
                                               ("cheap", "must be a mapping")])
def test_a_wrong_price_is_refused_with_the_fix(price: Any, words: str) -> None:
    from corral_core.errors import UserError

    with pytest.raises(UserError, match=words):
        spec_from_dict({"name": "p", "suite": str(SAMPLEMATH), "model": {"id": "openai/x", "price": price}},
                       SAMPLEMATH.parent)


def test_budgets_and_price_leave_the_digest_of_a_spec_without_them_alone() -> None:
    def digest(**model: Any) -> str:
        return spec_from_dict({"name": "p", "suite": str(SAMPLEMATH), "model": {"id": "openai/x", **model}},
                              SAMPLEMATH.parent).digest

    assert digest() == digest(requests_per_minute=10, tokens_per_minute=1000)  # speed, not results
    assert digest() != digest(price={"input": 1, "output": 2})  # costs, so cost limits, change


@pytest.mark.parametrize("flags", [["--rpm", "0"], ["--temperature", "hot"], ["-M", "top_p"], ["--price", "1"],
                                   ["--max-retries", "-1"], ["-M", "temperature=1"]])
def test_wrong_provider_flags_exit_2_with_a_message(flags: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--batch", "x.bench.yaml", *flags])
    assert info.value.code == 2 and flags[0] in capsys.readouterr().err


def test_trials_of_a_store_from_before_the_wait_columns_read_zero(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    import sqlite3

    from corral_core.store import Repository, init_db, make_engine

    path = tmp_path / "old.db"
    with sqlite3.connect(path) as conn:  # a store made by corral-tui 0.1 (migrated through every revision)
        conn.executescript((Path(__file__).resolve().parent / "data" / "store_0_1.sql").read_text(encoding="utf-8"))
    engine = make_engine(path)
    init_db(engine)
    (benchmark,) = Repository(engine).list_benchmarks().items
    engine.dispose()
    assert main(["export", benchmark.id, "--db", str(path), "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert len(rows) == 10 and {(r["llm_retries"], r["llm_retry_wait"], r["rate_limit_wait"]) for r in rows} == {
        ("0", "0.0", "0.0")}


def test_extra_may_not_set_what_corral_tui_sets_itself() -> None:
    """Before: `extra: {timeout: 3}` (or -M timeout=3) was accepted and every trial then errored."""
    from corral_core.errors import UserError

    with pytest.raises(UserError, match=r"model.extra.timeout.*set by corral-tui itself"):
        spec_from_dict({"name": "p", "suite": str(SAMPLEMATH), "model": {"id": "openai/x", "extra": {"timeout": 3}}},
                       SAMPLEMATH.parent)
