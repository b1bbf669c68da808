"""Typed reads from a spec mapping: each failure is a UserError naming the file, line, key and fix.

The checker keeps going after a mistake (`collect` notes it and goes on with a fallback), so a bad spec
is answered with every mistake it can find at once (`raise_errors`), not one per attempt."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, Literal, TypeVar, overload

from corral_core.errors import UserError
from corral_core.registry import closest
from corral_core.yamlfile import KeyPath, YamlDocument

T = TypeVar("T")
F = TypeVar("F")


def did_you_mean(word: str, choices: Any) -> str:
    """' Did you mean `x`?' when `word` is close to one of `choices`, else ''."""
    near = closest(word, choices)
    return f" Did you mean `{near}`?" if near else ""


class _Checker:
    """Typed reads from the spec mapping; every failure names the key path. Mistakes noted by
    `collect` (and unknown keys) wait in `errors` until `raise_errors`."""

    def __init__(self, doc: YamlDocument) -> None:
        self.doc = doc
        self.errors: list[UserError] = []

    def fail(self, at: KeyPath, problem: str, fix: str | None = None) -> UserError:
        return self.doc.error(at, problem, fix)

    def collect(self, fallback: F, read: Callable[..., T], *args: Any, **kwargs: Any) -> T | F:
        """`read(*args, **kwargs)`; when it finds a mistake, note it and go on with `fallback`."""
        try:
            return read(*args, **kwargs)
        except UserError as exc:
            self.errors.append(exc)
            return fallback

    def clean_since(self, count: int) -> bool:
        """No mistake noted since `len(self.errors)` was `count` (checks that build on a part ask this)."""
        return len(self.errors) == count

    def raise_errors(self) -> None:
        """Raise every mistake noted so far in one UserError (exit code 2), if there is any."""
        if self.errors:
            raise UserError.combine(self.errors, file=self.doc.path)

    def keys(self, at: KeyPath, mapping: Mapping[str, Any], allowed: tuple[str, ...]) -> None:
        """Note every unknown key (their values are never read, so the checks go on)."""
        for key in mapping:
            if key not in allowed:
                self.errors.append(self.fail((*at, key), f"unknown key `{key}`.{did_you_mean(key, allowed)}",
                                             f"use one of: {', '.join(allowed)}."))

    def mapping(self, at: KeyPath, value: Any, example: str) -> dict[str, Any]:
        if not isinstance(value, Mapping):
            raise self.fail(at, f"`{_name(at)}` must be a mapping, not {_kind(value)}.", f"write it as {example}.")
        return dict(value)

    def integer(self, at: KeyPath, value: Any, minimum: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(at, f"`{_name(at)}` must be a whole number, not {_kind(value)}.",
                            f"write a number such as `{_name(at)}: {max(minimum, 3)}`.")
        if value < minimum:
            raise self.fail(at, f"`{_name(at)}` must be at least {minimum}, not {value}.")
        return value

    @overload
    def number(self, at: KeyPath, value: Any, *, positive: bool = ..., optional: Literal[False] = ...) -> float: ...
    @overload
    def number(self, at: KeyPath, value: Any, *, positive: bool = ..., optional: bool) -> float | None: ...

    def number(self, at: KeyPath, value: Any, *, positive: bool = False, optional: bool = False) -> float | None:
        if value is None and optional:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(at, f"`{_name(at)}` must be a number, not {_kind(value)}.",
                            f"write a number such as `{_name(at)}: 30`" + (" or `null` for no limit." if optional
                                                                          else "."))
        if not math.isfinite(value):
            raise self.fail(at, f"`{_name(at)}` must be a finite number, not {value}.",
                            f"write a number such as `{_name(at)}: 30`" + (" or `null` for no limit." if optional
                                                                          else "."))
        if positive and value <= 0:
            raise self.fail(at, f"`{_name(at)}` must be greater than 0, not {value}.")
        return float(value)

    @overload
    def text(self, at: KeyPath, value: Any, *, optional: Literal[False] = ...) -> str: ...
    @overload
    def text(self, at: KeyPath, value: Any, *, optional: bool) -> str | None: ...

    def text(self, at: KeyPath, value: Any, *, optional: bool = False) -> str | None:
        if value is None and optional:
            return None
        if not isinstance(value, str) or not value.strip():
            raise self.fail(at, f"`{_name(at)}` must be a non-empty text, not {_kind(value)}.")
        return value

    def boolean(self, at: KeyPath, value: Any) -> bool:
        if not isinstance(value, bool):
            raise self.fail(at, f"`{_name(at)}` must be true or false, not {_kind(value)}.")
        return value

    def choice(self, at: KeyPath, value: Any, choices: tuple[str, ...], what: str) -> str:
        text = str(value).strip().lower() if isinstance(value, str) else None
        if text not in choices:
            raise self.fail(at, f"unknown {what} {value!r}.{did_you_mean(str(value), choices)}",
                            f"use one of: {', '.join(choices)}.")
        return text


def _name(at: KeyPath) -> str:
    named = [p for p in at if isinstance(p, str)]
    return named[-1] if named else "value"


def _kind(value: Any) -> str:
    if value is None:
        return "empty"
    kinds = {bool: "true/false", int: "a number", float: "a number", str: "text", list: "a list", dict: "a mapping"}
    shown = repr(value) if isinstance(value, (str, int, float)) and not isinstance(value, bool) else None
    kind = kinds.get(type(value), type(value).__name__)
    return f"{kind} {shown}" if shown and len(shown) < 40 else kind
