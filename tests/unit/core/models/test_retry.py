"""Retries with capped exponential backoff: on connection errors only."""

from __future__ import annotations

import httpx
import pytest

from ragloop.core.models.retry import RetryPolicy, retry_on_connection_errors


class Flaky:
    """Raises the scripted errors in turn, then returns "ok"."""

    def __init__(self, *errors: BaseException) -> None:
        self.errors = list(errors)
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "ok"


class Sleeps:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def test_backoff_doubles_up_to_its_cap() -> None:
    policy = RetryPolicy(retries=6, backoff_s=0.5, max_backoff_s=3.0)
    assert [policy.delay(r) for r in range(6)] == [0.5, 1.0, 2.0, 3.0, 3.0, 3.0]


@pytest.mark.parametrize(
    "error",
    [httpx.ConnectError("refused"), httpx.ConnectTimeout("slow"), ConnectionError("ollama")],
    ids=["connect-error", "connect-timeout", "connection-error"],
)
async def test_connection_errors_are_retried_with_backoff(error: BaseException) -> None:
    call, sleeps = Flaky(error, error), Sleeps()

    result = await retry_on_connection_errors(
        call, RetryPolicy(retries=3, backoff_s=0.25), target="t", sleep=sleeps
    )

    assert result == "ok"
    assert call.calls == 3
    assert sleeps.delays == [0.25, 0.5]


async def test_the_last_connection_error_propagates() -> None:
    call, sleeps = Flaky(*[httpx.ConnectError("refused")] * 3), Sleeps()

    with pytest.raises(httpx.ConnectError):
        await retry_on_connection_errors(call, RetryPolicy(retries=2), target="t", sleep=sleeps)

    assert call.calls == 3
    assert sleeps.delays == [0.5, 1.0]


@pytest.mark.parametrize(
    "error",
    [httpx.ReadTimeout("generating"), httpx.RemoteProtocolError("closed"), ValueError("bad")],
    ids=["read-timeout", "protocol-error", "other"],
)
async def test_other_errors_are_not_retried(error: BaseException) -> None:
    call, sleeps = Flaky(error), Sleeps()

    with pytest.raises(type(error)):
        await retry_on_connection_errors(call, RetryPolicy(retries=5), target="t", sleep=sleeps)

    assert call.calls == 1
    assert sleeps.delays == []
