"""The example GitHub Actions workflow (docs/ci/github-actions.yml) does what docs/ci.md says: its shell
steps, run here in order as the runner would (bash -eo pipefail, the workflow's, job's and step's env,
$GITHUB_STEP_SUMMARY a file), run a batch on a sample spec, write the JUnit report and the results the
upload step keeps, and append the Markdown summary to the job summary.

Steps that `uses:` an action (checkout, setup-python, upload-artifact) are GitHub's own and are not run;
the install step is skipped because this venv has corral-tui installed; the upload step's `path` must
exist. Expressions (`${{ secrets.X }}`) become empty strings, as an unset secret does.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
WORKFLOW = REPO / "docs" / "ci" / "github-actions.yml"
QUICKSTART = REPO / "sample_tasks" / "quickstart.bench.yaml"
STEP_BOUND = 600.0  # seconds: a failing step's bound only


def _expand(value: Any) -> str:
    return re.sub(r"\$\{\{[^}]*\}\}", "", str(value))


def test_the_example_workflow_runs_a_batch_writes_junit_and_a_markdown_summary(tmp_path: Path) -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    [job] = workflow["jobs"].values()
    summary = tmp_path / "step-summary.md"
    env = {**os.environ, "GITHUB_STEP_SUMMARY": str(summary), "GITHUB_WORKSPACE": str(tmp_path),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.update({k: _expand(v) for k, v in {**workflow.get("env", {}), **job.get("env", {})}.items()})
    env["CORRAL_SPEC"] = str(QUICKSTART)  # what a user sets to their own spec
    ran, failed = [], False
    for step in job["steps"]:
        if "uses" in step or step.get("id") == "install":
            continue
        if failed and "always()" not in str(step.get("if", "")):
            continue
        step_env = {**env, **{k: _expand(v) for k, v in (step.get("env") or {}).items()}}
        done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", _expand(step["run"])],
                              cwd=tmp_path, env=step_env, capture_output=True, text=True, timeout=STEP_BOUND)
        ran.append(step.get("id") or step.get("name"))
        failed = failed or done.returncode != 0
        assert done.returncode == 0, f"step {ran[-1]!r} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    assert ran == ["benchmark", "Job summary"]
    kept = next(s for s in job["steps"] if "upload-artifact" in s.get("uses", ""))["with"]["path"]
    results = tmp_path / kept
    assert {p.name for p in results.iterdir()} >= {"results.json", "junit.xml", "summary.md", "runs.db"}
    junit = (results / "junit.xml").read_text()
    assert junit.count("<testcase") == 3 * 5  # one test case per arm and task
    text = summary.read_text()
    assert text.startswith("## corral-tui: quickstart") and "**Headline score 0.867**" in text
    assert "| `syntactical` | 5 | 15 | 1.00 [0.57, 1.00] |" in text and "### Paired comparisons" in text


def test_a_failing_threshold_fails_the_job_and_the_summary_still_lands(tmp_path: Path) -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    [job] = workflow["jobs"].values()
    summary = tmp_path / "step-summary.md"
    env = {**os.environ, **{k: _expand(v) for k, v in workflow["env"].items()}, "GITHUB_STEP_SUMMARY": str(summary),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "CORRAL_SPEC": str(QUICKSTART), "CORRAL_FAIL_UNDER": "0.95"}
    codes = {}
    for step in job["steps"]:
        if "run" in step and step.get("id") != "install":
            codes[step["name"]] = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c",
                                                  _expand(step["run"])], cwd=tmp_path, env=env, capture_output=True,
                                                 text=True, timeout=STEP_BOUND).returncode
    assert codes == {"Run the benchmark": 1, "Job summary": 0}
    assert "Headline score 0.867" in summary.read_text()
