"""Where the sample suites, benchmark specs, scripts and environment modules are.

They ship inside the package (corral_core/sample-data/, so `pip install corral-tui` brings them and
bare `corral-tui` opens them); in a checkout that folder holds links to the repository's
sample_tasks/ and environments/, so there is one copy of each file. A suite names its environment
module as `../environments/NAME.py`, which holds in both places.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

SAMPLE_DATA = Path(__file__).with_name("sample-data")
SPEC_SUFFIX = ".bench.yaml"
SCRIPT_SUFFIX = ".script.yaml"


@lru_cache(maxsize=1)  # on every scripted call's path: resolve() costs a few lstat calls
def sample_tasks_dir() -> Path:
    """The folder of the sample suites, specs (*.bench.yaml) and scripts (*.script.yaml)."""
    return (SAMPLE_DATA / "sample_tasks").resolve()


def environments_dir() -> Path:
    """The folder of the sample environment modules the sample suites load."""
    return (SAMPLE_DATA / "environments").resolve()


def sample_specs() -> list[Path]:
    """The sample benchmark specs (sample_tasks/*.bench.yaml), by name."""
    return sorted(sample_tasks_dir().glob(f"*{SPEC_SUFFIX}"))
