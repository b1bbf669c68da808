"""The compare screen of a running (or interrupted) benchmark computes Holm over every pair of arms,
through the same call as batch: before, it compared each arm with the first alone and printed the
unadjusted p as "Holm p" ("C better ... Holm p=0.032" where batch said "no clear difference ... 0.063")."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import insert

from corral_core.metrics import analyse
from corral_core.runner import stored_benchmark_records
from corral_core.store import ArmInfo, Repository, init_db, make_engine
from corral_core.store.tables import trial_table
from corral_tui.analysis import compare_view

SCORES = {"minimal": [0.1] * 8, "brief": [0.4] * 6 + [0.1] * 2, "full": [0.5, 0.3, 0.5, 0.3, 0.4, 0.4, 0.2, 0.2]}


def test_a_running_benchmark_is_compared_like_batch_with_holm_over_every_pair(tmp_path: Path) -> None:
    engine = make_engine(tmp_path / "store.db")
    init_db(engine)
    try:
        repo = Repository(engine, id_factory=lambda: "bm_run")
        repo.create_benchmark(spec_name="running", spec_digest="d", arms=[ArmInfo(name) for name in SCORES],
                              trials_per_task=1)
        rows = [{"id": f"tr_{arm}_{t}", "benchmark_id": "bm_run", "arm": arm, "task_id": f"t{t}", "trial_index": 0,
                 "episode_id": None, "agent": "react", "model": "m", "verbosity": None, "status": "completed",
                 "score": score, "answer": "x", "explanation": None, "surrendered": False, "error": None,
                 "fault": None, "prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2, "cost": None,
                 "duration": 1.0, "tool_duration": 0.0, "iterations": 1, "assisted": False,
                 "started_at": datetime(2025, 1, 1, tzinfo=UTC), "finished_at": datetime(2025, 1, 1, tzinfo=UTC)}
                for arm, scores in SCORES.items() for t, score in enumerate(scores)]
        with engine.begin() as conn:
            conn.execute(insert(trial_table), rows)
        view = compare_view(repo, "bm_run")
        records = list(stored_benchmark_records(repo, repo.get_benchmark("bm_run")))
        batch = analyse(records, list(SCORES))
    finally:
        engine.dispose()
    assert not view.stored
    assert view.comparisons == [(c.arm_a, c.arm_b, c.summary) for c in batch.comparisons]
    assert [(a, b) for a, b, _ in view.comparisons] == [("minimal", "brief"), ("minimal", "full"), ("brief", "full")]
    brief = view.comparisons[0][2]
    assert "Holm p=0.063" in brief and "Holm over 3 pairs" in brief and "better" not in brief.split(" — ")[0]
