"""Whole-benchmark reads on any database: keyset pages give every trial once, in order, across page
boundaries and ties; the streamed export writes the bytes the old all-in-memory export wrote.
tests/core/test_store_streaming.py runs these on SQLite, tests/postgres/test_pg_streaming.py on PostgreSQL."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, insert

from corral_core import report
from corral_core.batch import export_main
from corral_core.metrics.records import RETIRED_STATUS, retired_index
from corral_core.runner.results import trial_row
from corral_core.store import ArmInfo, Repository
from corral_core.store.tables import tool_call_table, trial_table

BASE = datetime(2025, 1, 1, tzinfo=UTC)
BM = "bm_stream"


def fill(engine: Engine, n: int = 60) -> list[dict[str, Any]]:
    """A benchmark of `n` trials whose start times tie in groups of five (and three have none), with
    odd values (quotes, newlines, unicode, None) and a retired attempt; tool calls on every third."""
    repo = Repository(engine, id_factory=lambda: BM)
    repo.create_benchmark(spec_name="stream", spec_digest="d", arms=[ArmInfo("a"), ArmInfo("b")],
                          trials_per_task=n)
    rows = []
    for i in range(n):
        arm, task, index = ("a", "b")[i % 2], f"t{(i // 2) % 4}", i // 8
        rows.append({
            "id": f"tr_{(i * 37) % 1000:04d}", "benchmark_id": BM, "arm": arm, "task_id": task,
            "trial_index": retired_index(index, 1) if i == 5 else index, "episode_id": None,
            "agent": "react", "model": "m", "verbosity": None,
            "status": RETIRED_STATUS if i == 5 else ("completed", "error", "surrendered", "timeout")[i % 4],
            "score": None if i % 7 == 0 else (i % 3) / 2, "answer": ('say "hi",\nthen ünïcode ✓' if i % 5 == 0
                                                                    else str(i)),
            "explanation": None, "surrendered": i % 4 == 2, "error": "boom" if i % 4 == 1 else None,
            "fault": "agent" if i % 4 == 1 else None, "prompt_tokens": i, "completion_tokens": 1,
            "total_tokens": i + 1, "cost": None if i % 2 else 0.001 * i, "duration": 0.5 * i,
            "tool_duration": 0.1, "iterations": 2, "assisted": i % 9 == 0,
            "started_at": None if i in (3, 4, 40) else BASE + timedelta(seconds=i // 5),
            "finished_at": BASE + timedelta(seconds=i),
        })
    calls = [{"trial_id": row["id"], "seq": seq, "tool_name": f"tool{seq}", "status": ("success", "timeout")[seq],
              "duration": 0.01 * seq, "ts": BASE}
             for i, row in enumerate(rows) if i % 3 == 0 for seq in range(2)]
    with engine.begin() as conn:
        conn.execute(insert(trial_table), rows)
        conn.execute(insert(tool_call_table), calls)
    return rows


def start_order(rows: list[dict[str, Any]], nulls_first: bool) -> list[str]:
    """By (started_at, id); trials without a start time by id, first or last as the database sorts NULL."""
    return [r["id"] for r in sorted(rows, key=lambda r: ((r["started_at"] is None) != nulls_first,
                                                          r["started_at"] or BASE, r["id"]))]


def check_keyset_pages(engine: Engine) -> None:
    rows = fill(engine)
    repo = Repository(engine)
    expected = start_order(rows, nulls_first=engine.dialect.name != "postgresql")
    assert len(set(expected)) == len(rows)
    for page_size in (1, 2, 3, 5, 7, len(rows) - 1, len(rows), 1000):  # boundaries inside and at tie groups
        assert [t.id for t in repo.iter_trials(BM, page_size=page_size)] == expected, page_size
    by_key = sorted(rows, key=lambda r: (r["arm"], r["task_id"], r["trial_index"]))
    position = {row["id"]: i for i, row in enumerate(rows)}
    for page_size in (1, 4, 1000):
        records = list(repo.iter_trial_records(BM, page_size=page_size))
        assert [r.trial_id for r in records] == [r["id"] for r in by_key], page_size
        for record in records:  # each trial's tool calls, in order, also where a page ends
            want = [(f"tool{seq}", ("success", "timeout")[seq]) for seq in range(2)] \
                if position[record.trial_id] % 3 == 0 else []
            assert [(c["tool_name"], c["status"]) for c in record.tool_calls] == want
    assert repo.trial_records(BM) == list(repo.iter_trial_records(BM, page_size=3))
    bare = list(repo.iter_trial_records(BM, page_size=4, tool_calls=False))
    assert [r.trial_id for r in bare] == [r["id"] for r in by_key] and not any(r.tool_calls for r in bare)
    assert list(repo.iter_trials("bm_none")) == []
    paged = [t.id for offset in range(0, len(rows), 9) for t in repo.trials(BM, offset=offset, limit=9).items]
    assert paged == expected  # the history's OFFSET pages list them alike


def old_export_rows(repo: Repository, threshold: float) -> list[dict[str, Any]]:
    """The export's rows as it read them before: OFFSET pages of `trials()`, all held in one list."""
    out, offset = [], 0
    while True:
        page = repo.trials(BM, offset=offset, limit=7)
        out.extend(trial_row(t, threshold) for t in page.items if t.status != RETIRED_STATUS)
        if not page.has_more:
            return out
        offset += 7


def old_export(repo: Repository, fmt: str) -> str:
    """What `corral-tui export` printed to stdout before it streamed (report.to_json of one document)."""
    info = repo.get_benchmark(BM)
    assert info is not None
    threshold = float(((info.metrics or {}).get("spec") or {}).get("pass_threshold") or 0.0)
    rows = old_export_rows(repo, threshold)
    if fmt == "csv":
        return report.trials_csv(rows).rstrip("\n") + "\n"
    document = dict(info.metrics or {})
    document.update(benchmark_id=info.id, name=info.spec_name, status=info.status, spec_digest=info.spec_digest,
                    headline_score=info.headline_score, attempt_status=info.attempt_status,
                    created_at=info.created_at.isoformat(),
                    finished_at=info.finished_at.isoformat() if info.finished_at else None,
                    spec_yaml=info.spec_yaml,
                    trials=[{k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in r.items()}
                            for r in rows])
    if not (info.metrics or {}).get("arms"):
        document["note"] = "the benchmark never finished, so it has no metrics; resume it to compute them."
    return report.to_json(document) + "\n"


def check_streamed_export(engine: Engine, url: str, folder: Path) -> None:
    fill(engine)
    repo = Repository(engine)
    for finished in (False, True):  # without metrics (a "note" after the trials), then with them
        if finished:
            repo.finish_benchmark(BM, headline_score=0.5, attempt_status="first",
                                  metrics_json={"name": "stream", "spec": {"pass_threshold": 0.4},
                                                "arms": {"a": {"n": 1}}, "comparisons": []})
        for fmt in ("json", "csv"):
            want = old_export(repo, fmt)
            stdout = io.StringIO()
            with redirect_stdout(stdout):
                assert export_main([BM, "--format", fmt, "--db", url]) == 0
            assert stdout.getvalue() == want, (fmt, finished)
            target = folder / f"out.{fmt}"
            assert export_main([BM, "--format", fmt, "--db", url, "--output", str(target)]) == 0
            assert target.read_text(encoding="utf-8") == want[:-1]  # a file ends without print()'s newline
            assert [p.name for p in folder.iterdir() if p.name.endswith(".partial")] == []
        assert len(json.loads(old_export(repo, "json"))["trials"]) == 59  # the retired attempt is history
