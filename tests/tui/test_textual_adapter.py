"""Textual's internals are touched in corral_tui/widgets/textual_adapter.py only, and exist as it expects.

Another Textual release fails the version test, naming the adapter to re-read; a Textual whose DataTable
lacks one of the privates, or holds it as another type, fails here by name (the trials table would
otherwise break or slow down at run time), as does a private module or class the adapter imports that is
gone; a module other than the adapter that touches a Textual private, or imports a private Textual
module, fails the last two tests."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import textual
from textual.widgets import DataTable

from corral_tui.widgets import textual_adapter

ROOT = Path(__file__).resolve().parents[2]
ADAPTER = ROOT / "corral_tui" / "widgets" / "textual_adapter.py"


def test_textual_is_the_release_the_adapter_was_read_from() -> None:
    assert textual.__version__ == textual_adapter.TEXTUAL_VERSION, (
        f"textual {textual.__version__}: re-read the internals in {ADAPTER.relative_to(ROOT)} (written against "
        f"{textual_adapter.TEXTUAL_VERSION}), then update TEXTUAL_VERSION and the pin in pyproject.toml")


def test_every_private_module_and_class_the_adapter_imports_exists() -> None:
    for module_name, names in textual_adapter.PRIVATE_IMPORTS.items():
        module = importlib.import_module(module_name)
        for name in names:
            assert inspect.isclass(getattr(module, name, None)), f"{module_name} has no class {name}"
    imported = {node.module for node in ast.walk(ast.parse(ADAPTER.read_text(encoding="utf-8")))
                if isinstance(node, ast.ImportFrom) and node.module and _is_private_module(node.module)}
    assert imported == set(textual_adapter.PRIVATE_IMPORTS)


def _is_private_module(name: str) -> bool:
    parts = name.split(".")
    return parts[0] == "textual" and any(part.startswith("_") for part in parts[1:])


def test_no_module_but_the_adapter_imports_a_private_textual_module() -> None:
    """`from textual.widgets._select import ...` (or `import textual._x`) only in the adapter (issue 32: two
    widgets imported `_select` and `_footer` while the adapter claimed to be the only one)."""
    found = []
    for path in (ROOT / "corral_tui").rglob("*.py"):
        if path == ADAPTER:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else \
                [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            found += [f"{path.relative_to(ROOT)}:{node.lineno} {name}" for name in names if _is_private_module(name)]
    assert found == [], f"private Textual modules imported outside {ADAPTER.name}: {found}"


def test_every_private_the_adapter_uses_exists_on_datatable_with_its_type() -> None:
    table = DataTable[str]()
    for name, expected in textual_adapter.PRIVATE_ATTRIBUTES.items():
        assert hasattr(table, name), f"DataTable has no {name} in textual {textual.__version__}"
        value = getattr(table, name)
        assert isinstance(value, expected), f"DataTable.{name} is a {type(value).__name__}, not a {expected.__name__}"
    assert type(table._row_locations).__name__ == "TwoWayDict"  # get(key) -> index, as the adapter reads it
    assert hasattr(table._cell_render_cache, "discard") and hasattr(table._cell_render_cache, "keys")
    update = inspect.signature(DataTable._update_dimensions)
    assert list(update.parameters) == ["self", "new_rows"], update
    assert list(inspect.signature(DataTable._clear_caches).parameters) == ["self"]


def test_the_adapter_names_every_private_it_touches() -> None:
    touched = {node.attr for node in ast.walk(ast.parse(ADAPTER.read_text(encoding="utf-8")))
               if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")}
    touched |= {node.name for node in ast.walk(ast.parse(ADAPTER.read_text(encoding="utf-8")))
                if isinstance(node, ast.FunctionDef) and node.name.startswith("_") and not node.name.startswith("__")}
    own = {"_written"}
    assert touched - own == set(textual_adapter.PRIVATE_ATTRIBUTES) | set(textual_adapter.PRIVATE_METHODS)


def _textual_privates() -> set[str]:
    """Every private name Textual's source defines: methods, and attributes it sets on `self`."""
    names: set[str] = set()
    for path in Path(textual.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) \
                    and isinstance(node.value, ast.Name) and node.value.id == "self":
                names.add(node.attr)
    return {name for name in names if name.startswith("_") and not name.startswith("__")}


def test_no_module_but_the_adapter_touches_a_textual_private() -> None:
    """Names a corral_tui module defines itself are its own (`_write`, `_tick`), unless a Textual class
    it derives from has them too (an override of a Textual internal)."""
    privates = _textual_privates()
    sources = {path: path.read_text(encoding="utf-8") for path in (ROOT / "corral_tui").rglob("*.py")
               if path != ADAPTER and "from textual" in path.read_text(encoding="utf-8")}  # (os._exit is no widget's)
    own: set[str] = set()
    touched: dict[str, set[str]] = {}
    for path, source in sources.items():
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                own.add(node.name)
            elif isinstance(node, ast.Attribute):
                if isinstance(node.ctx, ast.Store):
                    own.add(node.attr)
                touched.setdefault(node.attr, set()).add(str(path.relative_to(ROOT)))
    outside = {name: sorted(where) for name, where in touched.items() if name in privates and name not in own}
    assert outside == {}, f"Textual privates touched outside {ADAPTER.name}: {outside}"
    overrides = []
    for path in sources:
        module = importlib.import_module(".".join(path.relative_to(ROOT).with_suffix("").parts))
        for cls in vars(module).values():
            if not inspect.isclass(cls) or cls.__module__ != module.__name__:
                continue
            bases = [base for base in cls.__mro__ if base.__module__.split(".")[0] == "textual"]
            overrides += [f"{cls.__qualname__}.{name}" for name in vars(cls)
                          if name.startswith("_") and not name.startswith("__") and name in privates
                          and any(hasattr(base, name) for base in bases)]
    assert overrides == [], f"Textual internals overridden outside {ADAPTER.name}: {overrides}"
