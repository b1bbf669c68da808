"""Install a plugin package for one test: its dist-info (METADATA and the entry_points.txt its own
pyproject.toml declares) in a temporary site directory on sys.path, found by importlib.metadata's real
entry point lookup, as pip would leave it; removed, with its modules and kinds, afterwards."""

from __future__ import annotations

import importlib
import sys
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from corral_core.registry import Registry

HERE = Path(__file__).parent
TESTPLUGIN = HERE / "corral_tui_testplugin"


def registries() -> list[Registry]:  # type: ignore[type-arg]
    from corral_core.registry import REGISTRIES

    return list(REGISTRIES.values())


def write_dist_info(site: Path, name: str, version: str, groups: dict[str, dict[str, str]]) -> Path:
    """A `name-version.dist-info` in `site` declaring `groups` ({group: {entry name: object ref}})."""
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n", encoding="utf-8")
    lines = []
    for group, points in groups.items():
        lines.append(f"[{group}]")
        lines.extend(f"{entry} = {target}" for entry, target in points.items())
        lines.append("")
    (info / "entry_points.txt").write_text("\n".join(lines), encoding="utf-8")
    return info


@contextmanager
def installed(site: Path, project: Path = TESTPLUGIN, *, extra_path: Path | None = None) -> Iterator[Path]:
    """The package of `project` (its pyproject.toml and src/) installed in `site` for the block."""
    meta = tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    write_dist_info(site, meta["name"], meta["version"], meta.get("entry-points", {}))
    with on_path(site, project / "src", *([extra_path] if extra_path else [])):
        yield site


@contextmanager
def on_path(*folders: Path) -> Iterator[None]:
    """`folders` on sys.path, every registry asked again, and all of it undone after."""
    sys.path[:0] = [str(folder) for folder in folders]
    importlib.invalidate_caches()
    for registry in registries():
        registry.reload_plugins()
    try:
        yield
    finally:
        for folder in folders:
            sys.path.remove(str(folder))
        for name, module in list(sys.modules.items()):  # the plugin's own modules: imported afresh next time
            where = getattr(module, "__file__", None) or ""
            if any(where.startswith(str(folder)) for folder in folders):
                del sys.modules[name]
        importlib.invalidate_caches()
        for registry in registries():
            registry.reload_plugins()
