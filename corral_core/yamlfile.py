"""Load YAML files while remembering where each key stands, so errors can name the line."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from corral_core.errors import UserError

KeyPath = tuple[str | int, ...]


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


def load_yaml_document(path: str | Path, what: str = "file") -> YamlDocument:
    """Read `path` as a YAML mapping; any problem is a `UserError` naming the file and line."""
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
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc)
        raise UserError(f"not valid YAML: {problem}.", file=file, where=where, fix="correct the YAML syntax.") from None
    if not isinstance(data, dict):
        raise UserError(
            f"the {what} must be a YAML mapping (key: value pairs) at the top level.",
            file=file,
            fix="start the file with keys such as `name:`.",
        )
    lines: dict[KeyPath, int] = {}
    if node is not None:
        _record_lines(node, (), lines)
    return YamlDocument(path=file, data=data, lines=lines)
