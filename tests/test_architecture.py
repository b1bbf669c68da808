"""The seams of docs/architecture.md, checked on the source: screens and widgets receive what they need and
never reach into the app, the services run without a terminal, every screen is in the registry that
feeds help and the palette, test helpers stay out of the shipped packages, and removed names stay gone.
(`./dev lint` checks the import contracts too; these run with every `./dev test ARGS`.)"""

from __future__ import annotations

import ast
from pathlib import Path

from textual.app import App
from textual.screen import Screen

from corral_tui.app import WorkbenchApp
from corral_tui.commands import all_binding_owners, binding_rows
from corral_tui.screens.base import QueryScreen
from corral_tui.screens.history import PagedScreen
from corral_tui.screens.registry import screens

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ("corral_core", "corral_tui")


def modules(*folders: str) -> list[tuple[str, ast.Module]]:
    paths = sorted(path for folder in folders for path in (ROOT / folder).rglob("*.py"))
    return [(str(path.relative_to(ROOT)), ast.parse(path.read_text(encoding="utf-8"))) for path in paths]


def imported(tree: ast.Module, package: str) -> set[str]:
    """Every module a file imports, at any depth (functions, TYPE_CHECKING blocks), relative ones resolved."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def package_of(path: str) -> str:
    return ".".join(Path(path).with_suffix("").parts[:-1])


def test_no_screen_or_widget_imports_the_app() -> None:
    offenders = [path for path, tree in modules("corral_tui/screens", "corral_tui/widgets")
                 if {"corral_tui.app", "corral_tui.app.WorkbenchApp"} & imported(tree, package_of(path))]
    assert offenders == []


def test_screens_and_widgets_use_only_textuals_app() -> None:
    """`self.app.x` where x is not Textual's would reach into the workbench app without importing it."""
    reaching = sorted({f"{path}: app.{node.attr}"
                       for path, tree in modules("corral_tui/screens", "corral_tui/widgets")
                       for node in ast.walk(tree)
                       if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute)
                       and node.value.attr == "app" and not hasattr(App, node.attr)})
    assert reaching == []


def test_the_services_never_import_textual_or_the_ui() -> None:
    ui = ("textual", "corral_tui.app", "corral_tui.screens", "corral_tui.widgets")
    offenders = {path: sorted(name for name in imported(tree, package_of(path)) if name.startswith(ui))
                 for path, tree in modules("corral_tui/services")}
    assert {path: names for path, names in offenders.items() if names} == {}


def test_every_screen_is_registered_and_reaches_help_and_the_palette() -> None:
    registered = {info.screen for info in screens()}
    bases = {QueryScreen, PagedScreen}  # shared behaviour, never shown themselves
    unregistered = sorted(cls.__name__ for cls in _subclasses(Screen)
                          if cls.__module__.startswith("corral_tui.screens.") and cls not in registered | bases)
    assert unregistered == [], "add them to corral_tui/screens/registry.py"
    owners = all_binding_owners(WorkbenchApp)  # what the help screen lists
    assert registered <= {owner for _where, owner in owners}
    listed = {where for where, *_ in binding_rows(owners)}
    assert {info.name for info in screens() if info.screen.BINDINGS} <= listed
    for info in screens():  # the palette's "Open ..." entries run these app actions
        if info.open_action is not None:
            action = info.open_action.removeprefix("app.")
            assert callable(getattr(WorkbenchApp, f"action_{action}", None)), info


def _subclasses(cls: type) -> list[type]:
    found = []
    for sub in cls.__subclasses__():
        found += [sub, *_subclasses(sub)]
    return found


def test_test_helpers_stay_out_of_the_shipped_packages() -> None:
    helpers = {"test_config", "StableRedactor", "FIXED_NOW"}
    defined = sorted(f"{path}: {name}" for path, tree in modules(*SHIPPED) for node in ast.walk(tree)
                     for name in _defined_names(node) if name in helpers)
    assert defined == []
    importing_tests = sorted(path for path, tree in modules(*SHIPPED)
                             if any(name == "tests" or name.startswith("tests.")
                                    for name in imported(tree, package_of(path))))
    assert importing_tests == []


def _defined_names(node: ast.AST) -> list[str]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [node.name]
    if isinstance(node, ast.Assign):
        return [n.id for target in node.targets for n in ast.walk(target) if isinstance(n, ast.Name)]
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [node.target.id]
    return []


def _enum_members(tree: ast.AST) -> set[int]:
    """The statements of enum class bodies (`class WorkbenchState(StrEnum): FINISHED = ...`)."""
    return {id(statement) for node in ast.walk(tree) if isinstance(node, ast.ClassDef)
            and any(ast.unparse(base).endswith("Enum") for base in node.bases) for statement in node.body}


def test_removed_names_and_colliding_module_names_stay_gone() -> None:
    """Issue 11: dead code deleted, and modules renamed to say what they hold."""
    gone = {"ControlApplied", "EXIT_BAD_INPUT", "FINISHED"}  # (an enum's member FINISHED is a value, not them)
    defined = sorted(f"{path}: {name}" for path, tree in modules(*SHIPPED)
                     for members in [_enum_members(tree)] for node in ast.walk(tree)
                     if id(node) not in members for name in _defined_names(node) if name in gone)
    assert defined == []
    from corral_core.runner import ControlRegistry
    from corral_tui.screens.workbench import WorkbenchScreen

    assert not hasattr(WorkbenchScreen, "current") and not hasattr(ControlRegistry, "paused")
    stems = [path.name for package in SHIPPED for path in (ROOT / package).rglob("*.py")]
    assert {"engine.py", "controls.py", "runform.py"}.isdisjoint(stems)


def test_every_package_the_shipped_code_imports_is_declared() -> None:
    """A package imported directly is a dependency of ours, pinned in pyproject, not an accident of
    what another package happens to pull in (an optional integration's: pinned in its extra)."""
    import re
    import sys
    import tomllib
    from importlib.metadata import packages_distributions

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = [r for extra, listed in project["optional-dependencies"].items() if extra != "test" for r in listed]
    declared = {re.split(r"[\[=<>~!; ]", requirement, maxsplit=1)[0].lower().replace("_", "-")
                for requirement in [*project["dependencies"], *extras]}
    distributions = packages_distributions()
    top_level = {name.split(".")[0] for path, tree in modules(*SHIPPED) for name in imported(tree, package_of(path))}
    third_party = {name for name in top_level - set(SHIPPED) - set(sys.stdlib_module_names) if name}
    undeclared = sorted(f"{name} ({', '.join(distributions.get(name, ['?']))})" for name in third_party
                        if not {d.lower().replace("_", "-") for d in distributions.get(name, [name])} & declared)
    assert undeclared == [], "declare them in pyproject's [project] dependencies"
