"""Benchmark specs: the YAML a user writes for `--batch` (and the TUI's run form builds), validated.

A spec names one or more suites, an agent, a model and a sweep of *arms* (verbosity, model or
agent variants), plus how many trials each task gets and the run's policies. Every mistake is a
`UserError` naming the file, the line and key, and the fix. See sample_tasks/quickstart.bench.yaml
for a commented example.

`spec_digest` is the sha256 of the normalized spec (everything that changes results; not
`parallel`, `description` or comments) and of the content of the files it runs (suite files, their
environment modules, scripted models' scripts): two runs of the "same spec" share it, which is how
resume finds an unfinished run and how a run is compared with the best earlier one. Editing a suite
or a script starts a new lineage.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from corral_core.errors import UserError
from corral_core.spec.checks import did_you_mean
from corral_core.spec.model import (
    AGENT_TYPES,
    APPROVAL_POLICIES,
    DEFAULT_TIMEOUTS,
    AgentSpec,
    ArmSpec,
    BenchmarkSpec,
    HooksSpec,
    ModelSpec,
    Timeouts,
)
from corral_core.spec.parse import MAX_PARALLEL, parse_spec
from corral_core.yamlfile import YamlDocument, load_yaml_document

__all__ = [
    "AGENT_TYPES", "APPROVAL_POLICIES", "DEFAULT_TIMEOUTS", "MAX_PARALLEL", "AgentSpec", "ArmSpec", "BenchmarkSpec",
    "HooksSpec", "ModelSpec", "Timeouts", "did_you_mean", "load_spec", "spec_from_dict",
]


def load_spec(path: str | Path) -> BenchmarkSpec:
    """Read and validate a spec YAML file (suite paths are relative to it)."""
    doc = load_yaml_document(path, "benchmark spec")
    text = doc.path.read_text(encoding="utf-8")
    return parse_spec(doc, doc.path.resolve().parent, text)


def spec_from_dict(data: Mapping[str, Any], base_dir: str | Path, source: str = "<run form>") -> BenchmarkSpec:
    """Validate a spec given as a mapping (the TUI's run form); errors name `source` and the key."""
    if not isinstance(data, Mapping):
        raise UserError("a benchmark spec must be a mapping of keys such as `suite:` and `model:`.", file=source)
    doc = YamlDocument(path=Path(source), data=dict(data))
    text = yaml.safe_dump(json.loads(json.dumps(dict(data), default=str)), sort_keys=False)
    return parse_spec(doc, Path(base_dir).resolve(), text)
