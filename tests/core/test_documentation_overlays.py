"""Documentation overlays are checked when the suite loads: each mistake is refused, before anything
runs, with the overlay file, the line and the fix; a good one is recorded with its hash and text."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest

from corral_core.env import load_suite
from corral_core.errors import UserError

SUITE = """name: overlaid
documentation:
  overlay: overlay.yaml
tools:
  - name: weather
    type: http
    description: Weather for a city. Today only.
    url: https://api.example.org/v1/{city}
    parameters:
      - {name: city, type: string, description: City name.}
tasks:
  - {id: t, prompt: "What is the weather?", answer: sunny}
"""
GOOD = """tools:
  weather:
    brief: Today's weather in one city.
    arguments:
      city:
        examples: '"Paris", "Lima"'
"""


def write(folder: Path, overlay: str) -> Path:
    (folder / "overlay.yaml").write_text(overlay)
    suite = folder / "suite.yaml"
    suite.write_text(SUITE)
    return suite


@pytest.mark.parametrize(("overlay", "line", "problem", "fix"), [
    ("tools:\n  wether:\n    brief: x\n", 2, "tool 'wether', which the suite does not have", "did you mean 'weather'"),
    ("tools:\n  weather:\n    arguments:\n      town: {brief: x}\n", 4, "has no argument 'town'", "use one of: city"),
    ("tools:\n  weather:\n    breif: x\n", 3, "unknown component 'breif'", "did you mean 'brief'"),
    ("tools:\n  weather:\n    arguments:\n      city:\n        usage: x\n", 5, "unknown component 'usage'",
     "use one of: brief, detailed, syntactical, examples"),
    ("tools:\n  weather:\n    brief: x\n    brief: y\n", 4, "'brief' is written twice", "keep one of them"),
    ("tools:\n  weather:\n    brief: [a, b]\n", 3, "must be text, not list", "quote it"),
    ("tools:\n  weather: just text\n", 2, "must be a mapping of component: text", "brief: ..."),
    ("tool:\n  weather: {brief: x}\n", 1, "unknown key 'tool'", "did you mean 'tools'"),
])
def test_a_bad_overlay_is_refused_with_file_line_and_fix(tmp_path: Path, overlay: str, line: int, problem: str,
                                                        fix: str) -> None:
    with pytest.raises(UserError) as caught:
        load_suite(write(tmp_path, overlay))
    error = caught.value
    assert error.file == str(tmp_path / "overlay.yaml")
    assert error.where is not None and error.where.startswith(f"line {line}")
    assert problem in error.problem
    assert error.fix is not None and fix in error.fix


def test_a_bad_overlay_stops_a_batch_before_it_runs(tmp_path: Path) -> None:
    suite = write(tmp_path, "tools:\n  weather:\n    breif: x\n")
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"name: s\nsuite: {suite}\nmodel: scripted/none\narms: [{{name: a, verbosity: brief}}]\n")
    done = subprocess.run([sys.executable, "-m", "corral_tui", "--batch", str(spec), "--db", str(tmp_path / "db")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert f"{tmp_path / 'overlay.yaml'} (line 3, key tools.weather.breif): unknown component 'breif'" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "db").exists()


def test_a_good_overlay_replaces_what_it_gives_and_is_recorded(tmp_path: Path) -> None:
    suite = load_suite(write(tmp_path, GOOD))
    weather = suite.tools["weather"]
    assert weather.describe("brief") == "Today's weather in one city."
    assert weather.describe("detailed") == "Today's weather in one city.\n\nToday only."  # the derived rest stays
    assert weather.describe_argument("city", "brief") == "City name."
    assert weather.describe_argument("city", "comprehensive") == 'City name. "Paris", "Lima"'
    assert suite.view("original", None)["weather"].describe("brief") == "Weather for a city."
    (record,) = suite.documentation_record()
    assert record == {"variant": "overlay", "file": str(tmp_path / "overlay.yaml"),
                      "sha256": hashlib.sha256(GOOD.encode()).hexdigest(), "text": GOOD}
    assert (str(tmp_path / "overlay.yaml"), record["sha256"]) in suite.source_hashes
