"""The built wheel is the product: installed into a fresh venv it runs a packaged sample spec offline,
finds its scripts without CORRAL_TUI_SCRIPTS, and answers `python -m corral_tui`.

The wheel is built without build isolation (the setuptools and wheel of the test venv, no download);
the fresh venv gets the wheel alone (`--no-deps`) and sees the test venv's dependencies through a
.pth line, so nothing is fetched. Every subprocess has a bound. `pytest -m packaging` runs only this.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BUILD_BOUND = 300.0  # seconds: building and installing a wheel on a loaded 2-core machine
RUN_BOUND = 300.0
NOT_SHIPPED = (".git", ".*cache*", ".venv", "venv", "build", "dist", "*.egg-info", "__pycache__", "tests", "benchmarks",
               "*.db")

pytestmark = pytest.mark.packaging


def run(command: list[str], cwd: Path, env: dict[str, str], bound: float = RUN_BOUND) -> subprocess.CompletedProcess:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=bound)
    assert done.returncode == 0, f"{command} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """(the fresh venv's bin folder, an environment without CORRAL_TUI_* variables) with the wheel installed."""
    root = tmp_path_factory.mktemp("wheel")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CORRAL_TUI_", "PYTHONPATH"))}
    env.update(HOME=str(root / "home"), XDG_DATA_HOME=str(root / "data"), XDG_CONFIG_HOME=str(root / "config"),
               PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    source = root / "source"  # a clean copy: an in-tree build/ folder could carry files deleted since
    shutil.copytree(REPO, source, symlinks=True, ignore=shutil.ignore_patterns(*NOT_SHIPPED))
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet", "-w",
         str(root / "dist"), str(source)], root, env, BUILD_BOUND)
    wheel = next((root / "dist").glob("corral_tui-*.whl"))
    fresh = root / "venv"
    venv.EnvBuilder(with_pip=False).create(fresh)
    bin_dir = fresh / "bin"
    site = Path(run([str(bin_dir / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                    root, env).stdout.strip())
    # the dependencies come from the test venv (a plain path line: its editable corral-tui is not activated)
    (site / "test-venv-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    run([sys.executable, "-m", "pip", "--python", str(bin_dir / "python"), "install", "--no-deps", "--quiet",
         str(wheel)], root, env, BUILD_BOUND)
    return bin_dir, env


def test_the_wheel_installed_in_a_fresh_venv_runs_a_packaged_spec_and_python_m(
        installed: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    bin_dir, env = installed
    where = run([str(bin_dir / "python"), "-c", "import corral_core, corral_tui; "
                 "print(corral_core.__file__); print(corral_tui.__file__)"], tmp_path, env).stdout.split()
    assert all(str(bin_dir.parent) in path for path in where), where  # the installed copy, not the checkout
    listing = run([str(bin_dir / "corral-tui"), "samples"], tmp_path, env).stdout
    spec = next(line.strip() for line in listing.splitlines() if line.strip().endswith("quickstart.bench.yaml"))
    assert spec.startswith(str(bin_dir.parent)), listing
    done = run([str(bin_dir / "corral-tui"), "--batch", spec, "--db", str(tmp_path / "runs.db"), "--quiet",
                "--json", str(tmp_path / "out.json")], tmp_path, env)
    document = json.loads((tmp_path / "out.json").read_text())
    assert document["status"] == "finished" and len(document["trials"]) == 3 * 5 * 3, done.stdout
    assert all(t["status"] == "completed" for t in document["trials"])  # scripted/samplemath found its script
    # one test, not two: under pytest-xdist a second test could land on another worker and build again
    version = run([str(bin_dir / "python"), "-m", "corral_tui", "--version"], tmp_path, env).stdout
    assert version.startswith("corral-tui ")
    suites = run([str(bin_dir / "python"), "-c", "from corral_tui.config import sample_suite_paths; "
                  "print('\\n'.join(str(p) for p in sample_suite_paths()))"], tmp_path, env).stdout.split()
    assert suites and suites[0].endswith("samplemath.yaml") and all(s.startswith(str(bin_dir.parent)) for s in suites)
