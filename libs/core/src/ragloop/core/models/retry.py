"""Retries with capped exponential backoff, for connection errors only.

A model server that refuses the connection (restarting, not up yet) is worth asking again after a
short wait. A call that connected and then timed out is not: the model was generating, and asking
again would only double the wait — that surfaces as a timeout at once. A streamed reply is retried
only until its first item arrives: once anything was passed on, asking again would repeat it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing
from typing import TypeVar

import httpx

from ragloop.core.backoff import NO_RETRIES, RetryPolicy

__all__ = [
    "NO_RETRIES",
    "RetryPolicy",
    "retry_on_connection_errors",
    "retry_stream_on_connection_errors",
]

T = TypeVar("T")
log = logging.getLogger(__name__)

# Errors raised before a request reached the server. ``ConnectionError`` is what the ollama client
# raises for httpx's ConnectError.
CONNECTION_ERRORS: tuple[type[BaseException], ...] = (
    httpx.ConnectError,
    httpx.ConnectTimeout,
    ConnectionError,
)


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


async def retry_stream_on_connection_errors(
    open_stream: Callable[[], AsyncGenerator[T, None]],
    policy: RetryPolicy,
    *,
    target: str,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> AsyncGenerator[T, None]:
    """Yield the items of ``open_stream()``; a connection error before its first item opens it
    again as ``retry_on_connection_errors`` would. Any error after the first item propagates."""

    async def first_item() -> tuple[AsyncGenerator[T, None], list[T]]:
        stream = open_stream()
        try:
            return stream, [await anext(stream)]
        except StopAsyncIteration:
            return stream, []
        except BaseException:
            await stream.aclose()
            raise

    stream, first = await retry_on_connection_errors(first_item, policy, target=target, sleep=sleep)
    async with aclosing(stream):
        for item in first:
            yield item
        async for item in stream:
            yield item
