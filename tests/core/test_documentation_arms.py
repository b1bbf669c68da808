"""Arms beyond levels: a documentation variant and a component subset per arm, shown to the agent in
every channel of its trials, printed by `corral-tui docs --arm/--diff`, recorded in the batch JSON."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from corral_core.docsize import docs_main
from corral_core.env import load_suite
from corral_core.errors import UserError
from corral_core.server import EmbeddedServer, create_app
from corral_core.spec import load_spec
from tests.timeouts import HTTP_TIMEOUT

SUITE = """name: arms
documentation:
  variants: {rewritten: rewritten.yaml}
tools:
  - name: weather
    type: http
    description: Weather for a city. Today only.
    url: https://api.example.org/v1/{city}
    parameters:
      - {name: city, type: string, description: City name.}
tasks:
  - {id: t, prompt: "Which word does the weather tool's documentation tell you to answer?", answer: sunny}
"""
REWRITTEN = """tools:
  weather:
    brief: Today's weather in one city.
    examples: 'The answer word is SUNNY_WORD.'
    arguments:
      city:
        syntactical: 'A city name, e.g. "Paris".'
"""
SCRIPT = """tasks:
  t:
    react: ["<final_answer>unknown</final_answer>"]
    variants:
      - when: {prompt_contains: SUNNY_WORD}
        react: ["<final_answer>sunny</final_answer>"]
"""
SPEC = """name: arms-study
suite: suite.yaml
model: scripted/{script}
agent: {{type: react, max_iterations: 2}}
arms:
  - {{name: original, verbosity: full, variant: original}}
  - {{name: rewritten, verbosity: full, variant: rewritten}}
  - {{name: ablated, verbosity: full, variant: rewritten, components: [brief, syntactical]}}
"""


@pytest.fixture
def study(tmp_path: Path) -> Path:
    (tmp_path / "suite.yaml").write_text(SUITE)
    (tmp_path / "rewritten.yaml").write_text(REWRITTEN)
    (tmp_path / "arms.script.yaml").write_text(SCRIPT)
    (tmp_path / "spec.yaml").write_text(SPEC.format(script=tmp_path / "arms.script.yaml"))
    return tmp_path


def test_each_arm_is_shown_its_documentation_and_the_run_records_it(study: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "corral_tui", "--batch", str(study / "spec.yaml"),
                           "--db", str(study / "runs.db"), "--json", str(study / "out.json")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode in (0, 1), done.stderr
    result = json.loads((study / "out.json").read_text())
    scores = {row["arm"]: row["score"] for row in result["trials"]}
    # the scripted model answers "sunny" only when the documentation it is shown says SUNNY_WORD
    assert scores == {"original": 0.0, "rewritten": 1.0, "ablated": 0.0}
    docs = result["documentation"]
    assert docs["original"]["variant"] == "original" and docs["original"]["overlays"] == []
    assert docs["ablated"]["components"] == ["brief", "syntactical"]
    (overlay,) = docs["rewritten"]["overlays"]
    assert overlay["sha256"] == hashlib.sha256(REWRITTEN.encode()).hexdigest() and overlay["text"] == REWRITTEN
    assert docs["ablated"]["chars"] < docs["rewritten"]["chars"]
    assert docs["original"]["chars"] != docs["rewritten"]["chars"]


def test_docs_prints_an_arm_and_the_diff_of_two_arms(study: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = str(study / "spec.yaml")
    assert docs_main([spec, "--arm", "ablated"], load_spec) == 0
    out = capsys.readouterr().out
    assert "Description: Today's weather in one city." in out and "SUNNY_WORD" not in out
    assert '- city (str, required): City name. A city name, e.g. "Paris".' in out
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line.startswith("  ")}
    assert rows["ablated"][3:] == ["full,", "rewritten,", "brief+syntactical", "<"]
    assert docs_main([spec, "--diff", "original", "rewritten", "--channel", "mcp"], load_spec) == 0
    out = capsys.readouterr().out
    assert '+    "description": "Today\'s weather in one city.' in out
    assert '-    "description": "Weather for a city.\\n\\nToday only.' in out


def test_a_trial_opened_with_a_variant_shows_it_in_every_channel(study: Path) -> None:
    suite = load_suite(study / "suite.yaml")
    shown = suite.view("rewritten", ["brief", "syntactical"])["weather"]
    server = EmbeddedServer(create_app(suite))
    url = server.start()
    try:
        with httpx.Client(base_url=url, timeout=HTTP_TIMEOUT) as http:
            body = {"variant": "rewritten", "components": ["brief", "syntactical"]}
            trial = http.post("/tasks/t/trials", json=body).json()["trial_id"]
            for level in ("brief", "full"):
                params = {"verbosity": level}
                (listed,) = http.get(f"/trials/{trial}/tools", params=params).json()["tools"]
                assert listed["description"] == listed["function"]["description"] == shown.describe(level)
                (mcp,) = http.get(f"/trials/{trial}/tools/mcp", params=params).json()["tools"]
                assert mcp == shown.to_mcp(level)
                guide = http.get(f"/trials/{trial}/tools/guide", params=params).json()["prompt"]
                assert f"Description: {shown.describe(level)}\n" in guide
            (plain,) = http.get("/tasks/t/tools", params={"verbosity": "full"}).json()["tools"]
            assert "SUNNY_WORD" not in json.dumps(plain)  # the task routes: the suite's default (original)
            assert plain["description"].startswith("Weather for a city.\n\nToday only.")
            refused = http.post("/tasks/t/trials", json={"variant": "smelly"})
            assert refused.status_code == 422 and "no documentation variant 'smelly'" in refused.text
            refused = http.post("/tasks/t/trials", json={"components": ["breif"]})
            assert refused.status_code == 422 and "did you mean 'brief'" in refused.text
    finally:
        server.stop()


def test_an_arm_naming_a_variant_the_suite_lacks_is_refused_with_its_line(study: Path) -> None:
    (study / "spec.yaml").write_text(SPEC.format(script="x").replace("variant: rewritten}", "variant: rewriten}", 1))
    with pytest.raises(UserError) as caught:
        load_spec(study / "spec.yaml")
    assert "line 7" in str(caught.value) and "no documentation variant 'rewriten'" in str(caught.value)
    assert "use one of: original, rewritten" in str(caught.value)
