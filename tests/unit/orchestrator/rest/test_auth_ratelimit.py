"""The per-caller token bucket, on a clock the test moves."""

from __future__ import annotations

import pytest

from ragloop.orchestrator.rest.ratelimit import RateLimiter, caller_of, retry_after_header


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


def test_a_burst_passes_then_the_caller_waits_for_the_refill(clock: Clock) -> None:
    limiter = RateLimiter(per_minute=30, burst=3, clock=clock)  # one request per 2 s
    assert [limiter.acquire("a") for _ in range(3)] == [0, 0, 0]
    assert limiter.acquire("a") == pytest.approx(2.0)

    clock.now += 0.5
    assert limiter.acquire("a") == pytest.approx(1.5)  # a refused request takes nothing

    clock.now += 1.5
    assert limiter.acquire("a") == 0
    assert limiter.acquire("a") == pytest.approx(2.0)


def test_an_idle_bucket_refills_only_up_to_the_burst(clock: Clock) -> None:
    limiter = RateLimiter(per_minute=60, burst=2, clock=clock)
    clock.now += 3600
    assert [limiter.acquire("a") for _ in range(2)] == [0, 0]
    assert limiter.acquire("a") > 0


def test_callers_have_their_own_buckets(clock: Clock) -> None:
    limiter = RateLimiter(per_minute=1, burst=1, clock=clock)
    assert limiter.acquire("key:aaaa") == 0
    assert limiter.acquire("key:aaaa") == pytest.approx(60.0)
    assert limiter.acquire("key:bbbb") == 0


def test_the_table_forgets_the_least_recently_seen_caller(clock: Clock) -> None:
    limiter = RateLimiter(per_minute=1, burst=1, max_callers=2, clock=clock)
    limiter.acquire("a")
    limiter.acquire("b")
    assert limiter.acquire("a") > 0  # "a" is now the most recently seen
    limiter.acquire("c")  # evicts "b"
    assert limiter.tracked_callers() == 2
    assert limiter.acquire("a") > 0, "a recently seen caller keeps its empty bucket"
    assert limiter.acquire("b") == 0, "a forgotten caller starts with a full bucket"
    assert limiter.tracked_callers() == 2


@pytest.mark.parametrize(("wait_s", "header"), [(0.01, "1"), (1.0, "1"), (1.2, "2"), (59.5, "60")])
def test_retry_after_is_rounded_up_to_whole_seconds(wait_s: float, header: str) -> None:
    assert retry_after_header(wait_s) == header


@pytest.mark.parametrize(
    ("per_minute", "burst", "max_callers"), [(0, 1, 1), (-1, 1, 1), (1, 0, 1), (1, 1, 0)]
)
def test_a_limiter_that_could_never_pass_is_refused(
    per_minute: float, burst: int, max_callers: int
) -> None:
    with pytest.raises(ValueError, match="rate limit"):
        RateLimiter(per_minute, burst, max_callers=max_callers)


def test_the_caller_is_the_key_else_the_client_address() -> None:
    assert caller_of({"state": {"caller": "key:1234abcd"}, "client": ("10.0.0.1", 5)}) == (
        "key:1234abcd"
    )
    assert caller_of({"state": {}, "client": ("10.0.0.1", 5)}) == "address:10.0.0.1"
    assert caller_of({"client": None}) == "address:unknown"
