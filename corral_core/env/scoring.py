"""Ready-made scorers, following the seed's scoring principles.

A scorer is `scorer(answer, context) -> float | (float, explanation)`. Scorers are deterministic,
robust to format variation where that is the point ("The answer is 42.0" scores as 42), and never
raise for a badly formatted answer (that scores 0 with an explanation).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from corral_core.env.records import ToolCall
from corral_core.registry import Registry

_MINUS_SIGNS = str.maketrans({"\u2212": "-", "\u2013": "-", "\u2012": "-", "\ufe63": "-", "\uff0d": "-"})
_NUMBER = re.compile(r"[-+]?(?:\d[\d,]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


@dataclass
class ScoringContext:
    """What a scorer may look at besides the answer."""

    task_id: str
    expected: Any = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    inputs: dict[str, Any] = field(default_factory=dict)  # upstream outputs in a chain
    metadata: dict[str, Any] = field(default_factory=dict)
    workspace: str | None = None  # the trial's working directory, for scorers that inspect files
    # calls a tool of the trial after the agent finished (Environment.grader_call): final-state scoring
    call_tool: Callable[[str, dict[str, Any]], ToolCall] | None = None
    correct_tools: tuple[str, ...] = ()  # the task's `correct_tools` (a selection study), for scorers of the calls


Scorer = Callable[[str | None, ScoringContext], float | tuple[float, str]]


def extract_number(text: str | None) -> float | None:
    """The last number in `text` ("The answer is 42.0" -> 42.0), or None."""
    if text is None:
        return None
    # A typographic minus (U+2212) or dash is still a minus: "−1024" must not score as 1024.
    matches = _NUMBER.findall(str(text).translate(_MINUS_SIGNS))
    for raw in reversed(matches):
        try:
            return float(raw.replace(",", ""))
        except ValueError:
            continue
    return None


def exact_match(expected: Any, *, case_sensitive: bool = True, strip: bool = True) -> Scorer:
    """1.0 when the answer equals `expected` as text (optionally ignoring case), else 0.0."""

    def score(answer: str | None, context: ScoringContext) -> tuple[float, str]:
        got, want = "" if answer is None else str(answer), str(expected)
        if strip:
            got, want = got.strip(), want.strip()
        if not case_sensitive:
            got, want = got.casefold(), want.casefold()
        return (1.0, "exact match") if got == want else (0.0, f"expected {want!r}, got {got!r}")

    return score


def numeric(expected: float, *, tolerance: float = 1e-6, relative: bool = False) -> Scorer:
    """1.0 when the number in the answer is within `tolerance` of `expected` (absolute or relative)."""
    want = float(expected)

    def score(answer: str | None, context: ScoringContext) -> tuple[float, str]:
        got = extract_number(answer)
        if got is None:
            return 0.0, f"no number found in the answer {answer!r}"
        limit = tolerance * abs(want) if relative else tolerance
        if math.isclose(got, want, rel_tol=0.0, abs_tol=limit):
            return 1.0, f"{got:g} is within {limit:g} of {want:g}"
        return 0.0, f"expected {want:g}, got {got:g}"

    return score


def regex(pattern: str, *, ignore_case: bool = False) -> Scorer:
    """1.0 when `pattern` matches somewhere in the answer."""
    compiled = re.compile(pattern, re.IGNORECASE if ignore_case else 0)

    def score(answer: str | None, context: ScoringContext) -> tuple[float, str]:
        if answer is not None and compiled.search(str(answer)):
            return 1.0, f"matches /{pattern}/"
        return 0.0, f"does not match /{pattern}/"

    return score


def choice(expected: str, choices: list[str] | None = None) -> Scorer:
    """Case-insensitive choice ("Yes" == "yes" == "YES"); with `choices`, the answer must name one."""
    want = str(expected).strip().casefold()
    options = [str(c).strip().casefold() for c in choices or []]

    def score(answer: str | None, context: ScoringContext) -> tuple[float, str]:
        got = "" if answer is None else str(answer).strip().casefold().rstrip(".!")
        if options and got not in options:
            named = [o for o in options if re.search(rf"\b{re.escape(o)}\b", got)]
            if len(named) != 1:
                return 0.0, f"the answer does not name exactly one of {options}"
            got = named[0]
        return (1.0, "right choice") if got == want else (0.0, f"expected {want!r}, got {got!r}")

    return score


def process_credit(tool_weights: Mapping[str, float], answer_scorer: Scorer | None = None,
                   answer_weight: float = 0.0) -> Scorer:
    """Partial credit for the process: each listed tool used successfully adds its weight.

    With `answer_scorer`, its score times `answer_weight` is added too. The total is capped at 1.
    """

    def score(answer: str | None, context: ScoringContext) -> tuple[float, str]:
        used = {c.tool_name for c in context.tool_calls if c.success}
        total, notes = 0.0, []
        for name, weight in tool_weights.items():
            if name in used:
                total += weight
                notes.append(f"used {name} (+{weight:g})")
        if answer_scorer is not None and answer_weight:
            value, why = split_score(answer_scorer(answer, context))
            total += value * answer_weight
            notes.append(f"answer {value:g} x {answer_weight:g}" + (f" ({why})" if why else ""))
        return min(total, 1.0), "; ".join(notes) or "no credited tools used"

    return score


def unsolvable(answer: str | None, context: ScoringContext) -> tuple[float, str]:
    """The scorer of a task marked `solvable: false`: no answer is right; surrendering is."""
    return 0.0, "this task cannot be solved with the tools given; the right move is to surrender"


def split_score(value: float | tuple[float, str]) -> tuple[float, str | None]:
    if isinstance(value, tuple):
        return float(value[0]), value[1]
    return float(value), None


ResolvePython = Callable[[str], Any]  # a name in the suite's environment module -> the object
ScorerFactory = Callable[[Mapping[str, Any], Any, ResolvePython], Scorer]  # (scoring:, answer, resolve) -> Scorer
SCORERS: Registry[ScorerFactory] = Registry("scorers", "scoring type",
                                            title="Scorers",
                                            where="a suite's or a task's `scoring: {type: ...}`")


def build_scorer(spec: Mapping[str, Any], expected: Any, resolve_python: ResolvePython) -> Scorer:
    """Build a scorer from a suite's `scoring:` mapping. Raises ValueError (a KindError for an unknown
    type or key, naming the closest) with a readable message."""
    kind = str(spec.get("type", "exact"))
    return SCORERS.check_options(kind, spec).factory(spec, expected, resolve_python)


@SCORERS.kind("exact", doc="1.0 when the answer equals the task's `answer` as text (the default type).",
              options={"case_sensitive": "compare case too (default false)"})
def _exact(spec: Mapping[str, Any], expected: Any, resolve_python: ResolvePython) -> Scorer:
    return exact_match(expected, case_sensitive=bool(spec.get("case_sensitive", False)))


@SCORERS.kind("numeric", doc="1.0 when the last number in the answer is within `tolerance` of `answer`.",
              options={"tolerance": "the largest difference that scores 1 (default 1e-6)",
                       "relative": "the tolerance is a fraction of the answer (default false)"})
def _numeric(spec: Mapping[str, Any], expected: Any, resolve_python: ResolvePython) -> Scorer:
    if expected is None:
        raise ValueError("numeric scoring needs an `answer`")
    return numeric(float(expected), tolerance=float(spec.get("tolerance", 1e-6)),
                   relative=bool(spec.get("relative", False)))


@SCORERS.kind("regex", doc="1.0 when `pattern` (or the task's `answer`) matches somewhere in the answer.",
              options={"pattern": "a Python regular expression (default: the task's answer)",
                       "ignore_case": "match regardless of case (default false)"})
def _regex(spec: Mapping[str, Any], expected: Any, resolve_python: ResolvePython) -> Scorer:
    pattern = spec.get("pattern", expected)
    if pattern is None:
        raise ValueError("regex scoring needs a `pattern` (or an `answer` used as the pattern)")
    return regex(str(pattern), ignore_case=bool(spec.get("ignore_case", False)))


@SCORERS.kind("choice", doc="1.0 when the answer names the task's `answer`, ignoring case.",
              options={"choices": "the options; the answer must name exactly one of them"})
def _choice(spec: Mapping[str, Any], expected: Any, resolve_python: ResolvePython) -> Scorer:
    return choice(str(expected), spec.get("choices"))


@SCORERS.kind("process", doc="partial credit for the tools used successfully, plus a share of an answer score.",
              options={"tools": "{tool_name: weight, ...}: each tool used successfully adds its weight",
                       "answer": "a scoring mapping for the answer itself, such as {type: numeric}",
                       "answer_weight": "what the answer's score is multiplied by (default 0)"})
def _process(spec: Mapping[str, Any], expected: Any, resolve_python: ResolvePython) -> Scorer:
    weights = spec.get("tools")
    if not isinstance(weights, Mapping) or not weights:
        raise ValueError("process scoring needs `tools: {tool_name: weight, ...}`")
    inner = spec.get("answer")
    answer_scorer = build_scorer(inner, expected, resolve_python) if isinstance(inner, Mapping) else None
    return process_credit({str(k): float(v) for k, v in weights.items()}, answer_scorer,
                          float(spec.get("answer_weight", 0.0)))


@SCORERS.kind("python", doc="a function of the suite's environment module scores the answer.",
              options={"function": "its name in the environment module: f(answer, context) -> score"})
def _python(spec: Mapping[str, Any], expected: Any, resolve_python: ResolvePython) -> Scorer:
    name = spec.get("function")
    if not name:
        raise ValueError("python scoring needs `function: name_in_the_environment_module`")
    function = resolve_python(str(name))
    if not callable(function):
        raise ValueError(f"scoring function {name!r} is not callable")
    scorer: Scorer = function
    return scorer


def tool_choice(first_only: bool = True) -> Scorer:
    """1.0 when the agent's first tool call (with `first_only` false: any call) named one of the task's
    `correct_tools`: a tool-selection study scored by the calls, whatever the answer."""

    def score(answer: str | None, context: ScoringContext) -> tuple[float, str]:
        if not context.correct_tools:
            return 0.0, "the task declares no `correct_tools`"
        names = [c.tool_name for c in context.tool_calls]
        if not names:
            return 0.0, "no tool was called"
        chosen = names[:1] if first_only else names
        hit = next((name for name in chosen if name in context.correct_tools), None)
        if hit is not None:
            return 1.0, f"called {hit}" + (" first" if first_only else "")
        seen = f"first called {names[0]}" if first_only else "called only " + ", ".join(dict.fromkeys(names))
        return 0.0, f"{seen}, not one of {list(context.correct_tools)}"

    return score


@SCORERS.kind("tool_choice", doc="1.0 when the first tool call named one of the task's `correct_tools`.",
              options={"any_call": "count any call, not only the first (default false)"})
def _tool_choice(spec: Mapping[str, Any], expected: Any, resolve_python: ResolvePython) -> Scorer:
    return tool_choice(first_only=not bool(spec.get("any_call", False)))


@SCORERS.kind("unsolvable", doc="no answer is right; surrendering is (tasks marked `solvable: false`).")
def _unsolvable(spec: Mapping[str, Any], expected: Any, resolve_python: ResolvePython) -> Scorer:
    return unsolvable
