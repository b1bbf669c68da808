"""Spec checks that need the agent and LLM layers, run when a spec loads so nothing is recorded for a
spec that cannot run: each arm's agent is built once, scripted models must have a script, and the
files a run depends on are hashed into the spec digest."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from corral_core.env import Suite
from corral_core.errors import UserError
from corral_core.spec.checks import _Checker
from corral_core.spec.model import AgentSpec, BenchmarkSpec
from corral_core.yamlfile import KeyPath, safe_load

SCRIPTED = "scripted/"


def check_agent_builds(check: _Checker, at: KeyPath, agent: AgentSpec) -> None:
    """Build the agent once, as the runner will, so options it refuses fail here (not per trial)."""
    from corral_core.agents import AGENTS

    try:
        AGENTS.get(agent.type).factory(max_iterations=agent.max_iterations, system_prompt=agent.system_prompt,
                            **agent.options)
    except Exception as exc:  # any refusal is about the options the user wrote
        where = (*at, "options") if agent.options else at
        raise check.fail(where, f"agent type {agent.type!r} cannot be built with these settings: {exc}.",
                         "correct the option values (see the agent's documentation).") from None


def check_scripted_model(check: _Checker, at: KeyPath, model_id: str) -> None:
    """A `scripted/<name>` model must name a script that exists and parses (other ids pass)."""
    if not model_id.startswith(SCRIPTED):
        return
    from corral_core.llm import LLMError
    from corral_core.llm.scripted import load_script

    try:
        load_script(script_path(model_id))
    except LLMError as exc:
        raise check.fail(at, exc.message) from None


UNLISTED_FIX = ("correct the model id. To run a model litellm does not list on purpose (a new model, a custom "
                "deployment, a proxy), give its API base (`api_base:` in the spec's model, --model-base-url, or "
                "the run form's API base): a model with an API base is not checked against litellm's list.")


def check_models(spec: BenchmarkSpec, *, file: str | None, where: str, fix: str) -> None:
    """Refuse, before any trial runs or anything is stored, every model of the spec's arms that can only
    produce errors: one litellm cannot route (an unknown provider prefix, a bare name it does not know:
    `fix` says how to correct it), a name a hosted provider does not list (a typo, with a did-you-mean), or
    one whose API key is not in the environment. One UserError names each. Asked once the command line
    or the run form has set the models (so not at load)."""
    from corral_core.llm import missing_credentials, model_problem, unlisted_problem
    from corral_core.llm.direct import OPENAI_PREFIX

    problems: list[UserError] = []
    for model in dict.fromkeys((arm.model.id, arm.model.api_base, arm.model.api_key_env) for arm in spec.arms):
        model_id, api_base, key_env = model
        routing = model_problem(model_id)
        if routing is not None:
            problems.append(UserError(f"{routing}.", file=file, where=where, fix=fix))
            continue
        unlisted = unlisted_problem(model_id, api_base)
        if unlisted is not None:
            problems.append(UserError(f"{unlisted}.", file=file, where=where, fix=UNLISTED_FIX))
        missing = missing_credentials(model_id, api_base, key_env)
        if missing:
            openai_base = api_base if model_id.startswith(OPENAI_PREFIX) else None
            problems.append(UserError(_missing_key(model_id, missing), file=file, where=where,
                                      fix=_key_fix(missing, key_env, openai_base)))
    if problems:
        raise UserError.combine(problems, file=file)


def _missing_key(model_id: str, missing: list[str]) -> str:
    names = " or ".join(missing)
    return f"model {model_id!r} needs its provider's API key in {names}, which is not set: every trial would fail."


def _key_fix(missing: list[str], key_env: str | None, openai_base: str | None = None) -> str:
    """How to set the missing key; `openai_base`: the API base of an `openai/` route (a local server)."""
    named = "" if key_env else (" (or name the variable that holds the key: `api_key_env:` in the spec's model, "
                                "or the run form's Key env)")
    keyless = (f" A local server that needs no key ({openai_base}) still needs a value there, any value: litellm's "
               f"route sends every call through the OpenAI SDK, which refuses to call without one (export "
               f"{missing[0]}=dummy)." if openai_base else "")
    return (f"export {missing[0]}=<your key> in the shell that starts corral-tui, or put it in a .env file in "
            f"the folder you start it from{named}.{keyless}")


def script_path(model_id: str) -> Path:
    """The script file of a `scripted/<name>` model (LLMError when there is none)."""
    from corral_core.llm import find_script

    return find_script(model_id[len(SCRIPTED):])


def scripted_default(check: _Checker, suites: tuple[Suite, ...]) -> str | None:
    """The model of a spec without `model:`: the suites' scripted model, when they agree on one."""
    scripts = {suite.name: suite.script for suite in suites if suite.script}
    distinct = sorted(set(scripts.values()))
    if len(distinct) > 1:
        named = ", ".join(f"{suite}: {script}" for suite, script in scripts.items())
        raise check.fail((), f"these suites have different scripted models ({named}), and one model runs "
                             "every task.", "set `model:` (e.g. `model: scripted/<one of them>`), or run the "
                                            "suites in separate specs.")
    return f"{SCRIPTED}{distinct[0]}" if distinct else None


def content_hashes(suite_paths: Iterable[Path], model_ids: Iterable[str], suites: Iterable[Any] = ()
                   ) -> tuple[tuple[str, str], ...]:
    """sha256 of each suite file, its environment module and each scripted model's script, by path,
    and the fingerprint of each suite's task source (a file's or folder's sha256, a dataset's commit).

    In the digest, so editing a task, a tool or a script starts a new lineage instead of resuming
    into a run that would mix old and new results."""
    files: dict[str, Path] = {}
    for path in suite_paths:
        files[str(path)] = path
        module = _environment_module(path)
        if module is not None:
            files[str(module)] = module
    for model_id in sorted(set(model_ids)):
        if model_id.startswith(SCRIPTED):
            script = script_path(model_id).resolve()
            files[str(script)] = script
    hashes = {name: hashlib.sha256(path.read_bytes()).hexdigest() for name, path in files.items()}
    for suite in suites:
        hashes.update(getattr(suite, "source_hashes", ()))
    return tuple(sorted(hashes.items()))


def _environment_module(suite_path: Path) -> Path | None:
    try:
        data: Any = safe_load(suite_path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return None
    module = data.get("environment") if isinstance(data, dict) else None
    if not isinstance(module, str):
        return None
    path = (suite_path.parent / module).resolve()
    return path if path.is_file() else None
