"""Streams are retried on connection errors only until their first item: what was passed on is
never replayed."""

from __future__ import annotations

from collections.abc import AsyncGenerator

import httpx
import pytest

from ragloop.core.models.retry import RetryPolicy, retry_stream_on_connection_errors
from tests.unit.core.models.test_retry import Sleeps


class FlakyStream:
    """Each opening raises the next scripted error before its first item (None: no error), then
    yields the items; ``fail_after_first`` raises after the first item instead."""

    def __init__(
        self, *errors: BaseException | None, fail_after_first: BaseException | None = None
    ) -> None:
        self.errors = list(errors)
        self.fail_after_first = fail_after_first
        self.openings = 0
        self.closed = 0

    async def open(self) -> AsyncGenerator[str, None]:
        self.openings += 1
        try:
            if self.errors and (error := self.errors.pop(0)) is not None:
                raise error
            yield "first"
            if self.fail_after_first is not None:
                raise self.fail_after_first
            yield "second"
        finally:
            self.closed += 1


async def collect(stream: FlakyStream, policy: RetryPolicy, sleeps: Sleeps) -> list[str]:
    return [
        item
        async for item in retry_stream_on_connection_errors(
            stream.open, policy, target="t", sleep=sleeps
        )
    ]


async def test_a_connection_error_before_the_first_item_opens_the_stream_again() -> None:
    stream, sleeps = FlakyStream(httpx.ConnectError("refused"), ConnectionError("ollama")), Sleeps()

    items = await collect(stream, RetryPolicy(retries=3, backoff_s=0.25), sleeps)

    assert items == ["first", "second"]
    assert stream.openings == 3 and stream.closed == 3
    assert sleeps.delays == [0.25, 0.5]


async def test_the_last_connection_error_before_the_first_item_propagates() -> None:
    stream, sleeps = FlakyStream(*[httpx.ConnectError("refused")] * 3), Sleeps()

    with pytest.raises(httpx.ConnectError):
        await collect(stream, RetryPolicy(retries=2), sleeps)

    assert stream.openings == 3


async def test_an_error_after_the_first_item_is_not_retried() -> None:
    stream = FlakyStream(fail_after_first=httpx.ConnectError("gone mid-stream"))
    received: list[str] = []

    with pytest.raises(httpx.ConnectError):
        async for item in retry_stream_on_connection_errors(
            stream.open, RetryPolicy(retries=5), target="t", sleep=Sleeps()
        ):
            received.append(item)

    assert received == ["first"]
    assert stream.openings == 1


async def test_other_errors_before_the_first_item_are_not_retried() -> None:
    stream, sleeps = FlakyStream(httpx.ReadTimeout("generating")), Sleeps()

    with pytest.raises(httpx.ReadTimeout):
        await collect(stream, RetryPolicy(retries=5), sleeps)

    assert stream.openings == 1 and sleeps.delays == []


async def test_closing_early_closes_the_stream() -> None:
    stream = FlakyStream()
    items = retry_stream_on_connection_errors(stream.open, RetryPolicy(), target="t")

    assert await anext(items) == "first"
    await items.aclose()

    assert stream.closed == 1


async def test_an_empty_stream_yields_nothing() -> None:
    async def empty() -> AsyncGenerator[str, None]:
        return
        yield  # pragma: no cover

    items = [i async for i in retry_stream_on_connection_errors(empty, RetryPolicy(), target="t")]

    assert items == []
