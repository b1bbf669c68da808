"""The example GitHub Actions workflow (docs/ci/github-actions.yml) does what docs/ci.md says: its shell
steps, run here in order as the runner would (bash -eo pipefail, the workflow's, job's and step's env,
$GITHUB_WORKSPACE the checkout, $GITHUB_STEP_SUMMARY a file), install corral-tui from the checkout, run
a batch on a sample spec, write the JUnit report and the results the upload step keeps, and append the
Markdown summary to the job summary.

The checkout is a copy of this repository's source (what `actions/checkout` gives a clone of corral-tui);
`setup-python` is a fresh venv whose `python` comes first on PATH. The install step's own command runs
in it, offline: pip's environment says no index, no dependencies (the fresh venv sees this venv's through
a .pth line) and no build isolation, so it builds and installs the checked-out source and nothing else.
Every other `uses:` step is GitHub's own and is not run; the upload step's `path` must exist.
Expressions (`${{ secrets.X }}`) become empty strings, as an unset secret does.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sysconfig
import venv
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
WORKFLOW = REPO / "docs" / "ci" / "github-actions.yml"
QUICKSTART = "sample_tasks/quickstart.bench.yaml"  # in the checkout, as a user's own spec would be
STEP_BOUND = 600.0  # seconds: a failing step's bound only
NOT_CHECKED_OUT = (".git", ".*cache*", ".venv", "venv", "build", "dist", "*.egg-info", "__pycache__", "*.db")
INSTALLERS = (("pip", "install"), ("pipx", "install"), ("uv", "pip", "install"), ("uv", "tool", "install"))
PINNED_GIT = re.compile(r"^(?:[\w.-]+ @ )?git\+\S+@[0-9a-f]{40}$")


def _expand(value: Any) -> str:
    return re.sub(r"\$\{\{[^}]*\}\}", "", str(value))


def _workflow() -> tuple[dict[str, Any], dict[str, Any]]:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    [job] = workflow["jobs"].values()
    return workflow, job


def _installed_targets(command: str, env: dict[str, str]) -> list[str]:
    """What each install command of a step's script names (its arguments that are not options), with the
    step's variables expanded as bash would."""
    targets = []
    for line in command.replace("\\\n", " ").splitlines():
        words = [re.sub(r"\$(\w+)|\$\{(\w+)\}", lambda m: env.get(m[1] or m[2], ""), w) for w in shlex.split(line)]
        for installer in INSTALLERS:
            for at in range(len(words) - len(installer) + 1):
                if tuple(Path(w).name for w in words[at:at + len(installer)]) == installer:
                    targets += [w for w in words[at + len(installer):] if not w.startswith("-")]
    return targets


def _unpublished_names(targets: list[str], checkout: Path) -> list[str]:
    """The targets an index would be asked for: not a path in the checkout, a wheel, or a git URL pinned
    to a commit. corral-tui is on no index, so a bare name installs whatever someone published under it."""
    return [t for t in targets if not (PINNED_GIT.match(t) or
                                       (t.startswith(("/", "./", "../", ".")) and (checkout / t).exists()))]


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The runner after the workflow's checkout, setup-python and install steps: the environment the later
    steps see (PATH starting with the fresh venv, where the install step put corral-tui)."""
    root = tmp_path_factory.mktemp("runner")
    workspace = root / "workspace"
    shutil.copytree(REPO, workspace, symlinks=True, ignore=shutil.ignore_patterns(*NOT_CHECKED_OUT))
    fresh = root / "python"
    venv.EnvBuilder(with_pip=False).create(fresh)
    site = subprocess.run([str(fresh / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()"
                           "['purelib'])"], capture_output=True, text=True, check=True, timeout=STEP_BOUND).stdout
    # the dependencies (and pip, setuptools) come from this venv: a plain path line, so its editable corral-tui
    # is not activated there
    (Path(site.strip()) / "test-venv-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    workflow, job = _workflow()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CORRAL_TUI_", "PYTHONPATH"))}
    env.update({k: _expand(v) for k, v in {**workflow.get("env", {}), **job.get("env", {})}.items()})
    env.update(GITHUB_WORKSPACE=str(workspace), HOME=str(root / "home"), XDG_DATA_HOME=str(root / "data"),
               XDG_CONFIG_HOME=str(root / "config"), PATH=f"{fresh / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
               CORRAL_SPEC=QUICKSTART)  # what a user sets to their own spec
    [install] = [s for s in job["steps"] if s.get("id") == "install"]
    # offline, as the .pth above provides: no index, no dependencies, no isolated build environment
    # (pip reads PIP_NO_BUILD_ISOLATION=0 as --no-build-isolation)
    pip_env = {**env, **{k: _expand(v) for k, v in (install.get("env") or {}).items()},
               "PIP_NO_INDEX": "1", "PIP_NO_DEPS": "1", "PIP_NO_BUILD_ISOLATION": "0",
               "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", _expand(install["run"])],
                          cwd=workspace, env=pip_env, capture_output=True, text=True, timeout=STEP_BOUND)
    assert done.returncode == 0, f"the install step exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return env


def test_no_step_installs_a_package_by_a_name_an_index_would_serve() -> None:
    workflow, job = _workflow()
    env = {**{k: _expand(v) for k, v in {**workflow.get("env", {}), **job.get("env", {})}.items()},
           "GITHUB_WORKSPACE": str(REPO)}
    named = {step.get("name", step.get("id")): _installed_targets(_expand(step["run"]), env)
             for step in job["steps"] if "run" in step}
    assert named["Install corral-tui"], "the install step installs nothing"
    assert {step: _unpublished_names(targets, REPO) for step, targets in named.items()
            if _unpublished_names(targets, REPO)} == {}
    # the check itself: the old step's name, and an unpinned git URL, are refused
    assert _unpublished_names(_installed_targets("python -m pip install corral-tui", env), REPO) == ["corral-tui"]
    assert _unpublished_names(["git+https://example.org/corral-tui@main"], REPO) != []


def test_the_example_workflow_installs_from_the_checkout_runs_a_batch_writes_junit_and_a_summary(
        runner: dict[str, str], tmp_path: Path) -> None:
    _, job = _workflow()
    workspace = Path(runner["GITHUB_WORKSPACE"])
    summary = tmp_path / "step-summary.md"
    env = {**runner, "GITHUB_STEP_SUMMARY": str(summary)}
    where = subprocess.run(["bash", "-c", "command -v corral-tui"], env=env, capture_output=True, text=True,
                           timeout=STEP_BOUND).stdout.strip()
    assert where.startswith(str(Path(runner["PATH"].split(os.pathsep)[0]))), where  # the installed copy
    ran, failed = [], False
    shutil.rmtree(workspace / "results", ignore_errors=True)
    for step in job["steps"]:
        if "uses" in step or step.get("id") == "install":  # the install step ran in the fixture
            continue
        if failed and "always()" not in str(step.get("if", "")):
            continue
        step_env = {**env, **{k: _expand(v) for k, v in (step.get("env") or {}).items()}}
        done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", _expand(step["run"])],
                              cwd=workspace, env=step_env, capture_output=True, text=True, timeout=STEP_BOUND)
        ran.append(step.get("id") or step.get("name"))
        failed = failed or done.returncode != 0
        assert done.returncode == 0, f"step {ran[-1]!r} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    assert ran == ["benchmark", "Job summary"]
    kept = next(s for s in job["steps"] if "upload-artifact" in s.get("uses", ""))["with"]["path"]
    results = workspace / kept
    assert {p.name for p in results.iterdir()} >= {"results.json", "junit.xml", "summary.md", "runs.db"}
    junit = (results / "junit.xml").read_text()
    assert junit.count("<testcase") == 3 * 5  # one test case per arm and task
    text = summary.read_text()
    assert text.startswith("## corral-tui: quickstart") and "**Headline score 0.867**" in text
    assert "| `syntactical` | 5 | 15 | 1.00 [0.57, 1.00] |" in text and "### Paired comparisons" in text


def test_a_failing_threshold_fails_the_job_and_the_summary_still_lands(runner: dict[str, str], tmp_path: Path) -> None:
    _, job = _workflow()
    summary = tmp_path / "step-summary.md"
    env = {**runner, "GITHUB_STEP_SUMMARY": str(summary), "CORRAL_FAIL_UNDER": "0.95"}
    codes = {}
    for step in job["steps"]:
        if "run" in step and step.get("id") != "install":
            codes[step["name"]] = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c",
                                                  _expand(step["run"])], cwd=runner["GITHUB_WORKSPACE"], env=env,
                                                 capture_output=True, text=True, timeout=STEP_BOUND).returncode
    assert codes == {"Run the benchmark": 1, "Job summary": 0}
    assert "Headline score 0.867" in summary.read_text()
