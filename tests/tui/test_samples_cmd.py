"""`corral-tui samples` output works inside `$(...)`: the listing prints each spec's path alone on its
line (the documented `$(corral-tui samples | grep -m1 quickstart.bench.yaml)` is a path that exists) and
`--path NAME` prints one sample's path; an unknown name exits 2 naming the choices."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

BOUND = 120.0  # seconds: a failing command's bound only


def shell(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", command], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=BOUND)


def test_the_listing_and_path_give_paths_a_command_substitution_can_use(tmp_path: Path) -> None:
    done = shell('printf "%s\\n" "$(corral-tui samples | grep -m1 quickstart.bench.yaml)" '
                 '"$(corral-tui samples --path quickstart)" "$(corral-tui samples --path samplemath.yaml)"', tmp_path)
    assert done.returncode == 0, done.stderr
    grepped, by_name, suite = done.stdout.splitlines()
    assert grepped == by_name and Path(grepped).is_file() and grepped.endswith("/quickstart.bench.yaml")
    assert Path(suite).is_file() and suite.endswith("/samplemath.yaml")
    wrong = shell("corral-tui samples --path quickstrat", tmp_path)
    assert wrong.returncode == 2 and "invalid choice: 'quickstrat'" in wrong.stderr and "'quickstart'" in wrong.stderr
