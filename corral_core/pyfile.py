"""Import Python files by path (environment modules, tool modules), once per file per process."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
import threading
from pathlib import Path
from types import ModuleType

_loaded: dict[Path, ModuleType] = {}
_lock = threading.Lock()


def load_python_file(path: str | Path) -> ModuleType:
    """Import the file at `path`; the same resolved path always gives the same module object."""
    resolved = Path(path).resolve()
    with _lock:
        if resolved in _loaded:
            return _loaded[resolved]
        if not resolved.is_file():
            raise ImportError(f"no Python file at {resolved}")
        digest = hashlib.sha256(str(resolved).encode()).hexdigest()[:10]
        name = f"corral_environments.{resolved.stem}_{digest}"
        spec = importlib.util.spec_from_file_location(name, resolved)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot import {resolved}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(name, None)
            raise
        _loaded[resolved] = module
        return module
