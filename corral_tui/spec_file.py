"""A `.bench.yaml` into the run form and the form out as one (docs/run-form.md).

The form and `--batch` share one schema: opening a file validates it with `load_spec` (the batch's
own reader) and reads the form's values off the `BenchmarkSpec`; saving writes `RunRequest.spec_data`,
the mapping the form runs through `spec_from_dict`. Keys the form has no field for (name, k_values,
limits, other timeouts, ...) are kept as written and saved back; what the form can neither show nor
keep (an arm's own model settings, custom arm names) is named by comparing the two specs."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from corral_core.errors import UserError
from corral_tui.run_request import RunRequest

if TYPE_CHECKING:
    from corral_core.spec import BenchmarkSpec

# spec keys the form's fields stand for (with `hooks.breakpoints` and `timeouts.approval`); others are kept
FORM_KEYS = frozenset({"suite", "suites", "tasks", "agent", "model", "arms", "trials_per_task", "parallel",
                       "surrender", "approval"})
LEFT_OUT = ("text", "data", "suites", "source", "base_dir", "content_hashes")  # not the plan: how it was read


@dataclass
class OpenedSpec:
    """A spec file read for the form: its values, the keys kept as written, what the form cannot show."""

    request: RunRequest
    kept: list[str] = field(default_factory=list)
    not_shown: list[str] = field(default_factory=list)


def request_from_spec(spec: BenchmarkSpec, suite_names: dict[Path, str]) -> RunRequest:
    """The run form's values for `spec` (UserError when the form cannot run it: several suites, or a
    suite this workbench has not opened). `suite_names` maps each opened suite file (resolved) to its name."""
    if len(spec.suite_paths) != 1:
        raise UserError(f"this spec runs {len(spec.suite_paths)} suites; the run form runs one.", file=spec.source,
                        fix=f"run it headless: corral-tui --batch {spec.source}")
    suite = suite_names.get(spec.suite_paths[0].resolve())
    if suite is None:
        raise UserError(f"its suite {spec.suite_paths[0]} is not open in this workbench.", file=spec.source,
                        fix=f"start corral-tui with --suite {spec.suite_paths[0]}.")
    data = spec.data
    arms = spec.arms
    raw_arms = data.get("arms")
    entries = raw_arms if isinstance(raw_arms, list) else [raw_arms]
    named_model = data.get("model") is not None or any(isinstance(arm, dict) and arm.get("model") is not None
                                                       for arm in entries)
    models = list(dict.fromkeys(arm.model.id for arm in arms)) if named_model else []
    agents = list(dict.fromkeys(arm.agent.type for arm in arms))
    raw_hooks = data.get("hooks")
    hooks: dict[str, Any] = raw_hooks if isinstance(raw_hooks, dict) else {}
    kept: dict[str, Any] = {key: value for key, value in data.items() if key not in FORM_KEYS}
    other_hooks = {key: value for key, value in hooks.items() if key != "breakpoints"}
    if other_hooks:
        kept["hooks"] = other_hooks
    else:
        kept.pop("hooks", None)
    first = arms[0]
    return RunRequest(
        suite=suite, tasks=list(spec.tasks) if spec.tasks is not None else None,
        agent=agents[0], more_agents=agents[1:], max_iterations=first.agent.max_iterations,
        model=models[0] if models else None, more_models=models[1:],
        api_base=first.model.api_base if models else None, api_key_env=first.model.api_key_env if models else None,
        verbosities=list(dict.fromkeys(arm.verbosity for arm in arms)), trials=spec.trials_per_task,
        parallel=spec.parallel, surrender=spec.surrender, approval=spec.approval,
        breakpoints=[str(point) for point in spec.hooks.breakpoints], kept=kept)


def plan(spec: BenchmarkSpec) -> dict[str, Any]:
    """What a run of `spec` does: everything that changes results (the digest's part), and how it runs."""
    return {**spec.normalized(), "parallel": spec.parallel, "executor": spec.executor,
            "breakpoints": [str(point) for point in spec.hooks.breakpoints],
            "litellm_callbacks": list(spec.litellm_callbacks), "description": spec.description,
            "arm_names": [arm.name for arm in spec.arms]}


def differences(wanted: Any, got: Any, at: str = "") -> list[str]:
    """The key paths (`arms[0].model.temperature`) where two plans differ."""
    if isinstance(wanted, dict) and isinstance(got, dict):
        return [path for key in dict.fromkeys([*wanted, *got])
                for path in differences(wanted.get(key), got.get(key), f"{at}.{key}" if at else str(key))]
    if isinstance(wanted, list) and isinstance(got, list) and len(wanted) == len(got):
        return [path for index, (a, b) in enumerate(zip(wanted, got, strict=True))
                for path in differences(a, b, f"{at}[{index}]")]
    return [] if wanted == got else [at or "(the whole spec)"]


def open_spec(path: str | Path, suite_names: dict[Path, str], form_spec: Any) -> OpenedSpec:
    """Read a `.bench.yaml` for the form (UserError for a bad file, as `--batch` says it). `form_spec`
    builds the spec the filled form would run, so what it would run differently is named."""
    from corral_core.spec import load_spec

    spec = load_spec(path)
    request = request_from_spec(spec, suite_names)
    ran = form_spec(request)
    missing = _collapse(differences(plan(spec), plan(ran)))
    return OpenedSpec(request, sorted(request.kept), missing)


def _collapse(paths: list[str]) -> list[str]:
    """`arm_names[0]`, `arm_names[1]` -> `arm_names`; other paths as they are, in order."""
    out: list[str] = []
    for path in paths:
        short = path.split("[", 1)[0] if path.startswith("arm_names") else path
        if short not in out:
            out.append(short)
    return out


def save_spec(request: RunRequest, path: str | Path, suite_path: Path, approval_timeout: float) -> Path:
    """Write the form as a `.bench.yaml` that `corral-tui --batch` runs to the same plan (the suite path
    relative to the file, as a spec gives it); UserError when the file cannot be written."""
    target = Path(path).expanduser()
    if not target.name.endswith((".yaml", ".yml")):
        raise UserError(f"{target.name!r} is not a YAML file name.", file=target,
                        fix="end the name with .bench.yaml (e.g. my-run.bench.yaml).")
    folder = target.parent.resolve()
    try:
        relative = os.path.relpath(suite_path.resolve(), folder)
    except ValueError:  # another drive (Windows): the absolute path
        relative = str(suite_path.resolve())
    data = request.spec_data(Path(relative), approval_timeout)
    text = "# Saved from the corral-tui run form; run it with: corral-tui --batch " + target.name + "\n"
    text += yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UserError(f"cannot write the spec: {exc.strerror or exc}.", file=target,
                        fix="pick a folder you can write to.") from None
    return target
