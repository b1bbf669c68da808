"""Registries of the kinds a user names in YAML or on the command line: one class, one per family.

A kind is registered once, with a decorator, together with the keys its configuration may carry
and a one-line description:

    from corral_core.env.scoring import SCORERS

    @SCORERS.kind("length", doc="1.0 when the answer is at most `max_chars` long.",
                  options={"max_chars": "the longest answer that scores 1"})
    def length(options, expected, resolve_python): ...

That one registration is what validation (an unknown kind or key is refused with a did-you-mean),
error messages and `--help` texts, shell and workbench completion, and docs/kinds.md read.

Another package adds kinds without a fork through entry points, one group per family
(`corral_tui.scorers`, `corral_tui.breakpoints`, `corral_tui.tool_sources`, `corral_tui.agents`,
`corral_tui.exporters`): an entry point named like the kind points at the registered object, whose
module registers it on import. They are looked up once, on the first question a registry is asked;
a plugin that fails to import, or does not register the kind it names, is a `PluginError` naming
its package.
"""

from __future__ import annotations

import dataclasses
import difflib
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Generic, TypeVar

from corral_core.errors import UserError

T = TypeVar("T")
ENTRY_POINT_PREFIX = "corral_tui."


class KindError(ValueError):
    """An unknown kind or an unknown key of one: `key` names the key when one is at fault."""

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


class PluginError(UserError):
    """An installed plugin package that could not give its kinds (exit code 2, naming the package)."""


@dataclass(frozen=True)
class Kind(Generic[T]):
    """One registered kind: its name, what builds it, the keys of its configuration, its docs."""

    name: str
    factory: T
    doc: str
    options: Mapping[str, str] = field(default_factory=dict)  # key -> one line on what it does
    syntax: str = ""  # how it is written where it is not a mapping (a breakpoint: "tool:NAME")
    package: str | None = None  # the distribution that registered it; None: corral-tui itself
    open_keys: bool = False  # the kind checks its own keys (`options` only document them)

    @property
    def written(self) -> str:
        return self.syntax or self.name


def closest(word: str, choices: Iterable[object]) -> str | None:
    """The one of `choices` closest to `word` (difflib), or None when none is close: every did-you-mean."""
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=0.6)
    return close[0] if close else None


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """' (did you mean X?)' for the closest of `choices`, or '' when none is close."""
    near = closest(word, choices)
    return f" (did you mean {near!r}?)" if near else ""


REGISTRIES: dict[str, Registry[Any]] = {}  # family -> its registry, each added when its module is imported


class Registry(Generic[T]):
    """The kinds of one family (scorers, breakpoint kinds, ...), built in and from plugins.

    `family` names the entry point group (`corral_tui.<family>`); `noun` is how messages name one
    kind ("scoring type"); `where` says where a user names one; `common` are keys every kind's
    configuration may carry besides its own.
    """

    def __init__(self, family: str, noun: str, *, title: str, where: str = "",
                 common: Mapping[str, str] | None = None) -> None:
        self.family = family
        self.noun = noun
        self.title = title
        self.where = where  # where a user names one (docs/kinds.md)
        self.common: Mapping[str, str] = dict(common or {})
        self._kinds: dict[str, Kind[T]] = {}
        self._lock = threading.RLock()
        self._plugins_loaded = False
        self._ready = False  # the entry points have been looked up and loaded
        self._plugin_error: PluginError | None = None
        self._loading: str | None = None  # the package whose entry point is being loaded
        REGISTRIES[family] = self

    @property
    def group(self) -> str:
        return ENTRY_POINT_PREFIX + self.family

    def kind(self, name: str, *, doc: str, options: Mapping[str, str] | None = None,
             syntax: str = "", open_keys: bool = False) -> Callable[[T], T]:
        """Decorator: register the decorated object as kind `name` (see the module docstring)."""

        def register(factory: T) -> T:
            self.add(name, factory, doc=doc, options=options, syntax=syntax, open_keys=open_keys)
            return factory

        return register

    def add(self, name: str, factory: T, *, doc: str, options: Mapping[str, str] | None = None,
            syntax: str = "", open_keys: bool = False, replace: bool = False,
            package: str | None = None) -> Kind[T]:
        """Register `factory` as kind `name`; a name already taken is refused (unless `replace`, for a
        kind from outside corral-tui). `package` says where it comes from when its module cannot."""
        if not name or not isinstance(name, str):
            raise ValueError(f"a {self.noun} needs a name.")
        if not doc or "\n" in doc.strip():
            raise ValueError(f"{self.noun} {name!r} needs a one-line doc.")
        package = self._loading or package or _package_of(factory)
        made = Kind(name, factory, doc.strip(), dict(options or {}), syntax, package, open_keys)
        with self._lock:
            taken = self._kinds.get(name)
            if taken is not None and not (replace and taken.package is not None):
                owner = f"package {taken.package}" if taken.package else "corral-tui"
                raise ValueError(f"{self.noun} {name!r} is already registered by {owner} and cannot be replaced.")
            self._kinds[name] = made
        return made

    def get(self, name: str) -> Kind[T]:
        """The kind called `name`; KindError names the known ones and the closest."""
        self._load_plugins()
        found = self._kinds.get(name)
        if found is None:
            raise KindError(f"unknown {self.noun} {name!r}{did_you_mean(name, self._kinds)}; "
                            f"use one of: {', '.join(self._kinds)}")
        return found

    def __contains__(self, name: object) -> bool:
        self._load_plugins()
        return name in self._kinds

    def names(self) -> tuple[str, ...]:
        self._load_plugins()
        return tuple(self._kinds)

    def kinds(self) -> tuple[Kind[T], ...]:
        self._load_plugins()
        return tuple(self._kinds.values())

    def check_options(self, name: str, config: Mapping[str, Any], *, skip: Iterable[str] = ("type",)) -> Kind[T]:
        """Kind `name` after checking that `config` carries only its keys (and `common` and `skip`)."""
        found = self.get(name)
        if found.open_keys:
            return found
        allowed = [*skip, *self.common, *found.options]
        for key in config:
            if key not in allowed:
                own = ", ".join(found.options) or "none"
                raise KindError(f"unknown key {key!r} for {self.noun} {name!r}{did_you_mean(str(key), allowed)}; "
                                f"its keys: {own}", key=str(key))
        return found

    def markdown(self, *, builtin_only: bool = False) -> str:
        """This family's section of docs/kinds.md: each kind, its keys and where it comes from."""
        named = f"Named in {self.where}. " if self.where else ""
        lines = [f"## {self.title}", "", f"{named}Entry point group: `{self.group}`.", ""]
        for item in self.kinds():
            if builtin_only and item.package is not None:
                continue
            source = f" (from {item.package})" if item.package else ""
            lines.append(f"- `{item.written}`{source}: {item.doc}")
            lines.extend(f"  - `{key}`: {text}" for key, text in item.options.items())
        if self.common:
            lines += ["", "Every " + self.noun + " also takes: "
                      + "; ".join(f"`{key}` ({text})" for key, text in self.common.items()) + "."]
        return "\n".join(lines) + "\n"

    def reload_plugins(self) -> None:
        """Forget the plugins' kinds; the next question looks the entry points up again."""
        with self._lock:
            self._kinds = {name: k for name, k in self._kinds.items() if k.package is None}
            self._plugins_loaded, self._ready, self._plugin_error = False, False, None

    def _load_plugins(self) -> None:
        """Look the entry points up once; other threads wait for it, a plugin asking meanwhile does not."""
        if not self._ready:
            with self._lock:
                if not self._plugins_loaded:
                    self._plugins_loaded = True  # set first: a plugin that asks while it loads sees what is there
                    try:
                        for point in entry_points(group=self.group):
                            self._load_one(point)
                    except PluginError as exc:
                        self._plugin_error = exc
                    self._ready = True
        if self._plugin_error is not None:
            raise self._plugin_error

    def _load_one(self, point: EntryPoint) -> None:
        package = point.dist.name if point.dist is not None else point.value.partition(":")[0]
        where = f"entry point {point.name} = {point.value!r} in group {self.group}"
        self._loading = package
        try:
            loaded = point.load()
        except Exception as exc:
            raise PluginError(f"the plugin package {package} failed to load ({where}): {type(exc).__name__}: {exc}",
                              fix=f"fix or update {package}, or uninstall it (pip uninstall {package}).") from exc
        finally:
            self._loading = None
        registered = self._kinds.get(point.name)
        if registered is not None and registered.package != package and registered.factory is loaded:
            # imported before the lookup (by an environment module, say): it is still the package's kind
            self._kinds[point.name] = dataclasses.replace(registered, package=package)
        elif registered is None or registered.package != package:
            raise PluginError(f"the plugin package {package} names {self.noun} {point.name!r} ({where}) but loading it "
                              f"registered no {self.noun} of that name",
                              fix=f"decorate it with @{self.family.upper()}.kind({point.name!r}, ...), or uninstall "
                                  f"{package}.")


def _package_of(factory: object) -> str | None:
    """None for corral-tui's own kinds; else the distribution (or top-level module) that registers one."""
    top = str(getattr(factory, "__module__", "") or "").partition(".")[0]
    if top in ("corral_core", "corral_tui", ""):
        return None
    from importlib.metadata import packages_distributions

    return (packages_distributions().get(top) or [top])[0]
