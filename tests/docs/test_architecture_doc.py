"""docs/architecture.md against the code: its table of packages and their import arrows is the import
graph computed from the source (every import, at any depth of a module, TYPE_CHECKING ones included),
and its list of modules that switch on event kinds is the list the source gives. Any difference fails,
naming it, so the picture a reader trusts cannot drift from the code."""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
SHORT = {"corral_core": "core", "corral_tui": "tui"}


def _units() -> set[str]:
    """The graph's nodes: each top-level module or subpackage of the two packages, and each package itself."""
    units = set(SHORT.values())
    for package, short in SHORT.items():
        for child in (ROOT / package).iterdir():
            if child.name.startswith(("_", ".")) and child.name != "__main__.py":
                continue
            if child.suffix == ".py" or (child.is_dir() and (child / "__init__.py").exists()):
                units.add(f"{short}.{child.name.removesuffix('.py')}")
    return units


def _unit(module: str, units: set[str]) -> str:
    package, *rest = module.split(".")
    name = f"{SHORT[package]}.{rest[0]}" if rest else SHORT[package]
    return name if name in units else SHORT[package]


def _sources() -> list[tuple[str, bool, Path]]:
    found = []
    for package in SHORT:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "sample-data" in path.parts:
                continue
            parts = path.relative_to(ROOT).with_suffix("").parts
            is_package = parts[-1] == "__init__"
            found.append((".".join(parts[:-1] if is_package else parts), is_package, path))
    return found


def _imported(node: ast.AST, module: str, is_package: bool) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        if node.module:
            return [".".join([*base, node.module])]
        return [".".join([*base, alias.name]) for alias in node.names]
    if node.module in SHORT:  # `from corral_core import runner` names a subpackage
        return [f"{node.module}.{alias.name}" for alias in node.names]
    return [node.module or ""]


def import_graph() -> dict[str, set[str]]:
    units = _units()
    graph: dict[str, set[str]] = defaultdict(set)
    for module, is_package, path in _sources():
        source = _unit(module, units)
        graph[source]
        for node in ast.walk(ast.parse(path.read_text())):
            for name in _imported(node, module, is_package):
                if name.split(".")[0] in SHORT:
                    target = _unit(name, units)
                    if target != source:
                        graph[source].add(target)
    return dict(graph)


def documented_graph() -> dict[str, set[str]]:
    text = DOC.read_text()
    section = text.split("## Packages and their import arrows", 1)[1].split("\n## ", 1)[0]
    graph = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 2 and cells[0].startswith("`"):
            graph[cells[0].strip("`")] = set(re.findall(r"`([^`]+)`", cells[1]))
    return graph


def test_the_package_table_is_the_import_graph() -> None:
    actual, documented = import_graph(), documented_graph()
    assert documented, "docs/architecture.md has no package table"
    differences = []
    for unit in sorted(set(actual) | set(documented)):
        if unit not in documented:
            differences.append(f"{unit}: missing from the table (imports {sorted(actual[unit])})")
        elif unit not in actual:
            differences.append(f"{unit}: in the table, but no such package or module")
        else:
            for target in sorted(actual[unit] - documented[unit]):
                differences.append(f"{unit} -> {target}: imported, not in the table")
            for target in sorted(documented[unit] - actual[unit]):
                differences.append(f"{unit} -> {target}: in the table, not imported")
    assert not differences, "docs/architecture.md differs from the code:\n" + "\n".join(differences)


def switches_on_event_kinds() -> set[str]:
    """Modules (other than events.py) that read an object's `.kind` and name an `EventKind` member, or that
    ask `isinstance` of an event class of corral_core.events (`isinstance(event, HookFiredEvent | ...)`)."""
    found = set()
    for module, _, path in _sources():
        if module == "corral_core.events":
            continue
        nodes = list(ast.walk(ast.parse(path.read_text())))
        reads_kind = any(isinstance(n, ast.Attribute) and n.attr == "kind" and isinstance(n.ctx, ast.Load)
                         for n in nodes)
        names_member = any(isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
                           and n.value.id == "EventKind" for n in nodes)
        event_classes = {alias.asname or alias.name for n in nodes if isinstance(n, ast.ImportFrom)
                         and n.module == "corral_core.events" for alias in n.names if alias.name.endswith("Event")}
        asks_class = any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "isinstance"
                         and len(n.args) == 2 and any(isinstance(m, ast.Name) and m.id in event_classes
                                                      for m in ast.walk(n.args[1])) for n in nodes)
        if (reads_kind and names_member) or asks_class:
            found.add(str(path.relative_to(ROOT)))
    return found


def test_the_list_of_modules_that_switch_on_event_kinds_is_the_code_s() -> None:
    section = DOC.read_text().split("## Modules that switch on event kinds", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"^- `([^`]+\.py)`", section, re.MULTILINE))
    actual = switches_on_event_kinds()
    assert documented == actual, (f"not in the list: {sorted(actual - documented)}; "
                                  f"listed, but no longer switching: {sorted(documented - actual)}")


def test_the_checks_see_a_difference() -> None:
    """The parsers are not vacuous: the table names the engine's runner and its arrows, and the
    computed graph has the arrow every run takes (the runner stores through the store)."""
    assert "core.store" in documented_graph()["core.runner"]
    assert "core.store" in import_graph()["core.runner"]
    assert "corral_core/runner/trial.py" in switches_on_event_kinds()


def table_rows() -> str:
    """The package table as docs/architecture.md writes it (engine first)."""
    graph = import_graph()
    return "\n".join(f"| `{unit}` | " + (", ".join(f"`{t}`" for t in sorted(graph[unit])) or "—") + " |"
                     for unit in sorted(graph, key=lambda u: (not u.startswith("core"), u)))


if __name__ == "__main__":  # `python tests/docs/test_architecture_doc.py`: the table's rows for the doc, to paste
    print(table_rows())
