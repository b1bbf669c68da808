"""Many trials of one task at once: each trial's tool calls and score are its own."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

THREADS = 8
TRIALS_PER_THREAD = 25


def run_trial(router, worker: int, index: int) -> dict:
    marker = f"w{worker}-t{index}"
    right = (worker + index) % 2 == 0
    trial = router.open_trial("add", benchmark_id="concurrency", trial_index=index)
    try:
        echoed = trial.execute_tool("add", "echo", {"text": marker})
        summed = trial.execute_tool("add", "add", {"a": worker, "b": index})
        result = trial.submit_answer("add", "5" if right else "6")
        return {"marker": marker, "right": right, "trial": trial.trial_id, "echoed": echoed,
                "summed": summed, "result": result, "worker": worker, "index": index}
    finally:
        trial.close()


def test_parallel_trials_on_one_task_stay_separate(served_factory):
    served = served_factory()
    router = served.client  # one pooled client shared by every thread
    with ThreadPoolExecutor(THREADS) as pool:
        futures = [pool.submit(run_trial, router, w, i) for w in range(THREADS) for i in range(TRIALS_PER_THREAD)]
        outcomes = [f.result(timeout=60) for f in futures]

    assert len({o["trial"] for o in outcomes}) == THREADS * TRIALS_PER_THREAD
    for o in outcomes:
        assert o["echoed"].result == o["marker"]
        assert o["summed"].result == str(o["worker"] + o["index"])
        result = o["result"]
        assert result.trial_id == o["trial"] == result.state["trial_id"]
        assert result.score == (1.0 if o["right"] else 0.0)
        calls = result.tool_statistics["tool_calls"]
        assert [c["tool_name"] for c in calls] == ["echo", "add"]
        assert calls[0]["arguments"] == {"text": o["marker"]}
        assert calls[1]["arguments"] == {"a": o["worker"], "b": o["index"]}
    assert router.health()["open_trials"] == 0


def test_concurrent_calls_on_a_task_route_are_serialised(served_factory):
    served = served_factory()
    router = served.client
    with ThreadPoolExecutor(THREADS) as pool:
        responses = list(pool.map(lambda i: router.execute_tool("echo", "echo", {"text": str(i)}), range(200)))
    assert all(r.success for r in responses)
    stats = router.get_task_status("echo")["tool_statistics"]
    assert stats["total_calls"] == 200
    assert sorted(int(c["arguments"]["text"]) for c in stats["tool_calls"]) == list(range(200))
