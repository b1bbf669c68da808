"""Metrics as JSON-ready data: dataclasses become dicts, tuples lists, NaN/inf None."""

from __future__ import annotations

import dataclasses
import math
from typing import Any, cast


def to_jsonable(value: Any) -> Any:
    """Recursively convert metric values to plain JSON types (keys become strings)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(key): to_jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_jsonable(item) for item in value]
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if value is None or isinstance(value, bool | int | str):
        return value
    raise TypeError(f"cannot turn {type(value).__name__} into JSON metrics data")


def metrics_to_dict(metrics: Any) -> dict[str, Any]:
    """A metrics dataclass (ArmMetrics, ChainMetrics, PairedComparison, ...) as a JSON-ready
    dict: json.dumps(..., allow_nan=False) accepts it."""
    if not dataclasses.is_dataclass(metrics) or isinstance(metrics, type):
        kind = type(metrics).__name__
        raise TypeError(f"metrics_to_dict expects a metrics dataclass, got {kind}")
    return cast("dict[str, Any]", to_jsonable(metrics))
