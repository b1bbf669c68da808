"""Import Python files by path (environment modules, tool modules), once per file per process.

A module that calls `sys.exit` while it is imported is a mistake in the module, not a request to
stop corral-tui: `exits_refused` turns it into an ImportError, which the suite and tool loaders
report as a user error (exit 2). Before, `serve` exited 0 without a word.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType


@contextmanager
def exits_refused(what: str) -> Iterator[None]:
    """Turn a SystemExit raised inside the block (importing `what`) into an ImportError."""
    try:
        yield
    except SystemExit as exc:
        raise ImportError(f"{what} called sys.exit({exc.code!r}) while being imported; a module that "
                          "corral-tui loads must not exit the program") from None

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
            with exits_refused(str(resolved)):
                spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(name, None)
            raise
        _loaded[resolved] = module
        return module
