"""A Corral environment module (data/corral_lab.py) runs here with only its imports changed.

It is served as written (its own `create_benchmark_server`/`run_server` under `__main__`, in a
subprocess), loaded as a suite (`corral-tui serve corral_lab.py`, `suite: corral_lab.py` in a
spec), driven by Corral E2's client, and benchmarked by our runner over isolated trial runtimes.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from corral_core.client import CorralRouter
from corral_core.env import EnvironmentSuite, load_suite
from corral_core.events import EventKind, ListSink
from corral_core.runner import BenchmarkRunner
from corral_core.server import EmbeddedServer, create_app
from corral_core.spec import load_spec
from tests.server.corral_e2 import CorralRouterE2, convert_to_openai_tool_format

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data"
MODULE = DATA / "corral_lab.py"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> EnvironmentSuite:
    os.environ.setdefault("LAB_WORK_DIR", str(tmp_path_factory.mktemp("lab")))
    suite = load_suite(MODULE)
    assert isinstance(suite, EnvironmentSuite)
    return suite


@pytest.fixture
def url(lab: EnvironmentSuite) -> Iterator[str]:
    server = EmbeddedServer(create_app(lab))
    try:
        yield server.start()
    finally:
        server.stop()


def test_the_module_loads_as_a_suite(lab: EnvironmentSuite) -> None:
    assert lab.name == "corral_lab" and lab.task_ids == ["si_lattice_nm", "gaas_band_gap", "cu_cell_volume"]
    assert sorted(lab.tools) == ["cell_volume", "lookup_material", "query_database", "unit_converter"]
    assert lab.tasks["gaas_band_gap"].prompt == "What is the band gap of GaAs in eV? Answer with the number only."
    assert not lab.chained


def test_corral_clients_use_its_tools(url: str) -> None:
    router = CorralRouterE2(url)
    try:
        listing = router.get_available_tools_for_task("si_lattice_nm", "brief")
        tools = {t["function"]["name"]: t["function"] for t in convert_to_openai_tool_format(listing)}
        assert sorted(tools) == ["cell_volume", "lookup_material", "query_database", "unit_converter"]
        converter = tools["unit_converter"]
        assert converter["description"] == "Length unit converter."
        assert converter["parameters"]["properties"]["from_unit"]["enum"] == ["angstrom", "nm", "um", "mm", "m"]
        assert converter["parameters"]["required"] == ["value", "from_unit", "to_unit"]
        assert list(tools["query_database"]["parameters"]["properties"]) == ["query"]  # the hidden key stays hidden
        assert tools["lookup_material"]["parameters"]["properties"]["formula"]["enum"] == ["Si", "GaAs", "Cu"]

        converted = router.execute_tool("si_lattice_nm", "unit_converter",
                                        {"value": 5.431, "from_unit": "angstrom", "to_unit": "nm"})
        assert converted.result["status"] == "success" and converted.result["result"] == "0.5431"
        wrong = router.execute_tool("si_lattice_nm", "unit_converter",
                                    {"value": 1, "from_unit": "inch", "to_unit": "m"})
        assert wrong.result["status"] == "invalid_args" and "Must be one of" in wrong.result["error_message"]
        secret = router.execute_tool("si_lattice_nm", "query_database", {"query": "Si.lattice_a"})
        assert secret.result["status"] == "success" and secret.result["result"] == "5.431"
        result = router.submit_answer("si_lattice_nm", "0.5431")
        assert result.score == 1.0 and result.state["tool_statistics"]["tools_used"] == [
            "query_database", "unit_converter"]
        guessed = router.submit_answer("si_lattice_nm", "0.5431")  # no tool used this time: half credit
        assert guessed.score == 0.5
    finally:
        router.close()


def test_trial_runtimes_are_fresh_copies_built_like_the_original(lab: EnvironmentSuite, url: str) -> None:
    original = lab.environments["gaas_band_gap"]
    calls_before = len(original.state.tool_calls)
    with CorralRouter(url, default_verbosity=None) as router:
        first = router.open_trial("gaas_band_gap")
        second = router.open_trial("gaas_band_gap")
        first.execute_tool("gaas_band_gap", "query_database", {"query": "GaAs.band_gap"})
        assert second.get_task_status("gaas_band_gap")["tool_statistics"]["total_calls"] == 0
        assert first.submit_answer("gaas_band_gap", "1.42").score == 1.0
        assert second.submit_answer("gaas_band_gap", "1.5").score == 0.0
        assert Path(first.workspace or "").name.endswith(first.trial_id)
        first.close()
        second.close()
    assert len(original.state.tool_calls) == calls_before  # the author's instance serves the task routes only


def test_our_runner_benchmarks_the_module(tmp_path: Path) -> None:
    spec = load_spec(DATA / "corral_lab.bench.yaml")
    sink = ListSink()
    result = BenchmarkRunner(spec, sink=sink).run()
    finished = sink.of_kind(EventKind.TRIAL_FINISHED)
    assert result.status == "finished" and len(finished) == 12
    assert all(e.data["status"] == "completed" and e.data["score"] == 1.0 for e in finished), [
        (e.task_id, e.data["arm"], e.data["status"], e.data["score"], e.data["error"]) for e in finished]


def test_the_module_runs_as_a_script_with_its_own_run_server(tmp_path: Path) -> None:
    env = {**os.environ, "LAB_PORT": "0", "LAB_WORK_DIR": str(tmp_path), "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen([sys.executable, str(MODULE)], env=env, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None
        line = process.stderr.readline()  # the banner comes once the socket is bound
        match = re.search(r"on (http://127\.0\.0\.1:\d+)", line)
        assert match, line
        router = CorralRouterE2(match.group(1))
        try:
            assert router.get_available_tasks() == ["si_lattice_nm", "gaas_band_gap", "cu_cell_volume"]
            volume = router.execute_tool("cu_cell_volume", "cell_volume", {"lattice_a": 3.615})
            assert volume.result["result"].startswith("47.24")
            assert router.submit_answer("cu_cell_volume", "47.24").score == 1.0
        finally:
            router.close()
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    assert process.returncode == 0


def _states(sink: ListSink) -> list[Any]:
    return [e.data for e in sink.of_kind(EventKind.TRIAL_FINISHED)]
