"""Optional rate limit per caller: a token bucket of ``rate_limit_burst`` requests, refilled at
``rate_limit_per_minute``. The caller is the API key (its fingerprint, set by ``auth``) or, with
keys off, the client's address. Public paths (health, metrics, docs, the page) are not limited.

The bucket table is bounded: past ``MAX_TRACKED_CALLERS`` the least recently seen caller's bucket
is dropped (it would have refilled the longest, so forgetting it is the smallest leniency).
"""

from __future__ import annotations

import logging
import math
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from starlette.types import ASGIApp, Receive, Scope, Send

from ragloop.orchestrator.access.auth import CALLER, is_public, refusal, route_path

log = logging.getLogger(__name__)

MAX_TRACKED_CALLERS = 10_000


@dataclass
class TokenBucket:
    tokens: float
    updated: float


class RateLimiter:
    """Token buckets per caller. Not locked: every call runs to completion on the event loop."""

    def __init__(
        self,
        per_minute: float,
        burst: int,
        *,
        max_callers: int = MAX_TRACKED_CALLERS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if per_minute <= 0 or burst < 1 or max_callers < 1:
            raise ValueError("a rate limit needs per_minute > 0, burst >= 1 and max_callers >= 1")
        self.per_second = per_minute / 60
        self.burst = burst
        self.max_callers = max_callers
        self.clock = clock
        self._buckets: OrderedDict[str, TokenBucket] = OrderedDict()

    def acquire(self, caller: str) -> float:
        """Take one request from ``caller``'s bucket: 0 when allowed, else the seconds until the
        bucket holds a whole request again (nothing is taken then)."""
        now = self.clock()
        bucket = self._bucket(caller, now)
        bucket.tokens = min(self.burst, bucket.tokens + (now - bucket.updated) * self.per_second)
        bucket.updated = now
        if bucket.tokens >= 1:
            bucket.tokens -= 1
            return 0.0
        return (1 - bucket.tokens) / self.per_second

    def tracked_callers(self) -> int:
        return len(self._buckets)

    def _bucket(self, caller: str, now: float) -> TokenBucket:
        bucket = self._buckets.get(caller)
        if bucket is None:
            bucket = self._buckets[caller] = TokenBucket(float(self.burst), now)
            if len(self._buckets) > self.max_callers:
                self._buckets.popitem(last=False)
        else:
            self._buckets.move_to_end(caller)
        return bucket


def retry_after_header(wait_s: float) -> str:
    """Whole seconds, rounded up so that a client waiting that long finds a request available."""
    return str(max(1, math.ceil(wait_s)))


def caller_of(scope: Scope) -> str:
    """The key's fingerprint when ``auth`` identified one, else the client's address."""
    caller = scope.get("state", {}).get(CALLER)
    if caller:
        return caller
    client = scope.get("client")
    return f"address:{client[0]}" if client else "address:unknown"


class RateLimitMiddleware:
    """Pure ASGI; installed inside ``ApiKeyMiddleware`` so that the key names the caller."""

    def __init__(self, app: ASGIApp, limiter: RateLimiter, public: frozenset[str]) -> None:
        self.app = app
        self.limiter = limiter
        self.public = public

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or is_public(route_path(scope), self.public):
            await self.app(scope, receive, send)
            return
        caller = caller_of(scope)
        wait_s = self.limiter.acquire(caller)
        if wait_s == 0:
            await self.app(scope, receive, send)
            return
        retry_after = retry_after_header(wait_s)
        log.info("request over the rate limit refused", extra={"caller": caller})
        response = refusal(
            scope,
            429,
            "rate_limited",
            f"too many requests from this caller: retry in {retry_after} s",
            {"retry-after": retry_after},
        )
        await response(scope, receive, send)
