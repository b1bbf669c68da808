"""The status guard: a string constant equal to a status value anywhere in corral_core or corral_tui but
corral_core/domain.py (the vocabularies' one home) fails here. By syntax, an AST walk of every module; the rule
and its exceptions are written above `test_no_status_literal_outside_the_domain_module`."""

from __future__ import annotations

import ast
from enum import StrEnum
from pathlib import Path

import pytest

from corral_core import domain

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("corral_core", "corral_tui")
HOME = ROOT / "corral_core" / "domain.py"
STATUS_ENUMS = [value for value in vars(domain).values()
                if isinstance(value, type) and issubclass(value, StrEnum) and value is not StrEnum]
STATUS_VALUES = frozenset(member.value for enum in STATUS_ENUMS for member in enum)
# Statuses that are not ours: Dask's `client.status` / `future.status`, and Inspect's EvalLog(status=...).
FOREIGN_OWNERS = frozenset({"client", "future"})
FOREIGN_CALLS = frozenset({"EvalLog"})


def _name(node: ast.AST) -> str | None:
    """The name a status would be read from: `status`, `x.run_state`, `row["status"]`, `d.get("status")`."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        owner = node.value
        if (owner.id if isinstance(owner, ast.Name) else getattr(owner, "attr", None)) in FOREIGN_OWNERS:
            return None
        return node.attr
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
        return node.slice.value
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" and node.args
            and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
        return node.args[0].value
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
            and len(node.args) > 1 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)):
        return node.args[1].value  # getattr(response, "fault", None)
    return None


def _is_status_name(name: str | None) -> bool:
    name = (name or "").lower()
    words = name.split("_")
    return "status" in name or "fault" in words or "faults" in words or name.endswith(("state", "states", "decided_by"))


def _parameters(tree: ast.AST) -> dict[str, list[str]]:
    """Each function's and class's positional parameters by name (a dataclass: its fields), to read a status
    passed by position: `Attempt("errored")`, `ApprovalDecision(False, "policy")`."""
    found: dict[str, list[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names = [a.arg for a in [*node.args.posonlyargs, *node.args.args]]
            found[node.name] = names[1:] if names[:1] in (["self"], ["cls"]) else names
        elif isinstance(node, ast.ClassDef):
            init = next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
            if init is not None:
                found[node.name] = [a.arg for a in init.args.args[1:]]
            elif any("dataclass" in ast.unparse(d) for d in node.decorator_list):
                found[node.name] = [n.target.id for n in node.body
                                    if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)]
    return found


_SIGNATURES: dict[str, list[str]] = {}  # every package module's, filled on first use


def _statusy(node: ast.AST) -> bool:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("in_", "not_in"):
        return _statusy(node.func.value)  # SQLAlchemy: t.c.status.in_((...))
    return _is_status_name(_name(node))


def _literals(node: ast.AST) -> list[ast.Constant]:
    return [n for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)
            and n.value in STATUS_VALUES]


def _hits(node: ast.AST) -> list[ast.Constant]:
    """The status literals one node writes in a status context."""
    if isinstance(node, ast.Compare):  # status == "x", x.status in ("a", "b"), "x" != row["status"]
        sides = [node.left, *node.comparators]
        if any(_statusy(side) for side in sides):
            return [hit for side in sides if not _statusy(side) for hit in _literals(side)]
    elif isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in ("in_", "not_in") and _statusy(func.value):
            return [hit for arg in node.args for hit in _literals(arg)]
        foreign = isinstance(func, ast.Name) and func.id in FOREIGN_CALLS
        callee = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        names = _SIGNATURES.get(callee, [])
        by_position = [hit for name, arg in zip(names, node.args, strict=False) if _is_status_name(name)
                       for hit in _literals(arg)]
        return by_position + [hit for kw in node.keywords if not foreign and _is_status_name(kw.arg)
                              for hit in _literals(kw.value)]
    elif isinstance(node, ast.Dict):  # {"status": "running"}
        return [hit for key, value in zip(node.keys, node.values, strict=True)
                if isinstance(key, ast.Constant) and isinstance(key.value, str) and _is_status_name(key.value)
                for hit in _literals(value)]
    elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign) and node.value is not None:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        hits = [hit for target in targets if _statusy(target) for hit in _literals(node.value)]
        for target in targets:  # status, error = "error", message
            if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                hits += [hit for t, v in zip(target.elts, node.value.elts, strict=False) if _statusy(t)
                         for hit in _literals(v)]
        return hits
    elif isinstance(node, ast.BoolOp) and any(_statusy(value) for value in node.values):  # x.fault or "unknown"
        return [hit for value in node.values if not _statusy(value) for hit in _literals(value)]
    elif isinstance(node, ast.Match) and _statusy(node.subject):
        return [hit for case in node.cases for hit in _literals(case.pattern)]
    elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        args = [*node.args.posonlyargs, *node.args.args]  # def f(decided_by: str = "user")
        defaults = [*zip(args[len(args) - len(node.args.defaults):], node.args.defaults, strict=True),
                    *((a, d) for a, d in zip(node.args.kwonlyargs, node.args.kw_defaults, strict=True) if d)]
        hits = [hit for arg, default in defaults if _is_status_name(arg.arg) for hit in _literals(default)]
        if _is_status_name(node.name):
            hits += [hit for ret in ast.walk(node) if isinstance(ret, ast.Return) and ret.value is not None
                     for hit in _literals(ret.value)]
        return hits
    return []


def status_literals(source: str) -> list[tuple[int, str]]:
    """(line, value) of every status string literal written in a status context in `source`."""
    tree = ast.parse(source)
    if not _SIGNATURES:
        for path in _sources():
            _SIGNATURES.update(_parameters(ast.parse(path.read_text(encoding="utf-8"))))
    every = dict(_SIGNATURES)
    _SIGNATURES.update(_parameters(tree))  # the module's own definitions first
    try:
        found = {id(hit): hit for node in ast.walk(tree) for hit in _hits(node)}
    finally:
        _SIGNATURES.clear()
        _SIGNATURES.update(every)
    return sorted((hit.lineno, hit.value) for hit in found.values())


def _sources() -> list[Path]:
    return sorted(path for package in PACKAGES for path in (ROOT / package).rglob("*.py") if path != HOME)


# The guard's rule. A string constant whose value is a status value (a member of any StrEnum in domain.py) is a
# status: outside domain.py it fails, wherever and however it is written, unless its syntax makes it something else:
#   1. text, not a value: a docstring, or the text between an f-string's fields;
#   2. a name, not a value: a dict display's key, a subscript's index, the key argument of get / pop / setdefault /
#      index, the attribute name of getattr / hasattr / setattr, a column's name (Column("error", ...)), the left of
#      `"x" in mapping`, or an element of a tuple / list / set display that also holds strings that are no status
#      (a list of columns, keys or another vocabulary's words: CSV_COLUMNS, ("system", "user"));
#   3. another vocabulary's home or another library's statuses: a member of another Enum (RiskLevel.BLOCKED,
#      EventKind.STORE_FAILED), Dask's (`future.status` / `client.status` compared), Inspect's (EvalLog(...)),
#      JUnit's element names (ET.SubElement(case, "skipped")).
# SHARED_WORDS are status values that are also ordinary words of this code; a lone one fails only among other
# status values (("error", "timeout")). And whatever its word, a constant read or written as a status (compared
# with, assigned to, passed or returned as a status, state, fault or decider: `status_literals`) fails even where
# 1-3 would let it pass (`status in ("error", "other")`). Every other status value fails anywhere.
SHARED_WORDS = {
    "error": "Textual's severity and button variant, a key, a JUnit element",
    "success": "a CSV column, the success rate's label, a button variant, Inspect's status",
    "timeout": "a setting's name (`timeout:`), an LLM error's kind",
    "user": "a chat message's role, Decider.USER's word in messages",
    "agent": "an LLM call's role, the spec's `agent:` key",
    "unknown": "the placeholder of a model or tool with no name",
    "environment": "the suite's `environment:` key",
    "provider": "an LLM error's kind",
    "failed": "a chain link's outcome and a tool's failure count",
    "skipped": "a chain link's outcome, a JUnit element",
    "rejected": "an approval's verdict (a tool call's `approval`)",
    "limit": "a task source's `limit:` key",
}
KEY_ARGUMENT = {"get": 0, "pop": 0, "setdefault": 0, "index": 0, "Column": 0, "getattr": 1, "hasattr": 1,
                "setattr": 1}
FOREIGN_STATUS_CALLS = frozenset({"EvalLog", "SubElement"})


def _callee(node: ast.Call) -> str:
    func = node.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _strings(node: ast.AST) -> list[ast.Constant]:
    return [n for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def _key_strings(node: ast.AST) -> list[ast.Constant]:
    """The strings of a key written as a constant or a tuple of them (a key computed from values is values)."""
    parts = node.elts if isinstance(node, ast.Tuple) else [node]
    return [part for part in parts if isinstance(part, ast.Constant) and isinstance(part.value, str)]


def _foreign_status(node: ast.AST) -> bool:
    """`future.status`, `self.client.status`: Dask's."""
    if not (isinstance(node, ast.Attribute) and node.attr == "status"):
        return False
    owner = node.value
    return (owner.id if isinstance(owner, ast.Name) else getattr(owner, "attr", None)) in FOREIGN_OWNERS


def _not_values(tree: ast.AST) -> set[int]:
    """The ids of the string constants that rules 1-3 make text, names or another vocabulary's words."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                skip.add(id(first.value))
        if isinstance(node, ast.JoinedStr):
            skip.update(id(part) for part in node.values if isinstance(part, ast.Constant))
        elif isinstance(node, ast.Dict):
            skip.update(id(c) for key in node.keys if key is not None for c in _key_strings(key))
        elif isinstance(node, ast.Subscript):
            skip.update(id(c) for c in _key_strings(node.slice))
        elif isinstance(node, ast.Call):
            at = KEY_ARGUMENT.get(_callee(node))
            if at is not None and len(node.args) > at:
                skip.update(id(c) for c in _key_strings(node.args[at]))
            if _callee(node) in FOREIGN_STATUS_CALLS:
                skip.update(id(c) for c in _strings(node))
        elif isinstance(node, ast.Compare):
            if any(_foreign_status(side) for side in [node.left, *node.comparators]):
                skip.update(id(c) for c in _strings(node))
            elif (isinstance(node.left, ast.Constant) and all(isinstance(op, ast.In | ast.NotIn) for op in node.ops)
                  and not isinstance(node.comparators[0], ast.Tuple | ast.List | ast.Set)):
                skip.add(id(node.left))
        elif isinstance(node, ast.Tuple | ast.List | ast.Set):
            elements = [e for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            if any(e.value not in STATUS_VALUES for e in elements):
                skip.update(id(e) for e in elements)
        elif isinstance(node, ast.ClassDef) and any("Enum" in ast.unparse(base) for base in node.bases):
            skip.update(id(c) for item in node.body if isinstance(item, ast.Assign | ast.AnnAssign)
                        and item.value is not None for c in _strings(item.value))
    return skip


def _among_statuses(tree: ast.AST) -> set[int]:
    """The ids of the constants in a tuple / list / set display of two or more strings, each a status value."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            elements = [e for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            if len(elements) > 1 and all(e.value in STATUS_VALUES for e in elements):
                found.update(id(e) for e in elements)
    return found


def status_constants(source: str) -> list[tuple[int, str]]:
    """(line, value) of every string constant in `source` that the guard's rule (above) takes for a status."""
    tree = ast.parse(source)
    skip, among = _not_values(tree), _among_statuses(tree)
    by_syntax = {(node.lineno, node.value) for node in ast.walk(tree)
                 if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in STATUS_VALUES
                 and id(node) not in skip and (node.value not in SHARED_WORDS or id(node) in among)}
    return sorted(by_syntax | set(status_literals(source)))  # read or written as a status: no exception


def test_no_status_literal_outside_the_domain_module() -> None:
    found = [f"{path.relative_to(ROOT)}:{line}: {value!r}"
             for path in _sources() for line, value in status_constants(path.read_text(encoding="utf-8"))]
    assert not found, ("status string literals outside corral_core/domain.py (use its enums; the rule is above "
                       "this test in tests/core/test_status_guard.py):\n" + "\n".join(found))


def test_each_shared_word_is_a_status_value() -> None:
    """An entry of SHARED_WORDS that is no status any more would hide nothing, but says something false."""
    assert set(SHARED_WORDS) <= STATUS_VALUES


@pytest.mark.parametrize(("source", "expected"), [
    ('if trial.status == "finished": pass', [(1, "finished")]),
    ('f(status="error")', [(1, "error")]),
    ('row = {"status": "running"}', [(1, "running")]),
    ('ok = record.status in ("finished", "error")', [(1, "error"), (1, "finished")]),
    ('ok = row["status"] != "timeout"', [(1, "timeout")]),
    ('ok = data.get("status") == "completed"', [(1, "completed")]),
    ('self.run_state = "idle"', [(1, "idle")]),
    ('LIVE_STATES = ("starting", "running")', [(1, "running"), (1, "starting")]),
    ('status, error = "error", message', [(1, "error")]),
    ('q = t.c.status.not_in(("running", "retried"))', [(1, "retried"), (1, "running")]),
    ('match status:\n    case "paused": pass', [(2, "paused")]),
    ('def _status(): return "error"', [(1, "error")]),
    ('def decide(self, approved, decided_by="user"): pass', [(1, "user")]),
    ('def f(*, state="paused"): pass', [(1, "paused")]),
    ('ok = data.get("decided_by") == "cancelled"', [(1, "cancelled")]),
    ('f(fault="environment")', [(1, "environment")]),
    ('if trial.fault in ("grader", "timeout"): pass', [(1, "grader"), (1, "timeout")]),
    ('def g(ok, decided_by): pass\ng(False, "policy")', [(2, "policy")]),
    ('@dataclass\nclass A:\n    status: str\nA("errored")', [(4, "errored")]),
    ('if summary.attempt_status == "errored": pass', [(1, "errored")]),
    ('if call["status"] != "success": pass', [(1, "success")]),
    # by syntax: a value that is only a status, wherever it is written
    ('print("finished")', [(1, "finished")]),
    ('UNFINISHED_BENCHMARK = ("running", "interrupted", "store_failed")',
     [(1, "interrupted"), (1, "running"), (1, "store_failed")]),
    ('NOT_MEASURED = frozenset({"skipped", "cancelled", "running"})',
     [(1, "cancelled"), (1, "running"), (1, "skipped")]),
    ('trial.control, trial.held_by = "paused", reason', [(1, "paused")]),
    ('trial.last_action = "answered" if answered else ""', [(1, "answered")]),
    ('def lost(): return "lost_ownership"', [(1, "lost_ownership")]),
    ('x = f"{\'rejected\' if a else \'stopped\'}"', [(1, "stopped")]),
    # a shared word among other statuses, or where a status is read
    ('ERRORED = frozenset({"error", "timeout"})', [(1, "error"), (1, "timeout")]),
    ('faults[r.fault or "unknown"] += 1', [(1, "unknown")]),
    ('ok = getattr(response, "fault", None) == "environment"', [(1, "environment")]),
    ('ok = trial.status in ("error", "pending")', [(1, "error")]),  # a mixed list, but compared with a status
])
def test_the_guard_catches_each_way_of_writing_a_status(source: str, expected: list[tuple[int, str]]) -> None:
    assert status_constants(source) == expected


@pytest.mark.parametrize("source", [
    'log.error("running %s", name)',  # an ordinary word, not a status
    'label = "timeout" if late else "unknown"',  # shared words, not read as a status
    'counts = {"timeout": 1}',
    'if future.status == "finished": pass',  # Dask's status
    'if self.client.status != "running": pass',
    'log = EvalLog(status="cancelled")',  # Inspect's status
    'if trial.status == TrialStatus.ERROR: pass',
    'def f():\n    """Paused."""\n    return 1',
    '"""cancelled"""',  # a docstring
    'text = f"paused {name}"',  # an f-string's text
    'value = row["surrendered"] or data.get("cancelled") or getattr(x, "paused", None)',  # keys and attributes
    'ok = "stopped" in data',
    'd = {"running": 1}',
    'COLUMNS = ("status", "score", "surrendered", "error")',  # a list of names
    'ROLES = ("system", "user")',  # another vocabulary sharing a word
    'sa.Column("surrendered", sa.Boolean())',
    'class RiskLevel(str, Enum):\n    BLOCKED = "blocked"',  # another vocabulary's home
    'ET.SubElement(case, "skipped", message=text)',  # JUnit's element
    'self.notify(text, severity="error")',  # Textual's severity
    'messages = [{"role": "user", "content": text}]',  # a chat role
])
def test_the_guard_ignores_words_that_are_not_our_statuses(source: str) -> None:
    assert status_constants(source) == []
