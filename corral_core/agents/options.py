"""Checks for agent constructor options: a wrong value fails at construction, in words.

Spec files pass agent options straight to the constructors, so a typo such as
`max_iterations: 0` or `extract_answer: "maybe"` must be refused there, not silently bent into
something else.
"""

from __future__ import annotations

from typing import Any, cast


def positive_int(name: str, value: Any) -> int:
    """`value` as an int of at least 1; ValueError naming the option otherwise (bools and 2.5 too)."""
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise ValueError(f"{name} must be a whole number of at least 1, got {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be at least 1, got {value!r}")
    return cast("int", value)


def flag(name: str, value: Any) -> bool:
    """`value` as a bool; ValueError naming the option for anything else ("maybe", "yes", 1)."""
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be true or false, got {value!r}")
    return value
