"""Interoperability with other evaluation tools, each behind an optional extra imported on first use:
Inspect AI logs out (`inspect_out`) and in (`inspect_in`), OpenTelemetry spans (`otel`)."""

from __future__ import annotations

from importlib import import_module
from types import ModuleType

from corral_core.errors import UserError


def require(module: str, extra: str, what: str) -> ModuleType:
    """Import `module` of an optional extra, or say in words which extra to install (exit 2)."""
    try:
        return import_module(module)
    except ImportError:
        raise UserError(f"{what} needs the optional `{extra}` extra, which is not installed.",
                        fix=f"pip install 'corral-tui[{extra}]'.") from None
