"""From a spec mapping to a `BenchmarkSpec`, checking every key (what load_spec and spec_from_dict run).

Each part is checked even when an earlier one is wrong, so one answer lists every mistake; a check
that builds on a wrong part (the tasks of a suite that failed to load, k against a bad trial count)
is left out rather than reported as a second, made-up mistake."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from corral_core.agents.breakpoints import Breakpoint, breakpoint_syntax
from corral_core.constants import EXECUTOR_FIX, MAX_IN_FLIGHT, is_executor
from corral_core.env import Suite, load_suite
from corral_core.errors import UserError
from corral_core.llm.callbacks import check_callback
from corral_core.llm.types import DEFAULT_MAX_RETRIES, RESERVED_PARAMS
from corral_core.metrics.attempt import DIRECTIONS
from corral_core.safetext import SECRET_NAME, register_secret, register_url_secrets
from corral_core.spec.checks import _Checker, _kind, did_you_mean
from corral_core.spec.model import (
    AGENT_KEYS,
    APPROVAL_POLICIES,
    ARM_KEYS,
    CHAIN_KEYS,
    DEFAULT_TIMEOUTS,
    HEARTBEAT_KEYS,
    HOOK_KEYS,
    LIMIT_KEYS,
    LIMIT_SCOPES,
    MODEL_KEYS,
    PRICE_KEYS,
    SPEC_KEYS,
    TIMEOUT_KEYS,
    AgentSpec,
    ArmSpec,
    BenchmarkSpec,
    HooksSpec,
    Limits,
    ModelSpec,
    Timeouts,
)
from corral_core.spec.preflight import check_agent_builds, check_scripted_model, content_hashes, scripted_default
from corral_core.tools.overlay import ORIGINAL, check_components
from corral_core.tools.verbosity import VALID_LEVELS
from corral_core.yamlfile import KeyPath, YamlDocument

MAX_PARALLEL = MAX_IN_FLIGHT  # trials at once in one process (the HTTP client pools as many connections)


UNCHECKED_MODEL = ModelSpec(id="")  # stands in for a model that failed its checks (never run)


def parse_spec(doc: YamlDocument, base_dir: Path, text: str) -> BenchmarkSpec:
    check = _Checker(doc)
    data = doc.data
    check.keys((), data, SPEC_KEYS)
    name = data.get("name") or (doc.path.stem.removesuffix(".bench") if doc.path.suffix else "benchmark")
    name = check.collect("benchmark", check.text, ("name",), str(name) if isinstance(name, (int, float)) else name)
    suite_paths, suites = _suites(check, data, base_dir)
    agent = check.collect(AgentSpec(), _agent, check, ("agent",), data.get("agent"), AgentSpec())
    model = None
    if data.get("model") is not None or not _every_arm_sets_model(data.get("arms")):
        model = check.collect(UNCHECKED_MODEL, _model, check, ("model",), data.get("model"), suites, base_dir)
    trials = check.collect(None, check.integer, ("trials_per_task",), data.get("trials_per_task", 1), 1)
    k_values = _k_values(check, data.get("k_values"), trials)
    arms = _arms(check, data.get("arms"), agent, model, suites, base_dir)
    before_tasks = len(check.errors)
    tasks = check.collect(None, _tasks, check, data.get("tasks"), suites) if suites is not None else None
    tasks_checked = suites is not None and check.clean_since(before_tasks)
    parallel = check.collect(1, _parallel, check, data.get("parallel", 1))
    surrender = check.collect(False, check.boolean, ("surrender",), data.get("surrender", False))
    threshold = check.collect(0.0, _threshold, check, data.get("pass_threshold", 0.0))
    timeouts = _timeouts(check, data.get("timeouts"))
    approval = check.collect("reject", check.choice, ("approval",), data.get("approval", "reject"),
                             APPROVAL_POLICIES, "approval policy")
    hooks = check.collect(HooksSpec(), _hooks, check, data.get("hooks"), suites)
    limits = _limits(check, data.get("limits"))
    margin = check.collect(None, _margin, check, data.get("equivalence_margin"))
    executor = check.collect("local", _executor, check, data.get("executor"))
    callbacks = check.collect((), _litellm_callbacks, check, data.get("litellm_callbacks"))
    direction = check.collect("maximize", check.choice, ("direction",), data.get("direction", "maximize"),
                              DIRECTIONS, "direction")
    chain_weights = check.collect((), _chain_weights, check, data.get("chain"), suites or (), tasks) \
        if tasks_checked else ()
    check.raise_errors()
    assert trials is not None and suites is not None  # no mistake was noted, so every part was read
    return BenchmarkSpec(
        name=name, source=str(doc.path), base_dir=base_dir, suite_paths=suite_paths, agent=agent,
        model=model or arms[0].model, arms=arms, trials_per_task=trials, k_values=k_values, parallel=parallel,
        surrender=surrender, pass_threshold=threshold, tasks=tasks, timeouts=timeouts, approval=approval,
        hooks=hooks, limits=limits, executor=executor, direction=direction, chain_weights=chain_weights,
        equivalence_margin=margin, litellm_callbacks=callbacks,
        description=str(data.get("description") or ""),
        text=text, data=dict(data), suites=suites,
        content_hashes=content_hashes(suite_paths, [arm.model.id for arm in arms], suites),
    )


def _suites(check: _Checker, data: Mapping[str, Any], base_dir: Path
            ) -> tuple[tuple[Path, ...], tuple[Suite, ...] | None]:
    """The suite files and their suites; None for the suites when one could not be loaded (noted)."""
    if "suite" in data and "suites" in data:
        check.errors.append(check.fail(("suites",), "give either `suite` or `suites`, not both.",
                                       "keep one: `suite: file.yaml` or `suites: [a.yaml, b.yaml]`."))
        return (), None
    key = "suites" if "suites" in data else "suite"
    value = data.get(key)
    if value is None:
        check.errors.append(check.fail((), "missing `suite`: the spec must name the task suite to run.",
                                       "add `suite: samplemath.yaml` (a path relative to the spec file)."))
        return (), None
    entries = value if isinstance(value, list) else [value]
    if not entries:
        check.errors.append(check.fail((key,), "`suites` is empty.", "list at least one suite file."))
        return (), None
    before = len(check.errors)
    paths: list[Path] = []
    suites: list[Suite] = []
    seen_tasks: dict[str, str] = {}  # task id -> the suite file that has it
    for index, entry in enumerate(entries):
        at: KeyPath = (key, index) if isinstance(value, list) else (key,)
        loaded = check.collect(None, _suite, check, at, entry, base_dir, seen_tasks)
        if loaded is not None:
            paths.append(loaded[0])
            suites.append(loaded[1])
    return tuple(paths), (tuple(suites) if check.clean_since(before) else None)


def _suite(check: _Checker, at: KeyPath, entry: Any, base_dir: Path, seen_tasks: dict[str, str]
           ) -> tuple[Path, Suite]:
    if not isinstance(entry, str) or not entry.strip():
        raise check.fail(at, f"a suite must be a file path, not {_kind(entry)}.")
    path = (base_dir / entry).resolve()
    if not path.is_file():
        raise check.fail(at, f"suite file {entry!r} not found (looked at {path}).",
                         "give the path of the suite YAML relative to the spec file.")
    suite = load_suite(path)
    for task_id in suite.task_ids:
        if task_id in seen_tasks:
            raise check.fail(at, f"task {task_id!r} is in both {seen_tasks[task_id]} and {path.name}.",
                             "run those suites in separate specs, or rename one of the tasks.")
        seen_tasks[task_id] = path.name
    return path, suite


def _agent(check: _Checker, at: KeyPath, value: Any, base: AgentSpec) -> AgentSpec:
    if value is None:
        return base
    if isinstance(value, str):
        value = {"type": value}
    raw = check.mapping(at, value, "`agent: {type: react, max_iterations: 10}`")
    before = len(check.errors)
    check.keys(at, raw, AGENT_KEYS)
    agent_type = base.type
    if "type" in raw:
        agent_type = check.collect(base.type, check.choice, (*at, "type"), raw["type"], _agent_types(), "agent type")
    options = dict(base.options) if agent_type == base.type else {}
    if "options" in raw:
        options.update(check.collect({}, check.mapping, (*at, "options"), raw["options"],
                                     "`options: {executor_max_iterations: 5}`"))
    if check.clean_since(before):  # options are checked against the agent type
        _check_agent_options(check, (*at, "options"), agent_type, options)
    agent = AgentSpec(
        type=agent_type,
        max_iterations=check.collect(base.max_iterations, check.integer, (*at, "max_iterations"),
                                     raw["max_iterations"], 1) if "max_iterations" in raw else base.max_iterations,
        temperature=check.collect(None, check.number, (*at, "temperature"), raw["temperature"], optional=True)
        if "temperature" in raw else base.temperature,
        system_prompt=check.collect(None, check.text, (*at, "system_prompt"), raw["system_prompt"], optional=True)
        if "system_prompt" in raw else base.system_prompt,
        options=options,
    )
    if check.clean_since(before):  # building it would only repeat a mistake already noted
        check_agent_builds(check, at, agent)
    return agent


def _agent_types() -> tuple[str, ...]:
    from corral_core.agents import AGENTS  # plugins' agents too

    return AGENTS.names()


def _every_arm_sets_model(arms: Any) -> bool:
    """True when the arms name their own models, so no spec-wide model is needed."""
    if isinstance(arms, Mapping):
        models = arms.get("model")
        models = models if isinstance(models, list) else [models]
        return bool(models) and all(m is not None for m in models)
    return (isinstance(arms, list) and bool(arms)
            and all(isinstance(a, Mapping) and a.get("model") is not None for a in arms))


def _check_agent_options(check: _Checker, at: KeyPath, agent_type: str, options: Mapping[str, Any]) -> None:
    if not options:
        return
    from corral_core.agents import AGENTS

    allowed = set(AGENTS.get(agent_type).options)
    for key in options:
        if key not in allowed:
            check.errors.append(check.fail((*at, key), f"agent type {agent_type!r} has no option `{key}`."
                                           f"{did_you_mean(key, allowed)}",
                                           f"use one of: {', '.join(sorted(allowed))}."))


def _model(check: _Checker, at: KeyPath, value: Any, suites: tuple[Suite, ...] | None, base_dir: Path) -> ModelSpec:
    if value is None:
        if suites is None:  # the default is the suites' script, and they did not load (noted)
            return UNCHECKED_MODEL
        default = scripted_default(check, suites)
        if default is None:
            raise check.fail((), "missing `model`.", "add `model: openai/gpt-4o-mini` (any litellm model id) or "
                                                     "`model: scripted/<script>` for an offline run.")
        check_scripted_model(check, (), default)
        return ModelSpec(id=default)
    id_at = at
    if isinstance(value, str):
        value = {"id": value}
    else:
        id_at = (*at, "id")
    raw = check.mapping(at, value, "`model: {id: openai/gpt-4o-mini, temperature: 0}` or a plain model id")
    check.keys(at, raw, MODEL_KEYS)
    if "id" not in raw:
        raise check.fail(at, "the model mapping has no `id`.", "add `id: openai/gpt-4o-mini` (a litellm model id).")
    model_id = _resolve_script_path(check.collect("", check.text, (*at, "id"), raw["id"]), base_dir)
    if model_id:
        check.collect(None, check_scripted_model, check, id_at, model_id)

    def read(key: str, fallback: Any, reader: Any, *args: Any, **kwargs: Any) -> Any:
        return check.collect(fallback, reader, (*at, key), raw.get(key, fallback), *args, **kwargs)

    extra = check.collect({}, check.mapping, (*at, "extra"), raw.get("extra") or {}, "`extra: {top_p: 0.9}`")
    clash = sorted(RESERVED_PARAMS & set(extra))
    if clash:
        check.errors.append(check.fail((*at, "extra", clash[0]), f"`{clash[0]}` is set by corral-tui itself, not "
                                       "through `extra`.", f"use the model's own key `{clash[0]}` where there is "
                                       "one (temperature, timeout, max_retries, api_base, max_connections, ...)."))
    spec = ModelSpec(
        id=model_id,
        api_base=read("api_base", None, check.text, optional=True),
        api_key_env=read("api_key_env", None, check.text, optional=True),
        temperature=read("temperature", None, check.number, optional=True),
        timeout=read("timeout", 60.0, check.number, positive=True),
        max_retries=read("max_retries", DEFAULT_MAX_RETRIES, check.integer, 0),
        max_connections=None if raw.get("max_connections") is None else read("max_connections", None,
                                                                              check.integer, 1),
        extra=extra,
        requests_per_minute=None if raw.get("requests_per_minute") is None else read("requests_per_minute", None,
                                                                                      check.integer, 1),
        tokens_per_minute=None if raw.get("tokens_per_minute") is None else read("tokens_per_minute", None,
                                                                                  check.integer, 1),
        price=None if raw.get("price") is None else check.collect(None, _price, check, (*at, "price"), raw["price"]),
    )
    _register_secrets(spec)  # the stored copy of the spec, errors and exports then show them as ***
    return spec


def _register_secrets(model: ModelSpec) -> None:
    """A key written in the spec (`extra.api_key`, `extra.extra_headers` values, api_base userinfo)."""
    register_url_secrets(model.api_base)
    extra = model.extra if isinstance(model.extra, dict) else {}
    for key, value in extra.items():
        if SECRET_NAME.search(str(key)):
            register_secret(value)
        elif "header" in str(key).lower() and isinstance(value, dict):
            for header_value in value.values():
                register_secret(header_value)


def _price(check: _Checker, at: KeyPath, value: Any) -> tuple[float, float]:
    """`price: {input: 0.15, output: 0.6}`: USD per million prompt and completion tokens."""
    raw = check.mapping(at, value, "`price: {input: 0.15, output: 0.6}` (USD per million tokens)")
    check.keys(at, raw, PRICE_KEYS)
    missing = [key for key in PRICE_KEYS if key not in raw]
    if missing:
        raise check.fail(at, f"the price has no `{missing[0]}`.",
                         "give both: `price: {input: 0.15, output: 0.6}` (USD per million prompt / completion tokens).")
    prices = tuple(check.number((*at, key), raw[key]) for key in PRICE_KEYS)
    negative = next((key for key, price in zip(PRICE_KEYS, prices, strict=True) if price < 0), None)
    if negative is not None:
        raise check.fail((*at, negative), f"a price cannot be negative ({negative}: {raw[negative]}).",
                         "give USD per million tokens, 0 for free.")
    return prices[0], prices[1]


def _resolve_script_path(model_id: str, base_dir: Path) -> str:
    """`scripted/x.script.yaml` given relative to the spec file becomes an absolute script path."""
    prefix = "scripted/"
    if model_id.startswith(prefix) and model_id.endswith((".yaml", ".yml")):
        candidate = (base_dir / model_id[len(prefix):]).resolve()
        if candidate.is_file():
            return prefix + str(candidate)
    return model_id


def _k_values(check: _Checker, value: Any, trials: int | None) -> tuple[int, ...]:
    """pass@k's k values; against a trial count that is itself wrong (None) only their own type is checked."""
    if value is None:
        return tuple(range(1, (trials or 1) + 1))
    entries = value if isinstance(value, list) else [value]
    if not entries:
        check.errors.append(check.fail(("k_values",), "`k_values` is empty.",
                                       "list values such as [1, 3], or remove the key."))
    ks = []
    for index, entry in enumerate(entries):
        at: KeyPath = ("k_values", index) if isinstance(value, list) else ("k_values",)
        k = check.collect(None, check.integer, at, entry, 1)
        if k is not None and trials is not None and k > trials:
            check.errors.append(check.fail(at, f"k = {k} is larger than trials_per_task ({trials}); pass@{k} needs "
                                               f"at least {k} trials per task.",
                                           f"lower k to at most {trials} or raise trials_per_task."))
        elif k is not None:
            ks.append(k)
    return tuple(sorted(set(ks)))


def _parallel(check: _Checker, value: Any) -> int:
    parallel = check.integer(("parallel",), value, 1)
    if parallel > MAX_PARALLEL:
        raise check.fail(("parallel",), f"`parallel` is {parallel}; at most {MAX_PARALLEL} trials can run at once.",
                         f"use `parallel: {MAX_PARALLEL}` or less (more helps only while trials wait on a slow model).")
    return parallel


def _threshold(check: _Checker, value: Any) -> float:
    threshold = check.number(("pass_threshold",), value)
    if not 0.0 <= threshold < 1.0:
        raise check.fail(("pass_threshold",), f"`pass_threshold` must be in [0, 1), not {threshold:g}.",
                         "a trial succeeds when its score is above the threshold; 0 counts any credit.")
    return threshold


def _margin(check: _Checker, value: Any) -> float | None:
    if value is None:
        return None
    margin = check.number(("equivalence_margin",), value)
    if not 0.0 < margin < 1.0:
        raise check.fail(("equivalence_margin",), f"`equivalence_margin` must be in (0, 1), not {margin:g}.",
                         "the largest score difference you would call no difference, e.g. 0.05.")
    return margin


def _arms(check: _Checker, value: Any, agent: AgentSpec, model: ModelSpec | None,
          suites: tuple[Suite, ...] | None, base_dir: Path) -> tuple[ArmSpec, ...]:
    """The arms; an arm with a mistake is noted and left out (and then arm names are not compared)."""
    if value is None:
        return check.collect((), lambda: (ArmSpec("default", "full", _arm_model(check, (), model), agent),))
    if isinstance(value, Mapping):  # shorthand sweep: {verbosity: [minimal, brief], model: [...]}
        return _sweep(check, dict(value), agent, model, suites, base_dir)
    if not isinstance(value, list) or not value:
        check.errors.append(check.fail(("arms",), "`arms` must be a list of arms or a sweep such as "
                                                  "`{verbosity: [minimal, brief, full]}`."))
        return ()
    before = len(check.errors)
    arms: list[ArmSpec] = []
    for index, entry in enumerate(value):
        arm = check.collect(None, _arm, check, index, entry, agent, model, suites, base_dir)
        if arm is not None:
            arms.append(arm)
    if check.clean_since(before):
        _unique_names(check, arms)
    return tuple(arms)


def _arm(check: _Checker, index: int, entry: Any, agent: AgentSpec, model: ModelSpec | None,
         suites: tuple[Suite, ...] | None, base_dir: Path) -> ArmSpec | None:
    at: KeyPath = ("arms", index)
    raw = check.mapping(at, entry, "`- {name: brief, verbosity: brief}`")
    before = len(check.errors)
    check.keys(at, raw, ARM_KEYS)
    if "model" in raw:
        arm_model = check.collect(UNCHECKED_MODEL, _model, check, (*at, "model"), raw["model"], suites, base_dir)
    else:
        arm_model = check.collect(UNCHECKED_MODEL, _arm_model, check, at, model)
    arm_agent = check.collect(agent, _agent, check, (*at, "agent"), raw["agent"], agent) if "agent" in raw else agent
    verbosity = check.collect("full", _verbosity, check, (*at, "verbosity"), raw.get("verbosity", "full"))
    parts = [verbosity if "verbosity" in raw else None, _short(arm_model.id) if "model" in raw else None,
             arm_agent.type if "agent" in raw else None]
    variant = check.collect(None, _variant, check, (*at, "variant"), raw["variant"], suites) \
        if "variant" in raw else None
    components = check.collect(None, _components, check, (*at, "components"), raw["components"]) \
        if "components" in raw else None
    parts += [variant, "+".join(components) if components else None]
    default_name = "-".join(p for p in parts if p) or f"arm{index + 1}"
    name = check.collect("", check.text, (*at, "name"), str(raw["name"])) if "name" in raw else default_name
    return ArmSpec(name, verbosity, arm_model, arm_agent, variant, components) if check.clean_since(before) else None


def _variant(check: _Checker, at: KeyPath, value: Any, suites: tuple[Suite, ...] | None) -> str:
    """A documentation variant every suite of the spec has (`original`, or one of its overlays)."""
    if not isinstance(value, str) or not value:
        raise check.fail(at, "`variant` must be the name of a documentation variant.",
                         "name one of the suites' `documentation.variants`, or `original`.")
    for suite in suites or ():
        variants = getattr(suite, "variants", (ORIGINAL,))
        if value not in variants:
            raise check.fail(at, f"the suite {suite.name!r} has no documentation variant {value!r}.",
                             f"use one of: {', '.join(variants)} (variants are named in the suite's "
                             "`documentation.variants`).")
    return value


def _components(check: _Checker, at: KeyPath, value: Any) -> tuple[str, ...]:
    try:
        return check_components(value)
    except ValueError as exc:
        raise check.fail(at, f"{exc}.", "write e.g. `components: [brief, syntactical]`.") from None


def _sweep(check: _Checker, raw: dict[str, Any], agent: AgentSpec, model: ModelSpec | None,
           suites: tuple[Suite, ...] | None, base_dir: Path) -> tuple[ArmSpec, ...]:
    before = len(check.errors)
    check.keys(("arms",), raw, ("verbosity", "model"))
    levels = raw.get("verbosity", ["full"])
    levels = levels if isinstance(levels, list) else [levels]
    models = raw.get("model", [None])
    models = models if isinstance(models, list) else [models]
    if not levels or not models:
        check.errors.append(check.fail(("arms",), "an arm sweep needs at least one value per key."))
        return ()
    arm_models = []
    for mi, model_value in enumerate(models):
        if model_value is None:
            arm_models.append(check.collect(UNCHECKED_MODEL, _arm_model, check, ("arms", "model", mi), model))
        else:
            arm_models.append(check.collect(UNCHECKED_MODEL, _model, check, ("arms", "model", mi), model_value,
                                            suites, base_dir))
    verbosities = [check.collect("full", _verbosity, check, ("arms", "verbosity", vi), level)
                   for vi, level in enumerate(levels)]
    if not check.clean_since(before):
        return ()
    arms = []
    for arm_model in arm_models:
        for verbosity in verbosities:
            parts = [verbosity if "verbosity" in raw else None,
                     _short(arm_model.id) if "model" in raw and len(models) > 1 else None]
            arms.append(ArmSpec("-".join(p for p in parts if p) or "default", verbosity, arm_model, agent))
    _unique_names(check, arms)
    return tuple(arms)


def _arm_model(check: _Checker, at: KeyPath, model: ModelSpec | None) -> ModelSpec:
    """The spec-wide model for an arm that names none (parse_spec leaves it out only when every arm has one)."""
    if model is None:
        raise check.fail(at, "this arm names no `model` and the spec has none.",
                         "add `model: openai/gpt-4o-mini` to the arm or at the top of the spec.")
    return model


def _verbosity(check: _Checker, at: KeyPath, value: Any) -> str:
    return check.choice(at, value, VALID_LEVELS, "verbosity level")


def _short(model_id: str) -> str:
    return model_id.rstrip("/").rsplit("/", 1)[-1].removesuffix(".yaml").removesuffix(".script")


def _unique_names(check: _Checker, arms: list[ArmSpec]) -> None:
    seen: set[str] = set()
    for index, arm in enumerate(arms):
        if arm.name in seen:
            check.errors.append(check.fail(("arms", index), f"two arms are named {arm.name!r}.",
                                           "give each arm a distinct `name:`."))
        seen.add(arm.name)


def _tasks(check: _Checker, value: Any, suites: tuple[Suite, ...]) -> tuple[str, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not value:
        raise check.fail(("tasks",), "`tasks` must be a non-empty list of task ids.",
                         "remove `tasks` to run every task of the suite.")
    known = {t: s for s in suites for t in s.task_ids}
    chosen: list[str] = []
    for index, entry in enumerate(value):
        task_id = str(entry)
        if task_id not in known:
            check.errors.append(check.fail(("tasks", index), f"unknown task {task_id!r}."
                                           f"{did_you_mean(task_id, known)}",
                                           f"use task ids of the suite: {', '.join(list(known)[:15])}."))
        else:
            chosen.append(task_id)
    if len(chosen) < len(value):  # a dependency may be the task whose id was mistyped
        return None
    for task_id in chosen:
        for dep in known[task_id].tasks[task_id].depends_on:
            if dep not in chosen:
                raise check.fail(("tasks",), f"the selected tasks are not dependency-closed: {task_id!r} needs "
                                             f"the output of {dep!r}.", f"add {dep!r} to `tasks`.")
    return tuple(dict.fromkeys(chosen))


def _timeouts(check: _Checker, value: Any) -> Timeouts:
    if value is None:
        return Timeouts()
    raw = check.collect({}, check.mapping, ("timeouts",), value,
                        "`timeouts: {trial: 600, tool: 60, grader: 60, approval: 120}`")
    check.keys(("timeouts",), raw, TIMEOUT_KEYS)
    values = {key: (check.collect(DEFAULT_TIMEOUTS[key], check.number, ("timeouts", key), raw[key], positive=True,
                                  optional=True) if key in raw else DEFAULT_TIMEOUTS[key]) for key in TIMEOUT_KEYS}
    return Timeouts(**values)


def _executor(check: _Checker, value: Any) -> str:
    if value is None:
        return "local"
    text = check.text(("executor",), value)
    if is_executor(text):
        return text
    raise check.fail(("executor",), f"unknown executor {text!r}.", EXECUTOR_FIX)


def _litellm_callbacks(check: _Checker, value: Any) -> tuple[str, ...]:
    """`litellm_callbacks: [mlflow, my_module:LOGGER]`: litellm integration names or module:attribute."""
    if value is None:
        return ()
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not all(isinstance(n, str) and n.strip() for n in names):
        raise check.fail(("litellm_callbacks",), "`litellm_callbacks` must be a list of names.",
                         "e.g. `litellm_callbacks: [mlflow, langfuse]` (as litellm documents them).")
    for name in names:
        try:
            check_callback(name.strip())
        except UserError as exc:
            raise check.fail(("litellm_callbacks",), exc.problem, exc.fix) from None
    return tuple(name.strip() for name in names)


def _limits(check: _Checker, value: Any) -> Limits:
    if value is None:
        return Limits()
    raw = check.collect({}, check.mapping, ("limits",), value,
                        "`limits: {trial: {cost: 0.5, tokens: 200000}, benchmark: {cost: 20}}`")
    check.keys(("limits",), raw, LIMIT_SCOPES)
    values: dict[str, Any] = {}
    for scope in LIMIT_SCOPES:
        part = check.collect({}, check.mapping, ("limits", scope), raw.get(scope) or {},
                             f"`{scope}: {{cost: 0.5, tokens: 200000}}`")
        check.keys(("limits", scope), part, LIMIT_KEYS)
        values[f"{scope}_cost"] = check.collect(None, check.number, ("limits", scope, "cost"), part.get("cost"),
                                                positive=True, optional=True)
        tokens = part.get("tokens")
        values[f"{scope}_tokens"] = None if tokens is None else check.collect(
            None, check.integer, ("limits", scope, "tokens"), tokens, 1)
    return Limits(**values)


def _hooks(check: _Checker, value: Any, suites: tuple[Suite, ...] | None) -> HooksSpec:
    if value is None:
        return HooksSpec()
    raw = check.mapping(("hooks",), value, "`hooks: {interventions: {task_id: text}}`")
    check.keys(("hooks",), raw, HOOK_KEYS)
    known = None if suites is None else {t for s in suites for t in s.task_ids}  # None: the suites failed
    interventions = check.collect({}, check.mapping, ("hooks", "interventions"), raw.get("interventions") or {},
                                  "`interventions: {add: \"Use the calculator.\"}`")
    for task_id, text in interventions.items():
        if known is not None and task_id not in known:
            check.errors.append(check.fail(("hooks", "interventions", task_id), f"intervention for unknown task "
                                           f"{task_id!r}.{did_you_mean(task_id, known)}",
                                           "key interventions by task ids of the suite."))
        check.collect(None, check.text, ("hooks", "interventions", task_id), text)
    every = prompt = None
    if raw.get("heartbeat") is not None:
        beat = check.mapping(("hooks", "heartbeat"), raw["heartbeat"], "`heartbeat: {every: 3, prompt: ...}`")
        check.keys(("hooks", "heartbeat"), beat, HEARTBEAT_KEYS)
        for key in HEARTBEAT_KEYS:
            if key not in beat:
                raise check.fail(("hooks", "heartbeat"), f"the heartbeat needs `{key}`.",
                                 "write `heartbeat: {every: 3, prompt: \"Check your progress.\"}`.")
        every = check.integer(("hooks", "heartbeat", "every"), beat["every"], 1)
        prompt = check.text(("hooks", "heartbeat", "prompt"), beat["prompt"])
    return HooksSpec({str(k): str(v) for k, v in interventions.items()}, every, prompt,
                     _breakpoints(check, raw.get("breakpoints")))


def _breakpoints(check: _Checker, value: Any) -> tuple[Breakpoint, ...]:
    """`breakpoints: ["tool:calculator", "tokens>2000"]` (the syntax of agents/breakpoints.py)."""
    if value is None:
        return ()
    if not isinstance(value, list):
        check.errors.append(check.fail(("hooks", "breakpoints"), f"`breakpoints` must be a list, not {_kind(value)}.",
                                       "write `breakpoints: [\"tool:calculator\", \"tokens>2000\"]` "
                                       f"({breakpoint_syntax()})."))
        return ()
    found = []
    for i, item in enumerate(value):
        text = check.collect(None, check.text, ("hooks", "breakpoints", i), item)
        try:
            if text is not None:
                found.append(Breakpoint.parse(text))
        except ValueError as exc:
            check.errors.append(check.fail(("hooks", "breakpoints", i), f"{exc}.", f"write {breakpoint_syntax()}."))
    return tuple(found)


def _chain_weights(check: _Checker, value: Any, suites: tuple[Suite, ...], tasks: tuple[str, ...] | None
                   ) -> tuple[tuple[str, float], ...]:
    """`chain: {weights: {task: w}}`: a weight for every link of each chain, each chain's summing to 1."""
    if value is None:
        return ()
    raw = check.mapping(("chain",), value, "`chain: {weights: {lookup: 0.3, compute: 0.3, report: 0.4}}`")
    check.keys(("chain",), raw, CHAIN_KEYS)
    if raw.get("weights") is None:
        return ()
    at: KeyPath = ("chain", "weights")
    weights = check.mapping(at, raw["weights"], "`weights: {lookup: 0.3, compute: 0.3, report: 0.4}`")
    selected = [t for s in suites for t in s.ordered_task_ids() if tasks is None or t in tasks]
    chains = [links for s in suites if (links := s.chained_task_ids(selected))]
    linked = {t for chain in chains for t in chain}
    if not chains:
        raise check.fail(at, "`chain.weights` is set, but no selected task is part of a chain.",
                         "remove `chain`, or run a suite whose tasks use `depends_on`.")
    values: dict[str, float] = {}
    before = len(check.errors)  # a missing or wrong weight leaves the spec without its chain weights
    for task_id, weight in weights.items():
        check.collect(None, _chain_weight, check, (*at, task_id), str(task_id), weight, linked, values)
    if not check.clean_since(before):  # sums over a mistyped link or weight would repeat it
        return ()
    for chain in chains:
        missing = [t for t in chain if t not in values]
        if missing:
            check.errors.append(check.fail(at, f"no weight for the chain link(s) {', '.join(missing)}.",
                                           f"give every link of the chain a weight: {', '.join(chain)}."))
            continue
        total = sum(values[t] for t in chain)
        if abs(total - 1.0) > 1e-9:
            shown = ", ".join(f"{t}: {values[t]:g}" for t in chain)
            check.errors.append(check.fail(
                at, f"the weights of the chain {' -> '.join(chain)} sum to {total:g}, not 1 ({shown}); the "
                    "workflow score is sum(weight x link score), so the weights must sum to 1.",
                "scale them to sum to 1, e.g. 0.3, 0.3 and 0.4."))
    if not check.clean_since(before):
        return ()
    return tuple((t, values[t]) for chain in chains for t in chain)


def _chain_weight(check: _Checker, at: KeyPath, task_id: str, weight: Any, linked: set[str],
                  values: dict[str, float]) -> None:
    if task_id not in linked:
        raise check.fail(at, f"{task_id!r} is not a link of a chain in this spec.{did_you_mean(task_id, linked)}",
                         f"give weights for the chain links: {', '.join(sorted(linked))}.")
    number = check.number(at, weight)
    if not number >= 0 or number == float("inf"):
        raise check.fail(at, f"the weight of {task_id!r} must be a finite number >= 0, not {number}.")
    values[task_id] = number
