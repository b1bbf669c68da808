"""Compare on a running or interrupted benchmark is the analysis batch prints (issue 33, item 2): the same
engine call over the same stored trials, so chains count once per episode, the equivalence margin is
applied and errors stay apart. Before, the screen's own path said `no verdict is possible with 3 tasks
… [-1.000, +1.000]` on the sample materials_chain, where batch said `… with 1 task`."""

from __future__ import annotations

import json
from pathlib import Path

from sqlalchemy import update

from corral_core.runner.results import analyse_stored
from corral_core.spec import load_spec
from corral_core.store import Repository, init_db, make_engine
from corral_core.store.tables import benchmark_table, trial_table
from corral_tui.analysis import compare_view
from tests.inprocess import run_cli

SAMPLES = Path(__file__).resolve().parents[2] / "sample_tasks"


def _batch(spec: Path, folder: Path) -> tuple[Path, dict]:
    db, out = folder / "store.db", folder / "out.json"
    proc = run_cli("--batch", str(spec), "--db", str(db), "--json", str(out), "--quiet", cwd=folder)
    assert proc.returncode in (0, 1), proc.stderr
    return db, json.loads(out.read_text())


def _as_if_interrupted(db: Path, benchmark_id: str, errored: dict[str, int] | None = None) -> Repository:
    """The finished benchmark marked interrupted, so Compare computes it from its trials; `errored`: that
    many trials of each named arm turned into provider errors first."""
    engine = make_engine(db)
    init_db(engine)
    with engine.begin() as conn:
        conn.execute(update(benchmark_table).where(benchmark_table.c.id == benchmark_id).values(status="interrupted"))
        for arm, count in (errored or {}).items():
            ids = [row[0] for row in conn.execute(
                trial_table.select().with_only_columns(trial_table.c.id)
                .where(trial_table.c.benchmark_id == benchmark_id, trial_table.c.arm == arm)
                .order_by(trial_table.c.task_id, trial_table.c.trial_index).limit(count))]
            conn.execute(update(trial_table).where(trial_table.c.id.in_(ids))
                         .values(status="error", fault="provider", score=None, error="provider failed"))
    return Repository(engine)


def test_a_chain_suite_counts_its_chain_once_as_batch_does(tmp_path: Path) -> None:
    db, result = _batch(SAMPLES / "materials_chain.bench.yaml", tmp_path)
    repo = _as_if_interrupted(db, result["benchmark_id"])
    try:
        view = compare_view(repo, result["benchmark_id"])
    finally:
        repo.engine.dispose()
    assert not view.stored
    assert view.comparisons == [(c["arm_a"], c["arm_b"], c["summary"]) for c in result["comparisons"]]
    assert view.comparisons[0][2].startswith("no verdict is possible with 1 task")


def test_a_multi_arm_suite_with_a_margin_gives_batchs_verdicts(tmp_path: Path) -> None:
    spec = tmp_path / "margin.bench.yaml"
    text = (SAMPLES / "quickstart.bench.yaml").read_text()
    text = text.replace("suite: samplemath.yaml", f"suite: {SAMPLES / 'samplemath.yaml'}")
    spec.write_text(text + "\nequivalence_margin: 0.2\n")
    db, result = _batch(spec, tmp_path)
    repo = _as_if_interrupted(db, result["benchmark_id"])
    try:
        view = compare_view(repo, result["benchmark_id"])
    finally:
        repo.engine.dispose()
    assert len(view.comparisons) == 3 and not view.stored
    assert view.comparisons == [(c["arm_a"], c["arm_b"], c["summary"]) for c in result["comparisons"]]
    assert all("TOST within ±0.2" in summary for _, _, summary in view.comparisons)


def test_errors_stay_apart_as_at_the_end_of_a_run(tmp_path: Path) -> None:
    db, result = _batch(SAMPLES / "quickstart.bench.yaml", tmp_path)
    repo = _as_if_interrupted(db, result["benchmark_id"], {"syntactical": 4, "brief": 1})
    try:
        view = compare_view(repo, result["benchmark_id"])
        end_of_run = analyse_stored(load_spec(SAMPLES / "quickstart.bench.yaml"), repo, result["benchmark_id"])
    finally:
        repo.engine.dispose()
    assert view.comparisons == [(c.arm_a, c.arm_b, c.summary) for c in end_of_run.comparisons]
    assert any("errors outside the agent, left out" in summary and "provider 4" in summary
               for _, _, summary in view.comparisons)
    assert view.arms[2].errors_by_fault == {"provider": 4}
