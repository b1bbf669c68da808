"""Which benchmark a run records into (new, resumed or refused), and the heartbeat that marks it live.

The TUI and batch mode share one store, so a spec may be running in another process right now. A
run never takes over a benchmark whose owner is alive (corral_core.store.ownership): auto-resume
continues only abandoned ones, an explicit resume of a live one is refused, and a run that finds a
live one starts a fresh benchmark and says so (BENCHMARK_STARTED `live_elsewhere`). Whatever a run
records into, it holds the benchmark's fencing token; the heartbeat says when another process has
taken it (the run then stops: see BenchmarkRunner).
"""

from __future__ import annotations

import logging
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from corral_core.errors import UserError
from corral_core.runner.run_store import RunRepository
from corral_core.spec import BenchmarkSpec
from corral_core.store.models import BenchmarkInfo
from corral_core.store.ownership import HEARTBEAT_INTERVAL, Owner, owner_of

log = logging.getLogger(__name__)

CLAIM_ATTEMPTS = 5  # another process may claim the same abandoned benchmark first; try the next one


@dataclass
class OpenedBenchmark:
    benchmark_id: str
    resumed: bool
    live_elsewhere: list[BenchmarkInfo] = field(default_factory=list)  # the live runs of this spec
    token: str | None = None  # the fencing token this run holds (None: no store)

    def live_summary(self) -> list[dict[str, Any]]:
        return [{"benchmark_id": b.id, "pid": b.owner_pid, "host": b.owner_host} for b in self.live_elsewhere]


def open_benchmark(spec: BenchmarkSpec, repo: RunRepository | None, owner: Owner, resume_id: str | None,
                   auto_resume: bool) -> OpenedBenchmark:
    """Claim the benchmark to resume, or record a new one owned by `owner`. User mistakes raise UserError."""
    if resume_id is not None:
        return OpenedBenchmark(resume_id, True, token=_resume_explicitly(spec, repo, owner, resume_id))
    if repo is None:
        return OpenedBenchmark("bm_" + secrets.token_hex(6), False)
    live: list[BenchmarkInfo] = []
    if auto_resume:
        for _ in range(CLAIM_ATTEMPTS):
            info = repo.find_unfinished_benchmark(spec.digest, here=owner)
            if info is None:
                break
            token = repo.claim_benchmark(info, owner)
            if token is not None:
                return OpenedBenchmark(info.id, True, token=token)
        live = repo.live_benchmarks(spec.digest, here=owner)
    info = repo.create_benchmark(
        spec_name=spec.name, spec_digest=spec.digest, spec_yaml=spec.text, suites=[str(p) for p in spec.suite_paths],
        agent=spec.agent.type, model=spec.model.id, trials_per_task=spec.trials_per_task,
        arms=[{"name": a.name, "verbosity": a.verbosity, "model": a.model.id, "agent": a.agent.type}
              for a in spec.arms], owner=owner, plan=spec.normalized())
    return OpenedBenchmark(info.id, False, live, info.owner_token)


def _resume_explicitly(spec: BenchmarkSpec, repo: RunRepository | None, owner: Owner, resume_id: str) -> str:
    """Claim the benchmark `resume_id`; returns the fencing token."""
    if repo is None:
        raise UserError("resuming needs the store the benchmark was recorded in.", where="--resume",
                        fix="pass the same --db as the interrupted run.")
    info = _stored(repo, resume_id)
    if info.spec_digest != spec.digest:
        raise UserError(f"benchmark {resume_id} was started from a different spec "
                        f"({info.spec_name!r}, digest {info.spec_digest[:12]}, this spec {spec.digest[:12]}).",
                        file=spec.source, where="--resume",
                        fix="resume with the spec it was started with (unchanged, suite and scripts included), "
                            "or drop --resume to start anew.")
    for _ in range(CLAIM_ATTEMPTS):
        if repo.is_live(info, here=owner):
            _refuse_live(info)
        token = repo.claim_benchmark(info, owner)
        if token is not None:
            return str(token)
        info = _stored(repo, resume_id)  # changed under us: look again
    _refuse_live(info)
    raise AssertionError("unreachable")


def _stored(repo: RunRepository, benchmark_id: str) -> BenchmarkInfo:
    info = repo.get_benchmark(benchmark_id)
    if info is None:
        raise UserError(f"no benchmark {benchmark_id!r} in the store.", where="--resume",
                        fix="list benchmarks with `corral-tui history` (and the same --db).")
    return info


def _refuse_live(info: BenchmarkInfo) -> None:
    running = owner_of(info)
    who = running.describe() if running else "another process"
    raise UserError(f"benchmark {info.id} is being run right now by {who}; resuming it would run its trials "
                    "twice.", where="--resume",
                    fix="wait for that run to finish (or stop it), or drop --resume to start a new benchmark.")


class Heartbeat:
    """Refreshes the run's heartbeat on a daemon thread while its benchmark runs; calls `lost()` (once)
    when the benchmark's fencing token is no longer the run's."""

    def __init__(self, repo: RunRepository, benchmark_id: str, token: str, lost: Callable[[], None],
                 interval: float = HEARTBEAT_INTERVAL) -> None:
        self._repo = repo
        self._benchmark_id = benchmark_id
        self._token = token
        self._lost = lost
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="corral-heartbeat", daemon=True)

    def start(self) -> Heartbeat:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(2.0)

    def _beat(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                owned = self._repo.heartbeat(self._benchmark_id, self._token)
            except Exception as exc:  # a busy store: the next beat will do
                log.warning("heartbeat of benchmark %s failed: %s", self._benchmark_id, exc)
                continue
            if not owned:
                log.warning("benchmark %s is no longer owned by this process (its heartbeat went stale and "
                            "another process resumed it)", self._benchmark_id)
                self._lost()
                return
