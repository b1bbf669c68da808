"""How completion() survives a provider's bad moment: retries with backoff, and per-model connection limits.

One policy for every litellm provider (openai/, anthropic/, hosted_vllm/, ...): litellm's own retries
are switched off (`max_retries=0` on each call, so the openai SDK does not retry underneath) and the
call is repeated here when the failure is transient — a rate limit (429), a timeout, or a server
error (5xx). The wait is the provider's `Retry-After` (or `retry-after-ms`) when it sends one,
otherwise exponential backoff with full jitter; both are capped, and the count is bounded by the
model's `max_retries` (DEFAULT_MAX_RETRIES unless the spec says otherwise).

`max_connections` bounds the requests in flight per model id (and api_base) in this process: every
caller of the same model shares one semaphore; a changed limit applies to requests that start after it.
On the Dask executors the slots are leases of one Dask `Semaphore` per model, shared by every worker
(runner/dask_worker.py installs it with `set_slot_factory`).
"""

from __future__ import annotations

import email.utils
import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from corral_core.llm.types import DEFAULT_MAX_RETRIES, LLMError

__all__ = ["DEFAULT_MAX_RETRIES", "connection_slot", "is_transient", "retry_after", "set_slot_factory",
           "wait_before_retry"]
BACKOFF_BASE = 1.0  # seconds before the first retry (then 2, 4, 8, ... with full jitter)
BACKOFF_CAP = 30.0  # no computed backoff waits longer than this
RETRY_AFTER_CAP = 120.0  # a provider's Retry-After is honoured up to this many seconds
TRANSIENT_KINDS = frozenset({"rate_limit", "timeout"})

sleep: Callable[[float], None] = time.sleep  # tests replace it to see the waits without taking them


def is_transient(error: LLMError) -> bool:
    """Worth another try: a rate limit, a timeout or a 5xx; never auth, bad requests or our own errors."""
    if error.kind in TRANSIENT_KINDS:
        return True
    return error.kind == "provider" and error.status_code is not None and 500 <= int(error.status_code) <= 599


def retry_after(exc: BaseException | None) -> float | None:
    """Seconds the provider asked us to wait (`retry-after-ms` or `Retry-After`, seconds or HTTP date)."""
    for headers in _headers_in_chain(exc):
        millis = _header(headers, "retry-after-ms")
        if millis is not None:
            try:
                return max(0.0, float(millis) / 1000.0)
            except ValueError:
                pass
        value = _header(headers, "retry-after")
        if value is None:
            continue
        try:
            return max(0.0, float(value))
        except ValueError:
            parsed = email.utils.parsedate_to_datetime(value) if value.strip() else None
            if parsed is not None:
                return max(0.0, parsed.timestamp() - time.time())
    return None


def backoff(retry: int, rng: random.Random | None = None) -> float:
    """Full-jitter exponential backoff for retry number `retry` (0-based), capped at BACKOFF_CAP."""
    ceiling = min(BACKOFF_CAP, BACKOFF_BASE * (2 ** retry))
    return (rng or random).uniform(0.0, ceiling)


def wait_before_retry(retry: int, exc: BaseException | None) -> float:
    """How long to wait before retry number `retry`: the provider's Retry-After (capped) or backoff."""
    asked = retry_after(exc)
    if asked is not None:
        return min(asked, RETRY_AFTER_CAP)
    return backoff(retry)


def _headers_in_chain(exc: BaseException | None) -> Iterator[Any]:
    seen = 0
    current = exc
    while current is not None and seen < 20:
        seen += 1
        for headers in (getattr(current, "litellm_response_headers", None),
                        getattr(getattr(current, "response", None), "headers", None)):
            if headers:
                yield headers
        current = current.__cause__ or current.__context__


def _header(headers: Any, name: str) -> str | None:
    try:
        value = headers.get(name)
        if value is None and isinstance(headers, dict):
            value = next((v for k, v in headers.items() if str(k).lower() == name), None)
    except Exception:  # an odd headers object: no hint
        return None
    return None if value is None else str(value)


# ---------------------------------------------------------------------------------- max_connections
_slots_lock = threading.Lock()
_slots: dict[str, Any] = {}
_slot_factory: Callable[[str, int], Any] | None = None  # None: a BoundedSemaphore in this process


def set_slot_factory(factory: Callable[[str, int], Any] | None) -> None:
    """Where `max_connections` slots come from: factory(key, limit) returns an object with acquire()
    and release() (e.g. a Dask Semaphore shared by all workers); None restores this process's own."""
    global _slot_factory
    with _slots_lock:
        _slot_factory = factory
        _slots.clear()


def _slot(key: str, limit: int) -> Any:
    with _slots_lock:
        known = _slots.get(key)
        if known is None or known[0] != limit:
            semaphore = _slot_factory(key, limit) if _slot_factory is not None else threading.BoundedSemaphore(limit)
            known = (limit, semaphore)
            _slots[key] = known
        return known[1]


@contextmanager
def connection_slot(model: str, api_base: str | None, limit: int | None) -> Iterator[None]:
    """Hold one of `limit` request slots of `model` for the duration of the block (no limit: no wait)."""
    if not limit:
        yield
        return
    semaphore = _slot(f"{model} {api_base or ''}", int(limit))
    semaphore.acquire()
    try:
        yield
    finally:
        semaphore.release()
