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

`requests_per_minute` and `tokens_per_minute` are budgets per model id (and api_base) in this process
(on the Dask executors: per worker process), refilled continuously: a request starts when one request
of the minute's budget is left and the token budget is not overspent; its tokens are charged when it
answers, so a call that overspends makes the next ones wait. The waits are returned to completion(),
which reports them (`rate_limit_wait`) apart from the retries' waits.
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

__all__ = ["DEFAULT_MAX_RETRIES", "RateLimiter", "connection_slot", "is_transient", "rate_limiter", "retry_after",
           "set_slot_factory", "wait_before_retry"]
BACKOFF_BASE = 1.0  # seconds before the first retry (then 2, 4, 8, ... with full jitter)
BACKOFF_CAP = 30.0  # no computed backoff waits longer than this
RETRY_AFTER_CAP = 120.0  # a provider's Retry-After is honoured up to this many seconds
TRANSIENT_KINDS = frozenset({"rate_limit", "timeout"})

sleep: Callable[[float], None] = time.sleep  # tests replace it to see the waits without taking them
clock: Callable[[], float] = time.monotonic  # ... and this, to move time on by the waits they saw


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


# ------------------------------------------------------------------- requests / tokens per minute
class RateLimiter:
    """A model's requests- and tokens-per-minute budgets: two buckets refilled continuously."""

    def __init__(self, requests_per_minute: int | None, tokens_per_minute: int | None) -> None:
        self.requests_per_minute = requests_per_minute
        self.tokens_per_minute = tokens_per_minute
        self._requests = float(requests_per_minute or 0)  # what is left of each budget
        self._tokens = float(tokens_per_minute or 0)
        self._stamp = clock()
        self._lock = threading.Lock()

    def acquire(self) -> float:
        """Take one request of the budget, waiting until there is one (and the tokens are not
        overspent); returns the seconds waited."""
        waited = 0.0
        while True:
            with self._lock:
                self._refill()
                pause = self._wait_needed()
                if pause <= 0:
                    if self.requests_per_minute:
                        self._requests -= 1
                    return waited
            sleep(pause)
            waited += pause

    def charge(self, tokens: int) -> None:
        """Spend `tokens` (an answered call's prompt + completion tokens) from the token budget."""
        if self.tokens_per_minute and tokens > 0:
            with self._lock:
                self._refill()
                self._tokens -= tokens

    def _refill(self) -> None:
        now = clock()
        minutes = max(0.0, now - self._stamp) / 60.0
        self._stamp = now
        if self.requests_per_minute:
            self._requests = min(float(self.requests_per_minute), self._requests + minutes * self.requests_per_minute)
        if self.tokens_per_minute:
            self._tokens = min(float(self.tokens_per_minute), self._tokens + minutes * self.tokens_per_minute)

    def _wait_needed(self) -> float:
        pause = 0.0
        if self.requests_per_minute and self._requests < 1:
            pause = (1 - self._requests) * 60.0 / self.requests_per_minute
        if self.tokens_per_minute and self._tokens < 0:
            pause = max(pause, -self._tokens * 60.0 / self.tokens_per_minute)
        return pause


_limiters: dict[tuple[str, int | None, int | None], RateLimiter] = {}


def rate_limiter(model: str, api_base: str | None, requests_per_minute: int | None,
                 tokens_per_minute: int | None) -> RateLimiter | None:
    """The process's limiter for this model (shared by every caller with the same limits); None: no limits."""
    if not requests_per_minute and not tokens_per_minute:
        return None
    key = (f"{model} {api_base or ''}", requests_per_minute, tokens_per_minute)
    with _slots_lock:
        limiter = _limiters.get(key)
        if limiter is None:
            limiter = _limiters[key] = RateLimiter(requests_per_minute, tokens_per_minute)
        return limiter


def reset_rate_limiters() -> None:
    """Forget every budget (tests; a new run in the same process starts with full budgets otherwise too)."""
    with _slots_lock:
        _limiters.clear()
