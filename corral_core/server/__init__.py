"""The environment REST server: `create_app`, approval gates, `EmbeddedServer`, `serve_main`.

The names are loaded on first use (PEP 562), so the approval gates and a `LazyApp` (server/lazy.py) can
be imported without FastAPI, which `create_app` imports."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from corral_core.server.app import create_app
    from corral_core.server.approvals import EventingGate, PolicyGate, QueueGate
    from corral_core.server.embedded import EmbeddedServer

__all__ = ["EmbeddedServer", "EventingGate", "PolicyGate", "QueueGate", "create_app"]

_MODULES = {"create_app": "app", "EventingGate": "approvals", "PolicyGate": "approvals", "QueueGate": "approvals",
            "EmbeddedServer": "embedded"}


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
