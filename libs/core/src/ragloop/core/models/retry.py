"""Retries with capped exponential backoff, for connection errors only.

A model server that refuses the connection (restarting, not up yet) is worth asking again after a
short wait. A call that connected and then timed out is not: the model was generating, and asking
again would only double the wait — that surfaces as a timeout at once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import httpx

T = TypeVar("T")
log = logging.getLogger(__name__)

# Errors raised before a request reached the server. ``ConnectionError`` is what the ollama client
# raises for httpx's ConnectError.
CONNECTION_ERRORS: tuple[type[BaseException], ...] = (
    httpx.ConnectError,
    httpx.ConnectTimeout,
    ConnectionError,
)


@dataclass(frozen=True)
class RetryPolicy:
    retries: int = 2  # extra attempts after the first one
    backoff_s: float = 0.5  # wait before the first retry; doubled for every further one
    max_backoff_s: float = 8.0  # cap of one wait

    def delay(self, retry: int) -> float:
        """Seconds to wait before retry number ``retry`` (0-based)."""
        return min(self.max_backoff_s, self.backoff_s * 2**retry)


NO_RETRIES = RetryPolicy(retries=0)


async def retry_on_connection_errors(
    call: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    *,
    target: str,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> T:
    """Run ``call``; on a connection error wait and run it again, up to ``policy.retries`` times.
    The last connection error, and any other error at once, propagates unchanged."""
    for retry in range(policy.retries + 1):
        try:
            return await call()
        except CONNECTION_ERRORS as exc:
            if retry >= policy.retries:
                raise
            delay = policy.delay(retry)
            log.warning(
                "model server connection failed; retrying",
                extra={"target": target, "retry": retry + 1, "delay_s": delay, "error": repr(exc)},
            )
            await sleep(delay)
    raise AssertionError("unreachable")  # pragma: no cover
