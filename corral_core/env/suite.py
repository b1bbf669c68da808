"""Task suites: a YAML file naming an environment module and listing tasks.

```yaml
name: samplemath
environment: ../environments/samplemath.py   # loaded by file path, relative to this file
tools: [calculator, round_number]            # module tools by name, or tool declarations (mappings)
scoring: {type: numeric, tolerance: 1e-6}    # default for tasks without their own
tasks:
  - id: add
    prompt: What is 17 + 25?
    answer: 42
```

`tasks:` may instead name a JSONL or CSV file, a dataset folder or a Hugging Face dataset, with a
field mapping and sampling (`corral_core.env.task_source`).

Every mistake is a `UserError` naming the file, the line and the fix.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

from corral_core.env.chains import DependencyError, EpisodeStore, topological_order
from corral_core.env.environment import Environment, ScoreResult
from corral_core.env.scoring import Scorer, ScoringContext, build_scorer
from corral_core.env.task_source import RowSite, load_rows, parse_source, row_entry
from corral_core.errors import UserError
from corral_core.pyfile import load_python_file
from corral_core.registry import closest
from corral_core.tools import Tool
from corral_core.tools.overlay import ORIGINAL, Overlay, check_components, documented, load_overlay
from corral_core.yamlfile import KeyPath, YamlDocument, load_yaml_document

SUITE_KEYS = {
    "name": "the suite's name",
    "description": "one line about the suite",
    "environment": "path of the environment module (.py), relative to the suite file",
    "environment_class": "name of a SuiteEnvironment subclass in that module",
    "tools": "module tool names or tool declarations",
    "allow_private_urls": "let URL tools reach private and loopback addresses",
    "scoring": "default scoring for the tasks",
    "script": "the scripted model's script name for this suite",
    "tasks": "the list of tasks, or a file or dataset holding them (tasks.jsonl, tasks.csv, hf://org/name)",
    "documentation": "documentation overlays and variants, and how untagged tools are shown",
}
DOCUMENTATION_KEYS = {
    "overlay": "an overlay file every arm sees unless it names a variant",
    "variants": "variant name -> overlay file, for arms that name a `variant:`",
    "untagged": "derived (the default: a gradient over the levels) or as-written (Corral's rendering)",
}
UNTAGGED_MODES = ("derived", "as-written")
DEFAULT_OVERLAY_VARIANT = "overlay"  # the variant name of the suite's `documentation.overlay`
TASK_KEYS = {"id", "prompt", "answer", "scoring", "depends_on", "solvable", "tools", "metadata", "description",
             "correct_tools"}


@dataclass
class TaskSpec:
    """One task of a suite."""

    id: str
    prompt: str | list[dict[str, Any]]
    answer: Any = None
    scoring: dict[str, Any] = field(default_factory=lambda: {"type": "exact"})
    depends_on: list[str] = field(default_factory=list)
    solvable: bool = True
    tools: list[str] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    description: str = ""
    scorer: Scorer | None = None
    # the tools that count as a correct choice (a tool-selection study): the selection tally reports, per
    # arm, how often the first call and any call named one of them; None: the task declares none
    correct_tools: list[str] | None = None


class SuiteEnvironment(Environment):
    """An environment whose prompt, answer and scoring come from a suite's task entry."""

    def __init__(self, task_id: str, *, task: TaskSpec, tools: Iterable[Tool],
                 episode: EpisodeStore | None = None, **kwargs: Any) -> None:
        self.task = task
        self.episode = episode
        super().__init__(task_id, **kwargs)
        for tool in tools:
            self.add_tool(tool)

    def upstream_inputs(self) -> dict[str, Any]:
        """Outputs of this task's dependencies in the current episode (missing ones are None)."""
        outputs = self.episode.outputs() if self.episode is not None else {}
        return {dep: (outputs[dep].answer if dep in outputs else None) for dep in self.task.depends_on}

    def get_task_prompt(self) -> str | list[dict[str, Any]]:
        prompt = self.task.prompt
        if not self.task.depends_on or not isinstance(prompt, str):
            return prompt
        lines = [f"- Output of {dep}: {value if value is not None else '(not available)'}"
                 for dep, value in self.upstream_inputs().items()]
        return prompt + "\n\nInputs from earlier steps:\n" + "\n".join(lines)

    def score(self) -> ScoreResult:
        if self.task.scorer is None:
            raise RuntimeError(f"task {self.task_id} has no scorer")
        context = ScoringContext(task_id=self.task_id, expected=self.task.answer,
                                 tool_calls=list(self.state.tool_calls), inputs=self.upstream_inputs(),
                                 metadata=self.task.metadata, workspace=self.current_work_dir,
                                 call_tool=self.grader_call,
                                 correct_tools=tuple(self.task.correct_tools or ()))
        return self.task.scorer(self.state.submitted_answer, context)

    def on_scored(self, answer: str, score: float) -> None:
        if self.episode is not None:
            self.episode.record(self.task_id, answer, score, self.state.trial_id)

    def on_unscored(self) -> None:
        # An episode shared across rounds (Corral's task routes) must not keep serving the output
        # of an earlier round once this task's latest trial produced none.
        if self.episode is not None:
            self.episode.discard(self.task_id)


class Suite:
    """A named set of tasks with their tools and environment class."""

    def __init__(self, name: str, tasks: Iterable[TaskSpec], tools: Iterable[Tool], *,
                 environment_class: type[SuiteEnvironment] = SuiteEnvironment, description: str = "",
                 path: Path | None = None, script: str | None = None, allow_private_urls: bool = False,
                 source_hashes: tuple[tuple[str, str], ...] = (), overlays: Mapping[str, Overlay] | None = None,
                 default_variant: str | None = None, derive: bool = False) -> None:
        self.name = name
        # documentation (corral_core/tools/overlay.py): variant name -> overlay; the variant an arm that
        # names none sees; whether a tool without tags is shown by the derived rule
        self.overlays: dict[str, Overlay] = dict(overlays or {})
        self.default_variant = default_variant
        self.derive = derive
        self._views: dict[tuple[str | None, tuple[str, ...] | None], dict[str, Tool]] = {}
        self.source_hashes = source_hashes  # (task source, fingerprint of its content): in the spec digest
        self.description = description
        self.path = path
        self.script = script
        self.allow_private_urls = allow_private_urls
        self.environment_class = environment_class
        self.tasks: dict[str, TaskSpec] = {}
        for task in tasks:
            if task.id in self.tasks:
                raise ValueError(f"duplicate task id {task.id!r}")
            self.tasks[task.id] = task
        self.own_tools: dict[str, Tool] = {tool.name: tool for tool in tools}  # as their sources built them
        self.tools: dict[str, Tool] = self.view(None, None)  # as an arm that names no variant sees them
        for task in self.tasks.values():
            missing = [name for name in task.tools or [] if name not in self.tools]
            if missing:
                raise ValueError(f"task {task.id!r} lists unknown tools {missing}; known: {sorted(self.tools)}")
            offered = task.tools if task.tools is not None else list(self.tools)
            wrong = [name for name in task.correct_tools or [] if name not in offered]
            if wrong:
                raise ValueError(f"task {task.id!r} counts tools it does not offer as correct choices {wrong}; "
                                 f"it offers: {sorted(offered)}")
            if task.scorer is None:
                task.scorer = build_scorer(task.scoring, task.answer, self._no_python)
        self.order = topological_order(self.dependency_graph())

    @staticmethod
    def _no_python(name: str) -> Any:
        raise ValueError(f"python scoring function {name!r} needs an environment module")

    @property
    def task_ids(self) -> list[str]:
        return list(self.tasks)

    @property
    def chained(self) -> bool:
        return any(task.depends_on for task in self.tasks.values())

    def dependency_graph(self) -> dict[str, list[str]]:
        return {tid: list(task.depends_on) for tid, task in self.tasks.items()}

    def ordered_task_ids(self) -> list[str]:
        return list(self.order)

    def chained_task_ids(self, selected: Iterable[str]) -> list[str]:
        """The selected tasks that take part in a chain (depend on, or are depended on by, another
        selected task), in dependency order."""
        chosen = set(selected)
        linked: set[str] = set()
        for task_id, task in self.tasks.items():
            if task_id in chosen and task.depends_on:
                linked.add(task_id)
                linked.update(dep for dep in task.depends_on if dep in chosen)
        return [t for t in self.order if t in linked]

    @property
    def variants(self) -> tuple[str, ...]:
        """The documentation variants an arm may name: `original` (the tools' own) and the overlays."""
        return (ORIGINAL, *self.overlays)

    def view(self, variant: str | None, components: Iterable[str] | None) -> dict[str, Tool]:
        """The tools as `variant` (None: the suite's default) shows them, with exactly `components`
        (None: all); ValueError for a variant the suite does not have or an unknown component."""
        kept = check_components(list(components)) if components is not None else None
        chosen = self.default_variant if variant is None else variant
        if chosen is not None and chosen != ORIGINAL and chosen not in self.overlays:
            raise ValueError(f"the suite {self.name!r} has no documentation variant {chosen!r}; "
                             f"it has: {', '.join(self.variants)}")
        key = (chosen, kept)
        tools = self._views.get(key)
        if tools is None:
            overlay = self.overlays.get(chosen) if chosen is not None else None
            tools = {name: documented(tool, overlay, chosen, derive=self.derive, components=kept)
                     for name, tool in self.own_tools.items()}
            self._views[key] = tools
        return tools

    def documentation_record(self) -> list[dict[str, Any]]:
        """What a run records of the suite's overlays: variant, file, sha256 and text of each."""
        return [overlay.record(name) for name, overlay in self.overlays.items()]

    def tools_for(self, task_id: str, variant: str | None = None, components: Iterable[str] | None = None
                  ) -> list[Tool]:
        names = self.tasks[task_id].tools
        tools = self.tools if variant is None and components is None else self.view(variant, components)
        return list(tools.values()) if names is None else [tools[n] for n in names]

    def create_environment(self, task_id: str, *, work_dir: str | Path | None = None,
                           episode: EpisodeStore | None = None, **options: Any) -> SuiteEnvironment:
        """A fresh environment for one task; `options` go to `Environment` (gate, timeouts, trial_id)."""
        task = self.tasks[task_id]
        return self.environment_class(task_id, task=task, tools=self.tools_for(task_id), episode=episode,
                                      work_dir=work_dir, **options)


# --- loading from YAML -------------------------------------------------------------------------

def load_module(path: Path) -> ModuleType:
    """Import an environment module by path (see `corral_core.pyfile`)."""
    return load_python_file(path)


def load_suite(path: str | Path) -> Suite:
    """Load a suite YAML, or a Corral-style environment module (a .py file defining `environments`);
    every problem is a `UserError` naming file, line and fix."""
    if str(path).endswith(".py"):
        from corral_core.env.prebuilt import load_environments

        return load_environments(path)
    doc = load_yaml_document(path, "suite file")
    data = doc.data
    _check_keys(doc, (), data, SUITE_KEYS)
    name = _required(doc, ("name",), str)
    for key in ("description", "script", "environment_class"):
        if data.get(key) is not None and not isinstance(data[key], str):
            raise doc.error((key,), f"`{key}` must be text, not {type(data[key]).__name__}.")
    module = _load_environment_module(doc)
    tools = _load_tools(doc, module)
    default_scoring = data.get("scoring", {"type": "exact"})
    if not isinstance(default_scoring, Mapping):
        raise doc.error(("scoring",), "`scoring` must be a mapping such as {type: numeric}.")
    source_hashes: list[tuple[str, str]] = []
    tasks = _load_tasks(doc, module, dict(default_scoring), source_hashes, [tool.name for tool in tools])
    env_class = _environment_class(doc, module)
    overlays, default_variant, derive = _documentation(doc, {tool.name: tool for tool in tools})
    source_hashes.extend((str(overlay.path), overlay.sha256) for overlay in overlays.values())
    try:
        return Suite(name, tasks, tools, environment_class=env_class, description=str(data.get("description", "")),
                     path=doc.path, script=data.get("script"), allow_private_urls=bool(data.get("allow_private_urls")),
                     source_hashes=tuple(source_hashes), overlays=overlays, default_variant=default_variant,
                     derive=derive)
    except DependencyError as exc:
        raise doc.error(("tasks",), f"{exc}.", "make `depends_on` name earlier tasks without cycles.") from None
    except ValueError as exc:
        raise doc.error(("tasks",), f"{exc}.") from None


def _documentation(doc: YamlDocument, tools: Mapping[str, Tool]) -> tuple[dict[str, Overlay], str | None, bool]:
    """(variant -> overlay, the default variant, derive?) from the suite's `documentation:`."""
    section = doc.data.get("documentation") or {}
    at: tuple[Any, ...] = ("documentation",)
    if not isinstance(section, Mapping):
        raise doc.error(at, "`documentation` must be a mapping.", "write `overlay: FILE`, `variants: {NAME: FILE}` "
                        "or `untagged: derived|as-written` under it.")
    _check_keys(doc, at, section, DOCUMENTATION_KEYS)
    untagged = section.get("untagged", "derived")
    if untagged not in UNTAGGED_MODES:
        raise doc.error((*at, "untagged"), f"`untagged` must be one of {', '.join(UNTAGGED_MODES)}, not {untagged!r}.")
    files: dict[str, tuple[tuple[Any, ...], Any]] = {}
    if section.get("overlay") is not None:
        files[DEFAULT_OVERLAY_VARIANT] = ((*at, "overlay"), section["overlay"])
    variants = section.get("variants") or {}
    if not isinstance(variants, Mapping):
        raise doc.error((*at, "variants"), "`variants` must map a variant name to an overlay file.",
                        "write e.g. `variants: {rewritten: overlays/rewritten.yaml}`.")
    for name, file in variants.items():
        if not isinstance(name, str) or name in (ORIGINAL, DEFAULT_OVERLAY_VARIANT) or name in files:
            raise doc.error((*at, "variants", name), f"the variant name {name!r} is taken or not text.",
                            f"use another name ({ORIGINAL!r} means the tools' own documentation, "
                            f"{DEFAULT_OVERLAY_VARIANT!r} the suite's `overlay`).")
        files[name] = ((*at, "variants", name), file)
    overlays: dict[str, Overlay] = {}
    for name, (where, file) in files.items():
        if not isinstance(file, str) or not file:
            raise doc.error(where, "an overlay is the path of a YAML file, relative to the suite file.")
        path = doc.path.parent / file
        if not path.is_file():
            raise doc.error(where, f"overlay file {file!r} not found (looked at {path}).",
                            "give the path of the overlay YAML relative to the suite file.")
        overlays[name] = load_overlay(path, tools)
    default = DEFAULT_OVERLAY_VARIANT if DEFAULT_OVERLAY_VARIANT in overlays else None
    return overlays, default, untagged == "derived"


def _check_keys(doc: ErrorSite, at: tuple[Any, ...], mapping: Mapping[str, Any], allowed: Iterable[str]) -> None:
    allowed = set(allowed)
    for key in mapping:
        if key not in allowed:
            raise doc.error((*at, key), f"unknown key {key!r}.", f"use one of: {', '.join(sorted(allowed))}.")


def _required(doc: YamlDocument, at: tuple[Any, ...], kind: type) -> Any:
    value: Any = doc.data
    for part in at:
        value = value.get(part) if isinstance(value, Mapping) else None
    if value is None or value == "":
        raise doc.error(at, f"missing required field `{at[-1]}`.", f"add `{at[-1]}:` here.")
    if not isinstance(value, kind):
        raise doc.error(at, f"`{at[-1]}` must be a {kind.__name__}, not {type(value).__name__}.")
    return value


def _load_environment_module(doc: YamlDocument) -> ModuleType | None:
    rel = doc.data.get("environment")
    if rel is None:
        return None
    if not isinstance(rel, str):
        raise doc.error(("environment",), "`environment` must be a path to a .py file.")
    path = (doc.path.parent / rel)
    if not path.is_file():
        raise doc.error(("environment",), f"environment module {rel!r} not found (looked at {path}).",
                        "give the path of the .py file relative to the suite file.")
    try:
        return load_module(path)
    except Exception as exc:
        raise doc.error(("environment",), f"could not load environment module {rel!r}: "
                        f"{type(exc).__name__}: {exc}.", "fix the module so it imports cleanly.") from None


def _module_tools(module: ModuleType | None) -> dict[str, Tool]:
    if module is None:
        return {}
    return {value.name: value for value in vars(module).values() if isinstance(value, Tool)}


def _load_tools(doc: YamlDocument, module: ModuleType | None) -> list[Tool]:
    available = _module_tools(module)
    entries = doc.data.get("tools")
    if entries is None:
        return list(available.values())
    if not isinstance(entries, list):
        raise doc.error(("tools",), "`tools` must be a list of tool names or declarations.")
    tools: list[Tool] = []
    for index, entry in enumerate(entries):
        at = ("tools", index)
        if isinstance(entry, str):
            if entry not in available:
                known = ", ".join(sorted(available)) or "none (no environment module or no @tool in it)"
                raise doc.error(at, f"unknown tool {entry!r}.", f"use a tool defined in the module: {known}.")
            tools.append(available[entry])
        elif isinstance(entry, Mapping):
            tools.extend(_declared_tools(doc, at, dict(entry)))
        else:
            raise doc.error(at, "a tool entry must be a name or a mapping with `name:` and `type:`.")
    return tools


def _declared_tools(doc: YamlDocument, at: tuple[Any, ...], declaration: dict[str, Any]) -> list[Tool]:
    from corral_core.tools.factory import ToolDeclarationError, build_tools  # pulls in the builtin tools

    try:
        return build_tools(declaration, base_dir=doc.path.parent,
                           allow_private=bool(doc.data.get("allow_private_urls")))
    except ToolDeclarationError as exc:
        problem = f"tool {declaration.get('name', '?')!r}: {exc.problem}"
        raise doc.error((*at, exc.key) if exc.key else at, problem, exc.fix) from None
    except Exception as exc:
        raise doc.error(at, f"tool {declaration.get('name', '?')!r} failed to build: {exc}") from None


def _load_tasks(doc: YamlDocument, module: ModuleType | None, default_scoring: dict[str, Any],
                source_hashes: list[tuple[str, str]], tool_names: Sequence[str]) -> list[TaskSpec]:
    """The suite's tasks; a task source's fingerprint is added to `source_hashes`; `tool_names`: the
    suite's tools, which a task's `tools` and `correct_tools` may name."""
    entries = doc.data.get("tasks")

    def resolve_python(name: str) -> Any:
        if module is None or not hasattr(module, name):
            raise ValueError(f"scoring function {name!r} not found in the environment module")
        return getattr(module, name)

    if isinstance(entries, (str, Mapping)):  # a file or dataset reference (see task_source)
        source = parse_source(doc, entries)
        name, rows, fingerprint = load_rows(doc, source)
        source_hashes.append((name, fingerprint))
        tasks: list[TaskSpec] = []
        seen: dict[str, str] = {}
        for number, row in enumerate(rows, 1):
            site = RowSite(name, row, source.fields)
            task = _load_task(site, (), row_entry(row, source, site, number), default_scoring, resolve_python,
                              tool_names)
            if task.id in seen:
                raise site.error(("id",), f"task id {task.id!r} is already used ({seen[task.id]}).",
                                 "give every row its own id.")
            seen[task.id] = row.where
            tasks.append(task)
        return tasks
    if not isinstance(entries, list) or not entries:
        raise doc.error(("tasks",), "missing or empty `tasks` list.", "add `tasks:` with at least one `- id: ...`, "
                        "or name a file or dataset: `tasks: tasks.jsonl` (see docs/bring-your-own.md).")
    return [_load_task(doc, ("tasks", index), entry, default_scoring, resolve_python, tool_names)
            for index, entry in enumerate(entries)]


class ErrorSite(Protocol):
    """Where a task entry stands, for its error messages: a suite file's key, or a source's row."""

    def error(self, key_path: KeyPath, problem: str, fix: str | None = None) -> UserError: ...


def _load_task(doc: ErrorSite, at: tuple[Any, ...], entry: Any, default_scoring: dict[str, Any],
               resolve_python: Any, tool_names: Sequence[str] = ()) -> TaskSpec:
    if not isinstance(entry, Mapping):
        raise doc.error(at, "each task must be a mapping with `id:` and `prompt:`.")
    _check_keys(doc, at, entry, TASK_KEYS)
    for key in ("id", "prompt"):
        if entry.get(key) in (None, ""):
            raise doc.error(at, f"task is missing required field `{key}`.", f"add `{key}:` to this task.")
    if not isinstance(entry["id"], (str, int)) or isinstance(entry["id"], bool):
        raise doc.error((*at, "id"), "a task `id` must be a short text such as `add`.")
    prompt = _prompt(doc, (*at, "prompt"), entry["prompt"])
    solvable = entry.get("solvable", True)
    if not isinstance(solvable, bool):
        raise doc.error((*at, "solvable"), "`solvable` must be true or false.")
    if not solvable and "scoring" not in entry and entry.get("answer") is None:
        entry = {**entry, "scoring": {"type": "unsolvable"}}
    scoring = entry.get("scoring", default_scoring)
    if not isinstance(scoring, Mapping):
        raise doc.error((*at, "scoring"), "`scoring` must be a mapping such as {type: numeric}.")
    try:
        scorer = build_scorer(scoring, entry.get("answer"), resolve_python)
    except (ValueError, TypeError, re.error) as exc:
        raise doc.error((*at, "scoring"), f"{exc}.") from None
    depends = _names(doc, (*at, "depends_on"), entry.get("depends_on", []), "depends_on")
    task_tools = entry.get("tools")
    if task_tools is not None:
        task_tools = _names(doc, (*at, "tools"), task_tools, "tools")
    correct = _correct_tools(doc, at, entry, task_tools if task_tools is not None else tool_names)
    if scoring.get("type") == "tool_choice" and correct is None:
        raise doc.error((*at, "scoring"), "`tool_choice` scoring needs the task's `correct_tools`.",
                        "add `correct_tools: [the_right_tool]` to the task, or choose another scoring type.")
    metadata = entry.get("metadata") or {}
    if not isinstance(metadata, Mapping):
        raise doc.error((*at, "metadata"), "`metadata` must be a mapping of key: value pairs.")
    return TaskSpec(id=str(entry["id"]), prompt=prompt, answer=entry.get("answer"), scoring=dict(scoring),
                    depends_on=depends, solvable=solvable, tools=task_tools, metadata=dict(metadata),
                    description=str(entry.get("description", "")), scorer=scorer, correct_tools=correct)


def _correct_tools(doc: ErrorSite, at: tuple[Any, ...], entry: Mapping[str, Any], offered: Sequence[str]
                   ) -> list[str] | None:
    """A task's `correct_tools`: one or more of the tools it offers (its `tools`, else the suite's)."""
    if entry.get("correct_tools") is None:
        return None
    where = (*at, "correct_tools")
    names = _names(doc, where, entry["correct_tools"], "correct_tools")
    if not names:
        raise doc.error(where, "`correct_tools` is empty.",
                        "name the tools that count as a correct choice, e.g. `correct_tools: [search_a]`, "
                        "or remove the key.")
    for name in names:
        if name not in offered:
            near = closest(name, offered)
            hint = f"did you mean {near!r}? " if near else ""
            raise doc.error(where, f"`correct_tools` names {name!r}, which this task does not offer.",
                            f"{hint}name one of its tools: {', '.join(sorted(offered)) or '(none)'}.")
    return list(dict.fromkeys(names))


def _prompt(doc: ErrorSite, at: tuple[Any, ...], prompt: Any) -> str | list[dict[str, Any]]:
    """A task prompt: text, a list of content parts ({type: text, text: ...}), or a chat message list
    ([{role: user, content: ...}], as BFCL rows hold it), whose user messages' texts become the prompt."""
    if isinstance(prompt, list) and prompt and all(isinstance(p, Mapping) and "role" in p for p in prompt):
        roles = sorted({str(p["role"]) for p in prompt} - {"user"})
        if roles or not all(isinstance(p.get("content"), str) for p in prompt):
            raise doc.error(at, f"a prompt given as a message list may hold user messages with text content only "
                            f"(found role(s) {roles})." if roles else "a prompt message's `content` must be text.",
                            "give the system prompt through the agent's options, or map `prompt` to the user's text "
                            "(e.g. `question[0][0].content`).")
        return "\n\n".join(str(p["content"]) for p in prompt)
    if isinstance(prompt, str) or (isinstance(prompt, list) and all(isinstance(p, Mapping) for p in prompt)):
        return prompt
    kind = {bool: "true/false", int: "a number", float: "a number", dict: "a mapping",
            list: "a list of non-mappings"}.get(type(prompt), type(prompt).__name__)
    fix = ("quote it, so YAML reads it as text." if isinstance(prompt, (bool, int, float)) else
           "write the prompt as text, or as a message list [{role: user, content: ...}]; from a task source, map "
           "`prompt` to the text itself (a path such as `question[0][0].content` reaches into nested values).")
    raise doc.error(at, f"`prompt` must be text, a list of content parts or a message list, not {kind}.", fix)


def _names(doc: ErrorSite, at: tuple[Any, ...], value: Any, key: str) -> list[str]:
    """A list of task or tool names (a single name is accepted as a list of one)."""
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise doc.error(at, f"`{key}` must be a list of names, such as [add, multiply].")
    return list(value)


def _environment_class(doc: YamlDocument, module: ModuleType | None) -> type[SuiteEnvironment]:
    name = doc.data.get("environment_class")
    if name is None:
        return SuiteEnvironment
    cls = getattr(module, str(name), None) if module is not None else None
    if not (isinstance(cls, type) and issubclass(cls, SuiteEnvironment)):
        raise doc.error(("environment_class",), f"{name!r} is not a SuiteEnvironment subclass in the module.",
                        "subclass corral_core.env.SuiteEnvironment, or remove `environment_class`.")
    return cls
