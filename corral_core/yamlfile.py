"""Load YAML files while remembering where each key stands, so errors can name the line.

Every YAML we read goes through `safe_load` or `load_yaml_document`, which are bounded: aliases may
add at most `MAX_ALIAS_EXPANSION` nodes to a document (an "alias bomb" of a few hundred bytes
would otherwise expand to billions as soon as anything walks it), a recursive alias is refused, and
so is nesting deeper than the parser can follow. A document without aliases is never refused for
its size.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from corral_core.errors import UserError

KeyPath = tuple[str | int, ...]
MAX_ALIAS_EXPANSION = 100_000  # nodes that aliases may add beyond the document's own


class YamlBombError(yaml.YAMLError):
    """A document whose aliases would expand without bound (or refer to themselves)."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem
        self.problem_mark = None


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def check_expansion(root: yaml.Node, limit: int = MAX_ALIAS_EXPANSION) -> None:
    """Raise `YamlBombError` if aliases expand `root` by more than `limit` nodes, or form a cycle.

    Costs one pass over the distinct nodes (an alias is a shared node): sizes are memoised.
    """
    size: dict[int, int] = {}  # expanded size of each finished node
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, finished = stack.pop()
        key = id(node)
        if finished:
            on_path.discard(key)
            size[key] = 1 + sum(size[id(child)] for child in _children(node))
            if size[key] - len(size) > limit:
                break
            continue
        if key in size:
            continue
        if key in on_path:
            raise YamlBombError("an alias refers to a node that contains it (a recursive alias)")
        on_path.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node) if id(child) not in size)
    expanded = size.get(id(root), max(size.values(), default=0))
    if expanded - len(size) > limit:
        raise YamlBombError(f"its aliases (*name) would expand it to more than {limit:,} extra nodes "
                            "(an alias bomb)")


def _load(text: str) -> tuple[yaml.Node | None, Any]:
    """(node graph, data) of one document, parsed once, bounded (see the module docstring)."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, None
        check_expansion(node)
        return node, loader.construct_document(node)
    except RecursionError:
        raise YamlBombError("it is nested too deeply") from None
    finally:
        loader.dispose()


def safe_load(text: str) -> Any:
    """`yaml.safe_load`, bounded: a `YamlBombError` (a `yaml.YAMLError`) instead of a blow-up."""
    return _load(text)[1]


@dataclass
class YamlDocument:
    """A parsed YAML mapping plus the 1-based line of every key path in it."""

    path: Path
    data: dict[str, Any]
    lines: dict[KeyPath, int] = field(default_factory=dict)

    def line_of(self, key_path: KeyPath) -> int | None:
        """The line of `key_path`, or of its nearest parent that has one."""
        while key_path:
            if key_path in self.lines:
                return self.lines[key_path]
            key_path = key_path[:-1]
        return None

    def where(self, key_path: KeyPath) -> str:
        """`line N, key a.b[2].c` for messages."""
        dotted = format_key_path(key_path)
        line = self.line_of(key_path)
        if line is None:
            return f"key {dotted}" if dotted else "top level"
        return f"line {line}, key {dotted}" if dotted else f"line {line}"

    def error(self, key_path: KeyPath, problem: str, fix: str | None = None) -> UserError:
        return UserError(problem, file=self.path, where=self.where(key_path), fix=fix)


def format_key_path(key_path: KeyPath) -> str:
    out = ""
    for part in key_path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _record_lines(node: yaml.Node, prefix: KeyPath, lines: dict[KeyPath, int]) -> None:
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node)
            path = (*prefix, key)
            lines[path] = key_node.start_mark.line + 1
            _record_lines(value_node, path, lines)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            path = (*prefix, index)
            lines[path] = item.start_mark.line + 1
            _record_lines(item, path, lines)


def duplicate_key(node: yaml.Node) -> tuple[str, int, int] | None:
    """(key, its line, the line of its first use) of the first key written twice in one mapping."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, yaml.MappingNode):
            seen: dict[str, int] = {}
            for key_node, _ in current.value:
                key = str(key_node.value) if isinstance(key_node, yaml.ScalarNode) else str(key_node)
                if key in seen:
                    return key, key_node.start_mark.line + 1, seen[key]
                seen[key] = key_node.start_mark.line + 1
        stack.extend(reversed(_children(current)))
    return None


def load_yaml_document(path: str | Path, what: str = "file", *, unique_keys: bool = False) -> YamlDocument:
    """Read `path` as a YAML mapping; any problem is a `UserError` naming the file and line. With
    `unique_keys`, a key written twice in one mapping is refused too (YAML would keep the last)."""
    file = Path(path)
    if not file.is_file():
        raise UserError(
            f"{what} not found.", file=file, fix="check the path (relative paths start from the current directory)."
        )
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"not UTF-8 text (byte {exc.start} cannot be decoded).", file=file,
                        fix="save the file as UTF-8.") from None
    except OSError as exc:
        raise UserError(f"cannot be read: {exc.strerror or exc}.", file=file) from None
    try:
        node, data = _load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc)
        fix = ("use fewer aliases, or write the data out." if isinstance(exc, YamlBombError)
               else "correct the YAML syntax.")
        raise UserError(f"not valid YAML: {problem}.", file=file, where=where, fix=fix) from None
    if not isinstance(data, dict):
        raise UserError(
            f"the {what} must be a YAML mapping (key: value pairs) at the top level.",
            file=file,
            fix="start the file with keys such as `name:`.",
        )
    lines: dict[KeyPath, int] = {}
    if node is not None:
        twice = duplicate_key(node) if unique_keys else None
        if twice is not None:
            key, line, first = twice
            raise UserError(f"the key {key!r} is written twice in one mapping (first on line {first}).",
                            file=file, where=f"line {line}", fix="keep one of them (YAML would silently use the last).")
        _record_lines(node, (), lines)
    return YamlDocument(path=file, data=data, lines=lines)
